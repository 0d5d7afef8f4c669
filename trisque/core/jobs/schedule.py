"""A periodic job's schedule (SCHEDULE ADD, docs/schedules.md): what it
adds, when, and the record every node keeps of it.

Ticks come from a cron expression read by ``cronsim`` (5 fields, or 6 with
seconds first), always in UTC: nodes in different time zones agree on every
tick.  A tick is named by its time in ms since the epoch, the same on every
node, so "tick T fired" means the same thing cluster-wide.

On the wire (bus SCHEDULE) and in the AOF (``SCHEDULE name STORE ...``) a
schedule is ``encode``'s bytes: fixed fields, then tagged entries (u8 tag,
u32 length) a reader skips if it does not know them, as policy.py does.
"""

import struct
from datetime import datetime, timedelta, timezone
from typing import Final

from cronsim import CronSim, CronSimError

from ...protocol.args import decimal
from ...protocol.errors import CommandError
from .policy import MAX_IDEMPOTENCY_BYTES, Policy, parse_option

UTC: Final = timezone.utc
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
MAX_NAME_BYTES: Final = 256
MAX_EXPR_BYTES: Final = 256
HOLDER_BYTES: Final = 100  # used_memory of a peer's mark on a tombstone (a dict slot)
# ADDJOB's options a schedule passes on to every job it adds, with how many
# values each takes (BACKOFF: 1 or 3, as policy.parse_option reads it); the others (ASYNC, IDEMPOTENCY, MAXLEN) are the
# schedule's own business: it always adds ASYNC with a key per tick.
JOB_OPTIONS: Final = {b"REPLICATE": 1, b"RETRY": 1, b"TTL": 1, b"DELAY": 1,
                      b"MAXDELIVERIES": 1, b"DEADLETTER": 1, b"BACKOFF": 3, b"PRIORITY": 1}

# flags u8 (DELETED), created ms u64, expr u16, queue u16, body u32, options u16
_FIXED = struct.Struct("<BQHHIH")
_OPTION = struct.Struct("<I")
_TAG = struct.Struct("<BI")
DELETED: Final = 1


def parse_expr(expr: bytes) -> None:
    """Raises CommandError with cronsim's reason if ``expr`` is not one."""
    try:
        text = expr.decode("ascii")
        CronSim(text, datetime.now(UTC))
    except (UnicodeDecodeError, CronSimError) as exc:
        reason = "not ASCII" if isinstance(exc, UnicodeDecodeError) else str(exc)
        raise CommandError(f"ERR invalid cron expression '{expr.decode('utf-8', 'replace')}'"
                           f": {reason}") from None


def _at(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)


def _ms(when: datetime) -> int:
    delta = when - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000


class Schedule:
    """One schedule as every node keeps it, with its last-writer-wins
    version (ms, origin node): the greater (version_ms, origin) wins
    wherever and in whatever order records meet, as QCONFIG's do.  A
    deleted schedule stays as a tombstone so an older ADD cannot return."""

    __slots__ = ("name", "expr", "queue", "body", "options", "created_ms", "deleted",
                 "version_ms", "origin", "fired_tick_ms", "fired_by", "fired_job",
                 "fired_ticks", "since_ms", "next_ms", "prev_ms", "held_by")
    name: bytes
    expr: bytes
    queue: bytes
    body: bytes
    options: list[bytes]  # ADDJOB options for its jobs (JOB_OPTIONS)
    created_ms: int  # when SCHEDULE ADD ran (the origin's clock: SHOW)
    # When this node learnt it (its own clock, not kept): it fires no tick
    # before, so a new schedule does not fire its latest past tick at once,
    # nor a restarted node the ticks it missed (Schedules.apply sets it).
    since_ms: int
    deleted: bool
    version_ms: int
    origin: str
    fired_tick_ms: int  # the latest tick a job was added for (0: none yet)
    fired_by: str  # the node that added it
    fired_job: bytes  # its ID
    # The latest few ticks known fired: a set, not just the latest, so that
    # a node whose clock ran ahead (a tick "from the future") does not make
    # the others skip the ticks before it.
    fired_ticks: list[int]
    next_ms: int  # cache: the first tick after prev_ms (0: to compute)
    prev_ms: int  # cache: the tick due when next_ms was computed
    # A tombstone's: the peers seen holding it (or newer) over their current
    # link, and when (node ms); not kept: after a restart they are asked again.
    held_by: dict[str, int]

    def __init__(self, name: bytes, expr: bytes, queue: bytes, body: bytes,
                 options: list[bytes], created_ms: int, version_ms: int, origin: str,
                 deleted: bool = False) -> None:
        self.name = name
        self.expr = expr
        self.queue = queue
        self.body = body
        self.options = options
        self.created_ms = created_ms
        self.deleted = deleted
        self.version_ms = version_ms
        self.origin = origin
        self.fired_tick_ms = 0
        self.fired_by = ""
        self.fired_job = b""
        self.fired_ticks = []
        self.since_ms = 0
        self.next_ms = 0
        self.prev_ms = 0
        self.held_by = {}

    def newer_than(self, other: "Schedule | None") -> bool:
        return other is None or (self.version_ms, self.origin) > (other.version_ms,
                                                                    other.origin)

    def memory(self) -> int:
        """Bytes it takes (used_memory): its strings and a fixed share for
        the object and its dict slot."""
        return (200 + len(self.name) + len(self.expr) + len(self.queue) + len(self.body)
                + sum(len(o) + 40 for o in self.options) + HOLDER_BYTES * len(self.held_by))

    def idempotency_key(self, tick_ms: int) -> bytes:
        """The key of the job for ``tick_ms``: a second add for the same
        tick on a node holding the first job answers the first job's ID."""
        return b"schedule:%s:%d" % (self.name, tick_ms)

    def due_tick(self, now_ms: int) -> int:
        """The latest tick at or before ``now_ms`` (0 if none), cached
        until the next one comes."""
        if self.next_ms and self.prev_ms <= now_ms < self.next_ms:
            return self.prev_ms
        expr = self.expr.decode("ascii")
        try:
            prev = _ms(next(CronSim(expr, _at(now_ms + 1), reverse=True)))
        except (StopIteration, CronSimError):
            prev = 0
        try:
            nxt = _ms(next(CronSim(expr, _at(now_ms))))
        except (StopIteration, CronSimError):
            nxt = now_ms + 86400_000  # (no tick ahead: look again in a day)
        self.prev_ms, self.next_ms = prev, nxt
        return prev

    def gap_ms(self) -> int:
        """From the due tick to the next: how long a tick's turn lasts."""
        return max(1, self.next_ms - self.prev_ms)

    def fields(self) -> dict[str, object]:
        """SCHEDULE SHOW's reply."""
        return {"name": self.name, "cron": self.expr, "queue": self.queue, "body": self.body,
                "options": b" ".join(self.options), "timezone": "UTC",
                "created": self.created_ms, "next-tick": self.next_ms,
                "last-tick": self.fired_tick_ms, "last-node": self.fired_by,
                "last-job": self.fired_job or None}


def parse_options(argv: list[bytes], start: int) -> list[bytes]:
    """SCHEDULE ADD's job options from ``argv[start:]``, checked by what
    ADDJOB would say of them, so a schedule never fails at every tick."""
    options: list[bytes] = []
    i = start
    replicate = retry = delay = -1
    ttl = 24 * 3600
    while i < len(argv):
        opt = argv[i].upper()
        arity = JOB_OPTIONS.get(opt)
        if arity is None:
            shown = argv[i].decode("utf-8", "replace")
            raise CommandError(f"ERR unsupported SCHEDULE option '{shown}'")
        if opt in (b"MAXDELIVERIES", b"DEADLETTER", b"BACKOFF", b"PRIORITY"):
            after = parse_option(Policy(), argv, i)  # (raises ADDJOB's error text)
            if after == i:
                raise CommandError("ERR syntax error")
            arity = after - i - 1
        elif i + arity >= len(argv):
            raise CommandError("ERR syntax error")
        else:
            value = decimal(argv[i + 1])
            if value < 0:
                raise CommandError(f"ERR {opt.decode()} must be a non negative integer")
            if opt == b"REPLICATE":
                if not 1 <= value <= 65535:
                    raise CommandError("ERR REPLICATE must be between 1 and 65535")
                replicate = value
            elif opt == b"RETRY":
                retry = value
            elif opt == b"TTL":
                if value < 1:
                    raise CommandError("ERR TTL must be a number > 0")
                ttl = value
            else:
                delay = value
        options.append(opt)
        options.extend(argv[i + 1:i + 1 + arity])
        i += 1 + arity
    if retry == 0 and replicate != 1:
        raise CommandError("ERR With RETRY set to 0 please explicitly set REPLICATE to 1")
    if delay >= ttl:
        raise CommandError("ERR The specified DELAY is greater than TTL")
    return options


def check_name(name: bytes) -> None:
    if not name or len(name) > MAX_NAME_BYTES or len(name) + 40 > MAX_IDEMPOTENCY_BYTES:
        raise CommandError(f"ERR schedule name must be 1 to {MAX_NAME_BYTES} bytes")


def encode(s: Schedule) -> bytes:
    parts = [_FIXED.pack(DELETED if s.deleted else 0, s.created_ms, len(s.expr),
                         len(s.queue), len(s.body), len(s.options)),
             s.expr, s.queue, s.body]
    for option in s.options:
        parts.append(_OPTION.pack(len(option)))
        parts.append(option)
    return b"".join(parts)


def decode(name: bytes, raw: bytes, version_ms: int, origin: str) -> Schedule:
    """ValueError if ``raw`` is not one schedule (or its expression is
    one this node's cronsim refuses: a newer node's syntax)."""
    if len(raw) < _FIXED.size:
        raise ValueError("truncated schedule")
    flags, created_ms, elen, qlen, blen, count = _FIXED.unpack_from(raw)
    pos = _FIXED.size
    if pos + elen + qlen + blen > len(raw):
        raise ValueError("bad schedule")
    expr = raw[pos:pos + elen]
    queue = raw[pos + elen:pos + elen + qlen]
    body = raw[pos + elen + qlen:pos + elen + qlen + blen]
    pos += elen + qlen + blen
    options = []
    for _ in range(count):
        if pos + _OPTION.size > len(raw):
            raise ValueError("bad schedule option")
        (length,) = _OPTION.unpack_from(raw, pos)
        pos += _OPTION.size
        if pos + length > len(raw):
            raise ValueError("bad schedule option")
        options.append(raw[pos:pos + length])
        pos += length
    while pos < len(raw):  # tagged entries of newer nodes: skipped
        if pos + _TAG.size > len(raw):
            raise ValueError("bad schedule tag")
        _tag, length = _TAG.unpack_from(raw, pos)
        pos += _TAG.size + length
    if pos != len(raw):
        raise ValueError("bad schedule tag")
    deleted = bool(flags & DELETED)
    if not deleted:
        try:
            CronSim(expr.decode("ascii"), _at(created_ms))
        except (UnicodeDecodeError, CronSimError) as exc:
            raise ValueError(f"bad cron expression: {exc}") from None
    return Schedule(name, expr, queue, body, options, created_ms, version_ms, origin, deleted)
