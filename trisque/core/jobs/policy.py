"""A job's delivery policy (docs/lifecycle.md): a delivery limit with a
dead-letter queue, and a backoff for requeues; and its history once dead.

Most jobs have none of this, and a plain job does not grow by a byte for
it.  A job whose policy only holds settings (a limit, a dead-letter queue,
a backoff, a level) shares one *interned* Policy (``shared``) with every
job of the same settings, through its ``Common`` (job.py): no object per
job.  An interned Policy is never changed; its ``serial`` is not 0.  A
policy with something of the job's own (an idempotency key, its history
once dead, a last error) is the job's alone, in its ``_rare`` dict.  A
queue's defaults (QCONFIG) are a Policy too, merged into each job created
in that queue: a job carries its policy to every node that holds a copy,
so no node needs another's QCONFIG to act on it.

On the wire and in the AOF a policy follows the job's record (jobcodec,
flag ``HAS_POLICY``): ``encode``/``decode`` here.  Fields added after the
first version (an idempotency key, a priority level) follow as tagged entries
(u8 tag, u16 length, value), written only when set, so a policy without
them encodes as before and a reader skips tags it does not know.
"""

import struct
from typing import Final

from ...protocol.args import decimal, to_int
from ...protocol.errors import CommandError

BACKOFF_NONE: Final = 0
BACKOFF_LINEAR: Final = 1
BACKOFF_EXPONENTIAL: Final = 2
BACKOFF_NAMES: Final = ("none", "linear", "exponential")

MAX_REASON_BYTES: Final = 1024  # NACK ... REASON: longer texts are cut here
MAX_DELIVERIES_MAX: Final = 65535
BACKOFF_MAX_S: Final = 7 * 24 * 3600  # a backoff's base and ceiling, at most a week

# max_deliveries u32, backoff kind u8, base ms u32, max ms u32, dead ms u64,
# then three u16-length strings: dead-letter queue, dead-from queue, last error
_FIXED = struct.Struct("<IBIIQHHH")
_TAG = struct.Struct("<BH")  # the tagged entries after them
TAG_IDEMPOTENCY: Final = 1  # the key given by ADDJOB ... IDEMPOTENCY
TAG_PRIORITY: Final = 2  # u8: the level given by PRIORITY (queue.py)
# Priority levels (docs/lifecycle.md): 1 to 9, 9 served first, as Faktory's;
# a job that says nothing is at 5, so producers can go above and below it.
MIN_PRIORITY: Final = 1
MAX_PRIORITY: Final = 9
DEFAULT_PRIORITY: Final = 5
MAX_IDEMPOTENCY_BYTES: Final = 1024


class Policy:
    """What a job (or a queue's default) says about its redeliveries."""

    __slots__ = ("max_deliveries", "dead_letter", "backoff", "base_ms", "max_ms",
                 "dead_from", "dead_ms", "last_error", "idempotency_key",
                 "priority", "serial", "raw")
    max_deliveries: int  # 0: no limit
    dead_letter: bytes  # where it goes past the limit (b"": <queue>:dead)
    backoff: int  # BACKOFF_*
    base_ms: int
    max_ms: int
    dead_from: bytes  # b"" while alive; once dead, the queue it died in
    dead_ms: int  # when it died (ms, the node's clock)
    last_error: bytes  # the last NACK ... REASON
    idempotency_key: bytes  # ADDJOB ... IDEMPOTENCY (b"": none; idempotency.py)
    priority: int  # PRIORITY level, 1-9 (0: not set, the default level)
    serial: int  # not 0: interned by shared(), never to be changed
    raw: bytes  # an interned policy's encode() (b"" for the others)

    def __init__(self, max_deliveries: int = 0, dead_letter: bytes = b"",
                 backoff: int = BACKOFF_NONE, base_ms: int = 0, max_ms: int = 0) -> None:
        self.max_deliveries = max_deliveries
        self.dead_letter = dead_letter
        self.backoff = backoff
        self.base_ms = base_ms
        self.max_ms = max_ms
        self.dead_from = b""
        self.dead_ms = 0
        self.last_error = b""
        self.idempotency_key = b""
        self.priority = 0
        self.serial = 0
        self.raw = b""

    def copy(self) -> "Policy":
        """A Policy of the same values to change (never interned)."""
        other = Policy(self.max_deliveries, self.dead_letter, self.backoff,
                       self.base_ms, self.max_ms)
        other.dead_from = self.dead_from
        other.dead_ms = self.dead_ms
        other.last_error = self.last_error
        other.idempotency_key = self.idempotency_key
        other.priority = self.priority
        return other

    def is_default(self) -> bool:
        """Nothing set: a job with this policy is a plain job."""
        return self.delivery_default() and not self.idempotency_key and not self.priority

    def delivery_default(self) -> bool:
        """No delivery setting (limit, dead letter, backoff, history): SHOW
        then leaves out their fields."""
        return (not self.max_deliveries and not self.dead_letter and not self.backoff
                and not self.dead_from and not self.last_error)

    def shareable(self) -> bool:
        """Only settings: nothing of one job's own (see shared)."""
        return (not self.idempotency_key and not self.dead_from and not self.dead_ms
                and not self.last_error)

    def level(self) -> int:
        """The priority level its jobs are queued at."""
        return self.priority or DEFAULT_PRIORITY

    def dead_letter_queue(self, queue: bytes) -> bytes:
        return self.dead_letter or queue + b":dead"

    def backoff_text(self) -> str:
        if not self.backoff:
            return "none"
        return f"{BACKOFF_NAMES[self.backoff]} {self.base_ms // 1000} {self.max_ms // 1000}"

    def backoff_ms(self, attempt: int, draw: float) -> int:
        """The wait before requeue number ``attempt`` (1, 2, ...): linear
        base * attempt or exponential base * 2^(attempt-1), at most max,
        then "equal jitter": a uniform draw in [wait/2, wait] (``draw`` in
        [0, 1)), so consumers that failed together do not return together."""
        if not self.backoff or attempt < 1:
            return 0
        if self.backoff == BACKOFF_LINEAR:
            wait = self.base_ms * attempt
        else:
            wait = self.base_ms << min(attempt - 1, 40)
        wait = min(wait, self.max_ms)
        return wait // 2 + int(draw * (wait - wait // 2))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Policy) and encode(self) == encode(other)

    def __repr__(self) -> str:
        return f"<Policy {self.fields()}>"

    def fields(self) -> dict[str, object]:
        """For QCONFIG GET and SHOW: the settings, by their option names."""
        fields: dict[str, object] = {"max-deliveries": self.max_deliveries,
                                     "dead-letter": self.dead_letter,
                                     "backoff": self.backoff_text()}
        if self.priority:
            fields["priority"] = self.priority
        return fields


# A QCONFIG entry's bytes, for used_memory: the entry, its version and
# origin, the dict's slot and the name's header (sys.getsizeof: 56 + 32 +
# 89 + 33, and the slot); a policy that sets anything adds its own.
QUEUE_POLICY_OVERHEAD: Final = 240
POLICY_OVERHEAD: Final = 150  # a Policy (112) and its strings' headers
# A job's own Policy (one with a last error, a key, its history once dead)
# beyond its strings' lengths: the Policy, a string's header and the job's
# ``_rare`` dict that holds it (tracemalloc: 344 bytes for a Policy with
# one string, made on a plain job).
OWN_POLICY_OVERHEAD: Final = 340


def own_memory(policy: Policy) -> int:
    """A job's own policy's bytes in used_memory (Job.memory): its strings
    all count, the key too, although the node's idempotency index (which
    counts it in its entry) may hold the same bytes: each holder counts
    what it keeps, as every job counts its queue's name."""
    return (OWN_POLICY_OVERHEAD + len(policy.dead_letter) + len(policy.dead_from)
            + len(policy.last_error) + len(policy.idempotency_key))


class QueuePolicy:
    """A queue's defaults (QCONFIG) as every node keeps them: the policy
    (nothing set: reset, kept so an older setting cannot come back) and
    its version, ms and the ID of the node that set it.  The greater
    (version_ms, origin) wins wherever and in whatever order they meet.
    A reset entry holds the shared ``NO_POLICY``: no Policy of its own."""

    __slots__ = ("policy", "version_ms", "origin")
    policy: Policy
    version_ms: int
    origin: str

    def __init__(self, policy: Policy, version_ms: int, origin: str) -> None:
        self.policy = NO_POLICY if policy.is_default() else policy
        self.version_ms = version_ms
        self.origin = origin

    def newer_than(self, other: "QueuePolicy | None") -> bool:
        return other is None or (self.version_ms, self.origin) > (other.version_ms,
                                                                    other.origin)

    def is_reset(self) -> bool:
        return self.policy is NO_POLICY

    def memory(self, name: bytes) -> int:
        """Its bytes in used_memory, kept under ``name``."""
        if self.policy is NO_POLICY:
            return QUEUE_POLICY_OVERHEAD + len(name)
        return (QUEUE_POLICY_OVERHEAD + POLICY_OVERHEAD + len(name)
                + len(self.policy.dead_letter))


# What every reset entry holds (never changed: QCONFIG SET and ADDJOB copy
# an entry's policy before they change it).
NO_POLICY: Final = Policy()


class _Interned:
    """The interned policies by their settings, and the last serial given."""

    __slots__ = ("policies", "serial", "last_base", "last_max_deliveries",
                 "last_priority", "last")
    policies: dict[tuple[int, bytes, int, int, int, int], Policy]
    serial: int
    # derived()'s last answer: consecutive ADDJOBs nearly always repeat it
    last_base: Policy | None
    last_max_deliveries: int
    last_priority: int
    last: Policy | None

    def __init__(self) -> None:
        self.policies = {}
        self.serial = 0
        self.last_base = None
        self.last_max_deliveries = -1
        self.last_priority = -1
        self.last = None


_INTERNED: Final = _Interned()
_INTERNED_MAX: Final = 4096  # (jobs keep theirs when the table is cleared)


def shared(max_deliveries: int, dead_letter: bytes, backoff: int, base_ms: int,
           max_ms: int, priority: int) -> Policy:
    """The interned Policy of these settings (priority: 0 for the default
    level), shared by all jobs that have them."""
    if priority == DEFAULT_PRIORITY:
        priority = 0
    key = (max_deliveries, dead_letter, backoff, base_ms, max_ms, priority)
    table = _INTERNED.policies
    found = table.get(key)
    if found is None:
        if len(table) >= _INTERNED_MAX:
            table.clear()
        found = Policy(max_deliveries, dead_letter, backoff, base_ms, max_ms)
        found.priority = priority
        found.raw = encode(found)
        _INTERNED.serial += 1
        found.serial = _INTERNED.serial
        table[key] = found
    return found


def share(policy: Policy) -> Policy:
    """The interned equal of ``policy`` if it only holds settings, else
    ``policy`` itself (a job's own)."""
    if policy.serial or not policy.shareable():
        return policy
    return shared(policy.max_deliveries, policy.dead_letter, policy.backoff,
                  policy.base_ms, policy.max_ms, policy.priority)


def derived(base: Policy | None, max_deliveries: int, priority: int) -> Policy | None:
    """A new job's policy from its queue's defaults ``base`` (None: none)
    and ADDJOB's MAXDELIVERIES and PRIORITY (0: not given), interned; None
    if that sets nothing (the job is plain)."""
    it = _INTERNED
    if (it.last_base is base and it.last_max_deliveries == max_deliveries
            and it.last_priority == priority):
        return it.last
    if base is None:
        result: Policy | None = None
        if max_deliveries or (priority and priority != DEFAULT_PRIORITY):
            result = shared(max_deliveries, b"", BACKOFF_NONE, 0, 0, priority)
    else:
        result = shared(max_deliveries or base.max_deliveries, base.dead_letter, base.backoff,
                        base.base_ms, base.max_ms, priority or base.priority)
        if result.is_default():
            result = None
    it.last_base, it.last_max_deliveries, it.last_priority = base, max_deliveries, priority
    it.last = result
    return result


def encode(policy: Policy) -> bytes:
    if policy.serial:
        return policy.raw
    dlq, dead_from, error = policy.dead_letter, policy.dead_from, policy.last_error
    key = policy.idempotency_key
    return b"".join((
        _FIXED.pack(policy.max_deliveries, policy.backoff, policy.base_ms, policy.max_ms,
                    policy.dead_ms, len(dlq), len(dead_from), len(error)),
        dlq, dead_from, error,
        _TAG.pack(TAG_IDEMPOTENCY, len(key)) + key if key else b"",
        _TAG.pack(TAG_PRIORITY, 1) + bytes((policy.priority,)) if policy.priority else b""))


def decode(raw: bytes) -> Policy:
    """ValueError if ``raw`` is not exactly one policy."""
    if len(raw) < _FIXED.size:
        raise ValueError("truncated job policy")
    (max_deliveries, backoff, base_ms, max_ms, dead_ms, dlen, flen,
     elen) = _FIXED.unpack_from(raw)
    start = _FIXED.size
    size = len(raw)
    if start + dlen + flen + elen > size or backoff > BACKOFF_EXPONENTIAL:
        raise ValueError("bad job policy")
    policy = Policy(max_deliveries, raw[start:start + dlen], backoff, base_ms, max_ms)
    start += dlen
    policy.dead_from = raw[start:start + flen]
    policy.last_error = raw[start + flen:start + flen + elen]
    policy.dead_ms = dead_ms
    start += flen + elen
    while start < size:
        if start + _TAG.size > size:
            raise ValueError("bad job policy")
        tag, length = _TAG.unpack_from(raw, start)
        start += _TAG.size
        if start + length > size:
            raise ValueError("bad job policy")
        if tag == TAG_IDEMPOTENCY:
            policy.idempotency_key = raw[start:start + length]
        elif tag == TAG_PRIORITY:
            if length != 1 or not MIN_PRIORITY <= raw[start] <= MAX_PRIORITY:
                raise ValueError("bad job priority")
            policy.priority = raw[start]
        start += length  # (a tag from a newer node: skipped)
    return policy


def decode_shared(raw: bytes) -> Policy:
    """decode(), interned when it only holds settings (a copy from a peer
    or the AOF costs no Policy of its own then)."""
    return share(decode(raw))


def decode_or_none(raw: bytes) -> Policy | None:
    """A policy from a peer, or None if it cannot be read (a newer node's
    field, a bad frame): the job then goes on as a plain job rather than
    the link dropping on it."""
    try:
        return share(decode(raw))
    except ValueError:
        return None


def _seconds(arg: bytes, low: int, what: str) -> int:
    value = decimal(arg)
    if value < 0:
        try:
            value = to_int(arg)
        except CommandError:
            value = -1
    if value < low or value > BACKOFF_MAX_S:
        raise CommandError(f"ERR BACKOFF {what} must be between {low} and {BACKOFF_MAX_S} seconds")
    return value


def parse_option(policy: Policy, argv: list[bytes], i: int) -> int:
    """If ``argv[i]`` is one of the policy's options (MAXDELIVERIES n,
    DEADLETTER queue, BACKOFF none|linear|exponential base max, PRIORITY
    n), set it in ``policy`` and return the index after it; else ``i``."""
    opt = argv[i].upper()
    left = len(argv) - i - 1
    if opt == b"PRIORITY" and left >= 1:
        value = decimal(argv[i + 1])
        if not MIN_PRIORITY <= value <= MAX_PRIORITY:
            raise CommandError(
                f"ERR PRIORITY must be between {MIN_PRIORITY} and {MAX_PRIORITY}")
        policy.priority = value
        return i + 2
    if opt == b"MAXDELIVERIES" and left >= 1:
        value = decimal(argv[i + 1])
        if not 0 <= value <= MAX_DELIVERIES_MAX:
            raise CommandError(f"ERR MAXDELIVERIES must be between 0 and {MAX_DELIVERIES_MAX}")
        policy.max_deliveries = value
        return i + 2
    if opt == b"DEADLETTER" and left >= 1:
        name = argv[i + 1]
        if not name or len(name) > 0xFFFF:
            raise CommandError("ERR DEADLETTER needs a queue name")
        policy.dead_letter = name
        return i + 2
    if opt == b"BACKOFF" and left >= 1:
        kind = argv[i + 1].lower()
        if kind == b"none":
            policy.backoff, policy.base_ms, policy.max_ms = BACKOFF_NONE, 0, 0
            return i + 2
        if kind not in (b"linear", b"exponential") or left < 3:
            raise CommandError("ERR BACKOFF takes linear|exponential base-sec max-sec, or none")
        base = _seconds(argv[i + 2], 1, "base")
        ceiling = _seconds(argv[i + 3], base, "max")
        policy.backoff = BACKOFF_LINEAR if kind == b"linear" else BACKOFF_EXPONENTIAL
        policy.base_ms, policy.max_ms = base * 1000, ceiling * 1000
        return i + 4
    return i
