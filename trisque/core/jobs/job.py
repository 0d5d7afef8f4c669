"""A job and its states.

States follow Disque: ``wait-repl`` while a synchronous ADDJOB waits for
copies, ``active`` when held but not queued (delivered, delayed, or a
replica), ``queued`` when in a local queue, ``acked`` while its ack is being
garbage-collected across the cluster.
"""

import struct
from typing import Any, Final

from mypy_extensions import i16, i32, mypyc_attr

from ...protocol import jobcodec

from .deadlines import Ordered
from . import policy as policy_codec
from .policy import DEFAULT_PRIORITY, Policy


WAIT_REPL: Final = 0
ACTIVE: Final = 1
QUEUED: Final = 2
ACKED: Final = 3
STATE_NAMES = ("wait-repl", "active", "queued", "acked")
STATE_BY_NAME = {name.encode(): n for n, name in enumerate(STATE_NAMES)}

# flags
BCAST_QUEUED: Final = 1  # enqueued before: the next enqueue tells the other holders
BCAST_WILLQUEUE: Final = 2  # announce WILLQUEUE shortly before requeueing
DELIVERED: Final = 4  # given to a consumer at least once (RETRY 0: never again)
DUMMY_ACK: Final = 8  # an ack for a job this node never held
# A requeue postponed (NACK ... DELAY, a backoff): when its timer fires the
# job is queued without waiting again, counted as a NACK if NACK_DUE.
REQUEUE_DUE: Final = 16
NACK_DUE: Final = 32
# (64 is jobcodec.HAS_POLICY, on the wire only)

# Bytes one job costs beyond its body and queue name, set from the RSS
# growth per queued job (python -m bench memory) so that used_memory tracks
# RSS for maxmemory.  (Final, as the states and flags: compiled modules
# then read a constant instead of looking the name up in a dict.)
JOB_OVERHEAD: Final = 280


CTIME_EPOCH: Final = 1577836800000 * 1000000  # 2020-01-01, in ctime units
CTIME_EPOCH_MS: Final = 1577836800000  # the same, in ms (ctime // 1_000_000 of it)


def _set_rare(job: "Job", name: str, value: Any, default: Any) -> None:
    """A field most jobs never set (NACK and delivery counters, replication
    and GC bookkeeping) is kept in the job's ``_rare`` dict, made on the
    first write of a non-default value.  A queued job then pays no slot for
    it (bench/README.md, "Job memory")."""
    rare = job._rare
    if rare is None:
        if value is default or value == default:
            return
        rare = job._rare = {}
    rare[name] = value


class Common:
    """What a job shares with many others, in one object: its queue's name,
    the nodes that may hold a copy, RETRY, and its delivery policy when
    that only holds settings (policy.py's interned policies: ``policy``
    None for a plain job or one whose policy is its own, in ``_rare``) and
    the priority level it is queued at.  A job points here instead of
    holding these: two slots fewer, which puts a compiled Job in a
    smaller pymalloc size class (bench/README.md, "Memory per job"), and a
    job with MAXDELIVERIES or PRIORITY costs no object of its own.  Never
    changed once made (a job's holders or policy change by pointing it at
    another).  ``next_nodes``/``next``: the holders last given to a job of
    this one and the Common that has them, so that ADDJOB's holders, set on
    every new job, are found without a lookup; ``with_policy``: the same
    for the policy last given.  ``names``: the bytes of the names a job
    of this one counts in used_memory (Job.memory): its queue's, and its
    interned policy's dead-letter queue (the interned Policy itself, one
    per distinct set of settings and not per job, is not counted, as a
    Common is not)."""

    __slots__ = ("queue", "nodes_delivered", "retry_s", "policy", "level", "names",
                 "next_nodes", "next", "with_policy", "wire", "reply_head")
    queue: bytes
    nodes_delivered: tuple[str, ...]
    retry_s: int
    policy: Policy | None
    level: int  # priority level (policy.py): 1-9
    names: int
    next_nodes: tuple[str, ...] | None
    next: "Common"
    with_policy: "Common"
    wire: "_Wire | None"  # its part of a job record, made at the first serialize
    reply_head: bytes | None  # GETJOB's reply of a job up to its ID (job_reply.py)

    def __init__(self, queue: bytes, nodes_delivered: tuple[str, ...], retry_s: int,
                 policy: Policy | None = None, level: int = DEFAULT_PRIORITY) -> None:
        self.queue = queue
        self.nodes_delivered = nodes_delivered
        self.retry_s = retry_s
        self.policy = policy
        self.level = level
        self.names = len(queue) if policy is None else len(queue) + len(policy.dead_letter)
        self.next_nodes = None
        self.next = self  # (GC-tracked: these links may form cycles)
        self.with_policy = self
        self.wire = None
        self.reply_head = None


_commons: dict[tuple[bytes, tuple[str, ...], int, int, int], Common] = {}


def common(queue: bytes, nodes_delivered: tuple[str, ...], retry_s: int,
           policy: Policy | None = None, level: int = DEFAULT_PRIORITY) -> Common:
    """The shared Common for these values (a few per queue)."""
    key = (queue, nodes_delivered, retry_s, 0 if policy is None else policy.serial, level)
    found = _commons.get(key)
    if found is None:
        if len(_commons) >= 4096:  # (jobs keep theirs; new ones are made again)
            _commons.clear()
        found = _commons[key] = Common(queue, nodes_delivered, retry_s, policy, level)
    return found


class _LastMade:
    """The Common of the job made last: the next is usually alike."""

    __slots__ = ("common",)
    common: Common

    def __init__(self) -> None:
        self.common = Common(b"", (), -1)


_LAST: Final = _LastMade()


# acyclic (see deadlines.Scheduled): a job's attributes hold bytes, ints, a
# Common, and the ``_rare`` dict; the one object there that
# points back at the job (the ADDJOB waiter) is dropped once replication
# ends, so no cycle through a job outlives it.
@mypyc_attr(acyclic=True)
class Job(Ordered):
    # (wake_ms and _ctime: Ordered's slots)
    __slots__ = (
        "id", "_common", "body", "state", "flags", "repl",
        "etime_ms", "qtime_ms", "_rare",
    )
    id: bytes
    _common: Common  # queue, nodes_delivered, retry_s
    body: bytes
    # Small native ints (compiled: 2 + 2 + 4 bytes instead of three 8-byte
    # slots): state 0-3, flags a few bits (negative masks fit), repl up to
    # 65535 (ADDJOB's bound and the codec's u16).
    state: i16
    flags: i16
    repl: i32
    etime_ms: int
    qtime_ms: int
    _rare: dict[str, Any] | None

    @property
    def queue(self) -> bytes:  # queue name
        return self._common.queue

    @property
    def retry_s(self) -> int:
        return self._common.retry_s

    @property
    def nodes_delivered(self) -> tuple[str, ...]:  # node IDs that may hold a copy
        return self._common.nodes_delivered

    @nodes_delivered.setter
    def nodes_delivered(self, nodes: tuple[str, ...]) -> None:
        shared = self._common
        if shared.next_nodes is not nodes:
            if nodes == shared.nodes_delivered:
                return
            shared.next_nodes = nodes
            shared.next = common(shared.queue, nodes, shared.retry_s, shared.policy,
                                 shared.level)
        self._common = shared.next

    def move_to_queue(self, queue: bytes) -> None:
        """The job now belongs to ``queue`` (dead-lettered, or revived)."""
        shared = self._common
        self._common = common(queue, shared.nodes_delivered, shared.retry_s, shared.policy,
                              shared.level)

    # ctime is ms * 1e6 (plus a counter): 61 bits today, a 48-byte int.
    # Kept relative to 2020 it fits in 60 bits, a 32-byte int (until 2056).
    @property
    def ctime(self) -> int:
        return self._ctime + CTIME_EPOCH

    @ctime.setter
    def ctime(self, value: int) -> None:
        self._ctime = value - CTIME_EPOCH

    # Rare fields, in ``_rare`` (see _set_rare)
    @property
    def delay_s(self) -> int:  # ADDJOB's DELAY (most jobs have none)
        rare = self._rare
        return 0 if rare is None else rare.get("delay_s", 0)

    @delay_s.setter
    def delay_s(self, value: int) -> None:
        _set_rare(self, "delay_s", value, 0)

    @property
    def nacks(self) -> int:
        rare = self._rare
        return 0 if rare is None else rare.get("nacks", 0)

    @nacks.setter
    def nacks(self, value: int) -> None:
        _set_rare(self, "nacks", value, 0)

    @property
    def deliveries(self) -> int:  # additional deliveries (requeues not from NACK)
        rare = self._rare
        return 0 if rare is None else rare.get("deliveries", 0)

    @deliveries.setter
    def deliveries(self, value: int) -> None:
        _set_rare(self, "deliveries", value, 0)

    @property
    def nodes_confirmed(self) -> Any:  # node IDs that confirmed (replication/GC)
        rare = self._rare
        return None if rare is None else rare.get("nodes_confirmed")

    @nodes_confirmed.setter
    def nodes_confirmed(self, value: Any) -> None:
        _set_rare(self, "nodes_confirmed", value, None)

    @property
    def gc_retry(self) -> int:
        rare = self._rare
        return 0 if rare is None else rare.get("gc_retry", 0)

    @gc_retry.setter
    def gc_retry(self, value: int) -> None:
        _set_rare(self, "gc_retry", value, 0)

    @property
    def policy(self) -> Any:  # a policy.Policy (delivery limit, backoff), or None
        rare = self._rare
        if rare is not None:
            own = rare.get("policy")
            if own is not None:
                return own
        return self._common.policy

    @policy.setter
    def policy(self, value: Any) -> None:
        """An interned policy (policy.shared) is kept in the job's Common;
        any other is the job's own, in ``_rare``, read afresh each time."""
        rare = self._rare
        if rare is not None and "policy" in rare:
            del rare["policy"]
            if not rare:
                self._rare = None
        shared: Policy | None = None
        level = DEFAULT_PRIORITY
        given: Policy | None = value  # (typed: its fields read natively compiled)
        if given is not None:
            if given.serial:
                shared = given
                level = given.level()
            else:
                _set_rare(self, "policy", given, None)
        here = self._common
        if here.policy is shared and here.level == level:
            return
        there = here.with_policy
        if there.policy is not shared or there.level != level:
            there = here.with_policy = common(here.queue, here.nodes_delivered, here.retry_s,
                                              shared, level)
        self._common = there

    @property
    def waiter(self) -> Any:  # the client blocked in ADDJOB until replicated
        rare = self._rare
        return None if rare is None else rare.get("waiter")

    @waiter.setter
    def waiter(self, value: Any) -> None:
        _set_rare(self, "waiter", value, None)

    def start_rare(self, fields: dict[str, Any]) -> bool:
        """A job with no rare field set takes ``fields`` (none at its
        default) as its rare fields, in one step: the setters would be a
        call and an insert each.  False, nothing set, if it has some."""
        if self._rare is not None:
            return False
        self._rare = fields
        return True

    def clear_rare(self) -> None:
        """Every rare field back at its default (the caller has read the
        ones it needed): a plain job again, in one step."""
        self._rare = None

    def __init__(self, job_id: bytes, queue: bytes, body: bytes, state: int, repl: int,
                 ctime: int, etime_ms: int, delay_s: int, retry_s: int) -> None:
        self.id = job_id  # 40 bytes, see protocol.jobid
        last = _LAST.common
        if (last.retry_s != retry_s or last.nodes_delivered
                or not (last.queue is queue or last.queue == queue)):
            last = _LAST.common = common(queue, (), retry_s)
        self._common = last  # queue, no holders yet, retry_s
        self.body = body
        self.state = state
        self.flags = 0
        self.repl = repl
        self._ctime = ctime - CTIME_EPOCH  # ctime: ms * 1e6, strictly increasing per node: FIFO order
        self.etime_ms = etime_ms  # expires (TTL) at
        self.qtime_ms = 0  # next (re)queue time; 0 = never requeue
        self.wake_ms = None  # key in Deadlines while scheduled
        # delay_s, nacks, deliveries, nodes_confirmed, gc_retry, waiter
        self._rare = None if not delay_s else {"delay_s": delay_s}

    def memory(self) -> int:
        """Its bytes in used_memory.  A registered job's policy changes
        through Node.set_policy, which counts the difference."""
        size = JOB_OVERHEAD + len(self.body) + self._common.names
        rare = self._rare
        if rare is not None:  # (a plain job: this one test)
            own = rare.get("policy")
            if own is not None:
                size += policy_codec.own_memory(own)
        return size

    def held_only_by(self, node_id: str) -> bool:
        """Only ``node_id`` may hold a copy and no ack confirmation is under
        way: once acked, the job's garbage collection is over at once."""
        holders = self._common.nodes_delivered
        return (len(holders) == 1 and holders[0] == node_id
                and (self._rare is None or self.nodes_confirmed is None))

    def __repr__(self) -> str:
        return f"<Job {self.id.decode()} {STATE_NAMES[self.state]} q={self.queue!r}>"


_NOT_DUMMY: Final = ~DUMMY_ACK  # a dummy ack's flag stays here
# jobcodec's fixed part (jobcodec._FIXED) up to the body's length, with
# its four u32 fields before the queue's length (delay, retry, NACKs,
# deliveries, queue length) as one 20-byte field: the Common's.
# ctime goes as two u32 halves (the same 8 bytes, little endian): a u64
# field converts its 61-bit int through _PyLong_AsByteArray (~170
# instructions), a u32 field through a short loop on the int's digits.
_HEAD: Final = struct.Struct("<40sBBHIIq20sI")
_pack_head: Final = _HEAD.pack
_pack_middle: Final = struct.Struct("<IIIII").pack
_pack_nnodes: Final = struct.Struct("<H").pack
assert _HEAD.size + 2 == jobcodec._FIXED.size


class _Wire:
    """What the records of a Common's jobs share, packed once: the fixed
    part's middle for a job with no delay, NACK or delivery count, the
    holders' count and queue name, the holders' IDs (alone, for a job with
    a policy of its own, and with the Common's policy suffix), and the flag
    saying it has one."""

    __slots__ = ("middle", "head", "ids", "tail", "flags")
    middle: bytes
    head: bytes
    ids: bytes
    tail: bytes
    flags: int

    def __init__(self, shared: Common) -> None:
        queue = shared.queue
        held: tuple[Any, ...] = shared.nodes_delivered  # (bytes IDs too: the codec takes both)
        self.middle = _pack_middle(0, shared.retry_s, 0, 0, len(queue))
        self.head = _pack_nnodes(len(held)) + queue
        self.ids = b"".join(n.encode() if n.__class__ is str else n for n in held)
        self.tail = self.ids
        self.flags = 0
        if shared.policy is not None:
            self.flags = jobcodec.HAS_POLICY
            self.tail += jobcodec.policy_suffix(policy_codec.encode(shared.policy))


def serialize(job: Job, etime_ms: int) -> bytes:
    """The job as bytes (protocol.jobcodec's layout; a test checks this
    against jobcodec.encode), with the given expiry field.  Every REPLJOB,
    YOURJOBS and LOADJOB record is built here, in one step: what jobs of
    one Common share packed once for all of them (_Wire), the job's slots
    read rather than its properties (a Python call each)."""
    shared = job._common
    wire = shared.wire
    if wire is None:
        wire = shared.wire = _Wire(shared)
    body = job.body
    rare = job._rare
    flags = (job.flags & _NOT_DUMMY) | wire.flags
    middle = wire.middle
    tail = wire.tail
    if rare is not None:
        delay_s = rare.get("delay_s", 0)
        nacks = rare.get("nacks", 0)
        deliveries = rare.get("deliveries", 0)
        if delay_s or nacks or deliveries:
            middle = _pack_middle(delay_s, shared.retry_s, nacks, deliveries,
                                  len(shared.queue))
        own = rare.get("policy")
        if own is not None:  # (its own policy, not the Common's)
            flags |= jobcodec.HAS_POLICY
            tail = wire.ids + jobcodec.policy_suffix(policy_codec.encode(own))
    ctime = job._ctime + CTIME_EPOCH
    head = _pack_head(job.id, job.state, flags, job.repl, ctime & 0xFFFFFFFF, ctime >> 32,
                      etime_ms, middle, len(body))
    # (bytes formatting of bytes alone: compiled, one native build of the
    # four parts, where b"".join took a tuple and a method call, ~350 more)
    return b"%s%s%s%s" % (head, wire.head, body, tail)


def deserialize(data: bytes, offset: int = 0) -> tuple[Job, int]:
    """(Job, offset after it) from bytes; etime_ms is as stored."""
    fields, offset = jobcodec.decode(data, offset)
    (job_id, state, flags, repl, ctime, etime_ms, delay_s, retry_s, nacks,
     deliveries, queue, body, nodes, policy) = fields
    job = Job(job_id, queue, body, state, repl, ctime, etime_ms, delay_s, retry_s)
    job.flags = flags
    job.nacks = nacks
    job.deliveries = deliveries
    job.nodes_delivered = nodes
    if policy:
        job.policy = policy_codec.decode_shared(policy)
    return job, offset
