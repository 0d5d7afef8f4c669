"""The cluster bus wire format: versioned, length-checked frames.

Every frame is a fixed header followed by a payload whose layout depends on
the message type:

    magic "TQB" | version u8 | total length u32 | type u16 | mflags u8 |
    sender flags u8 | sender id 40s | client port u16 | bus port u16 |
    payload

Payloads (all integers little endian):

    gossip     PING, PONG, MEET: u16 count, then per node:
               id 40s, flags u16, port u16, bus port u16, pong age s u32,
               ip length u8, ip
    node       FAIL: id 40s
    jobs       REPLJOB, YOURJOBS: u32 count, then job records (jobcodec)
    jobids     GOTJOB, ENQUEUE, QUEUED, SETACK, WILLQUEUE, GOTACK, DELJOB,
               WORKING, DEADJOB, REVIVE, WAITJOB, JOBSTATE: u32 count, then
               per job: id 40s, aux u32
    queue      NEEDJOBS, PAUSE: aux u32, name length u32, name
    publish    PUBLISH: channel length u32, channel, message (the rest);
               mflags SHARD for SPUBLISH
    qpolicy    QPOLICY: version ms u64, origin id 40s, name length u32,
               name, the policy (core/jobs/policy.py) to the end
    schedule   SCHEDULE: as QPOLICY, the schedule (core/jobs/schedule.py)
               to the end; mflags ECHO: the answer to a deletion's record
    fired      SCHEDFIRED: tick ms u64, firer id 40s, job id 40s, name
               length u32, name
    error      LASTERROR: job id 40s, the job's last error (NACK ... REASON)
               to the end

SCHEDULE and SCHEDFIRED (periodic jobs, docs/schedules.md) go only to
peers whose frames carry F_SCHEDULES: a node from before them has no
schedules and is sent none (it ignores the flag and the types anyway).

DEADJOB, REVIVE and QPOLICY (delivery policies, docs/lifecycle.md) and a
job record's policy go only to peers whose frames carry F_POLICIES: a node
from before them ignores those types (or, before PUBLISH, drops the link),
and cannot read a job record that carries a policy.  WAITJOB and JOBSTATE
go only to peers whose frames carry F_WAITJOB (cluster/waitjob.py).
LASTERROR goes with DEADJOB (to the same peers: the header's flags byte
has no bit left for a flag of its own); a node from before it ignores the
type, as any node since PUBLISH does an unknown one, and its dead copy
has no last error.

A frame that is short, long, of an unknown version, or whose payload does
not add up to its length raises BusError; the link that sent it is
dropped.  A frame of a type this node does not know (a newer node's)
decodes to a Message with no body, which the cluster ignores.  Nodes
before PUBLISH existed dropped the link on an unknown type instead: a node
sends PUBLISH only to peers whose frames carry the F_PUBSUB sender flag
(older nodes ignore sender flags they do not know).

With a cluster secret, a link carries *sealed* frames instead (see
"Authenticated links" at the end): each side first sends a hello with a
fresh random nonce, then envelopes of whole frames, each tagged with
HMAC-SHA256 over the receiver's nonce, a per-direction sequence number and
the frames.
"""

import hashlib
import hmac
import ipaddress
import struct
from collections.abc import Sequence
from typing import Any, Final

from mypy_extensions import i64

from . import jobcodec
from .native import u16, u32

MAGIC: Final = b"TQB"
VERSION: Final = 1
MAX_FRAME: Final = 64 * 1024 * 1024  # a frame larger than this is refused

HEADER: Final = struct.Struct("<3sBIHBB40sHH")
HEADER_SIZE: Final = 56  # HEADER.size
# The magic's bytes (decode and frame_len read the header byte by byte),
# and the magic and version read as one u32 (frame_length)
_M0: Final = 0x54  # MAGIC[0]
_M1: Final = 0x51
_M2: Final = 0x42
_MAGIC_VERSION: Final = int.from_bytes(MAGIC + bytes([VERSION]), "little")
_MAGIC_LENGTH_FROM: Final = struct.Struct("<II").unpack_from  # a frame's first 8 bytes
_COUNTED: Final = struct.Struct("<3sBIHBB40sHHI")  # a header and a payload's u32 count
_COUNTED_PACK: Final = _COUNTED.pack  # (bound once: no method lookup per frame)
TYPE_OFFSET: Final = 8  # of the message type in a frame (its low byte: types < 256)
_MAGIC_VERSION_BYTES: Final = MAGIC + bytes([VERSION])  # a frame's first 4 bytes
_MIDDLE_FROM: Final = 8  # the header after the magic, version and length
NODE_ID_LEN: Final = 40
JOB_ID_LEN: Final = 40

# message types (Final: constants to the compiled modules that use them)
PING: Final = 0
PONG: Final = 1
MEET: Final = 2
FAIL: Final = 3
REPLJOB: Final = 4
GOTJOB: Final = 5
ENQUEUE: Final = 6
QUEUED: Final = 7
SETACK: Final = 8
WILLQUEUE: Final = 9
GOTACK: Final = 10
DELJOB: Final = 11
NEEDJOBS: Final = 12
YOURJOBS: Final = 13
WORKING: Final = 14
PAUSE: Final = 15
PUBLISH: Final = 16
DEADJOB: Final = 17  # the job reached its delivery limit: to its dead-letter queue
REVIVE: Final = 18  # the dead job is back in its queue
QPOLICY: Final = 19  # a queue's delivery policy (QCONFIG), last writer wins
WAITJOB: Final = 20  # a client waits on the job: tell me its state (aux 1), or no more (0)
JOBSTATE: Final = 21  # the job's state here (aux: job.py's states, 4: no copy here)
SCHEDULE: Final = 22  # a periodic job's schedule (SCHEDULE ADD/DEL), last writer wins
SCHEDFIRED: Final = 23  # a schedule's tick was fired: by whom, which job
LASTERROR: Final = 24  # a dead-lettered job's last error (NACK ... REASON), with DEADJOB
NAMES: Final = ("PING", "PONG", "MEET", "FAIL", "REPLJOB", "GOTJOB", "ENQUEUE",
         "QUEUED", "SETACK", "WILLQUEUE", "GOTACK", "DELJOB", "NEEDJOBS",
         "YOURJOBS", "WORKING", "PAUSE", "PUBLISH", "DEADJOB", "REVIVE", "QPOLICY",
         "WAITJOB", "JOBSTATE", "SCHEDULE", "SCHEDFIRED", "LASTERROR")
POLICY_TYPES: Final = (DEADJOB, REVIVE, QPOLICY)  # only to peers with F_POLICIES

GOSSIP_TYPES: Final = (PING, PONG, MEET)
JOBS_TYPES: Final = (REPLJOB, YOURJOBS)
JOBID_TYPES: Final = (GOTJOB, ENQUEUE, QUEUED, SETACK, WILLQUEUE, GOTACK, DELJOB, WORKING,
               DEADJOB, REVIVE, WAITJOB, JOBSTATE)
QUEUE_TYPES: Final = (NEEDJOBS, PAUSE)
TYPE_COUNT: Final = 25  # len(NAMES): a type from this on is a newer node's
# Each type's payload layout, by type, for decode (a byte read where a
# tuple was searched): job records, job IDs, or another (_decode_body).
_OTHER_KIND: Final = 0
_JOBS_KIND: Final = 1
_JOBID_KIND: Final = 2
_KINDS: Final = bytes([_JOBS_KIND if t in JOBS_TYPES else _JOBID_KIND if t in JOBID_TYPES
                       else _OTHER_KIND for t in range(TYPE_COUNT)])

# mflags
NOREPLY: Final = 1  # REPLJOB: do not answer GOTJOB (ASYNC)
INCR_NACKS: Final = 2  # QUEUED: the requeue was a NACK
INCR_DELIV: Final = 4  # QUEUED: the requeue was an additional delivery
SHARD: Final = 1  # PUBLISH: an SPUBLISH
ECHO: Final = 1  # SCHEDULE: an answer to a deletion record (it gets none back)

# sender flags (also gossip entry flags)
F_LEAVING: Final = 1
F_PFAIL: Final = 2
F_FAIL: Final = 4
F_NOADDR: Final = 8
F_PUBSUB: Final = 16  # sender only: it reads PUBLISH frames (and ignores unknown types)
F_POLICIES: Final = 32  # header only: the sender knows delivery policies
F_WAITJOB: Final = 64  # header only: the sender answers WAITJOB (cluster/waitjob.py)
F_SCHEDULES: Final = 128  # header only: the sender knows schedules (periodic jobs)

_GOSSIP: Final = struct.Struct("<40sHHHIB")
_JOBID: Final = struct.Struct("<40sI")
JOBID_ITEM_LEN: Final = 44  # _JOBID's size: a job-ID item on the wire
_QUEUE: Final = struct.Struct("<II")
_QPOLICY: Final = struct.Struct("<Q40sI")
_FIRED: Final = struct.Struct("<Q40s40sI")
_U16: Final = struct.Struct("<H")
_U32: Final = struct.Struct("<I")
_NO_AUX: Final = b"\0\0\0\0"  # a job-ID item's aux of 0, as _JOBID packs it
_AUX_CACHED: Final = 256  # the aux values whose bytes are made once (holder counts, flags)
_AUX_BYTES: Final = tuple([_U32.pack(aux) for aux in range(_AUX_CACHED)])
ONE_ITEM_FRAME_LEN: Final = 104  # a job-ID frame of one item: header, count, ID, aux


class BusError(Exception):
    pass


class FrameTooBig(BusError):
    """A frame (or envelope) over the receiver's cluster-bus-max-frame."""


class AuthError(BusError):
    """A frame that is not authenticated with our cluster secret: no hello,
    a plain frame, a bad tag, or a replayed or reordered envelope."""


class Message:
    """A decoded frame.  ``body`` depends on the type: a list of gossip
    tuples, a node id, a list of job field tuples (protocol.jobcodec), a
    list of (job id, aux) or (aux, queue name)."""

    __slots__ = ("type", "mflags", "sender", "sender_flags", "port",
                 "bus_port", "body")
    type: int
    mflags: int
    sender: str
    sender_flags: int
    port: int
    bus_port: int
    body: Any  # by type, as above

    def __init__(self, type_: int, mflags: int, sender: str, sender_flags: int, port: int,
                 bus_port: int, body: Any) -> None:
        self.type = type_
        self.mflags = mflags
        self.sender = sender
        self.sender_flags = sender_flags
        self.port = port
        self.bus_port = bus_port
        self.body = body

    def __repr__(self) -> str:
        name = NAMES[self.type] if self.type < len(NAMES) else f"type {self.type}"
        return f"<{name} from {self.sender[:8]} {self.body!r:.80}>"


_ONE_ITEM_KEYS: Final = 256  # Header.one_item_heads' size: 32 types x 8 mflags
# jobs() keeps its last lone-record frame when the record is this small.
LAST_FRAME_KEPT_BYTES: Final = 64 * 1024


class Header:
    """What every frame from this node carries about its sender.  Not
    changed once made (membership.header() makes a new one): it keeps the
    header bytes of one-item job-ID frames it has made."""

    __slots__ = ("node_id", "port", "bus_port", "flags", "one_item_heads", "middles",
                 "last_record", "last_key", "last_frame", "lone_head", "lone_len", "lone_key")
    node_id: bytes
    port: int
    bus_port: int
    flags: int
    # by type | mflags << 5 (types below 32, mflags below 8): a one-item
    # frame's header and count, b"" until made (a list: no int boxed and
    # hashed a frame, as a dict's key was)
    one_item_heads: list[bytes]
    middles: dict[int, bytes]  # by type | mflags << 16: the header from its type on
    # jobs()'s last lone-record frame, for the same record object again
    last_record: bytes | None
    last_key: int  # its type | mflags << 16
    last_frame: bytes
    # jobs()'s last lone-record frame head (header and count): most jobs of
    # a workload are of one size, so their frames share it
    lone_head: bytes
    lone_len: int  # its frame length
    lone_key: int  # its type | mflags << 16

    def __init__(self, node_id: str | bytes, port: int, bus_port: int, flags: int = 0) -> None:
        self.node_id = node_id.encode() if isinstance(node_id, str) else node_id
        self.port = port
        self.bus_port = bus_port
        self.flags = flags
        self.one_item_heads = [b""] * _ONE_ITEM_KEYS
        self.middles = {}
        self.last_record = None
        self.last_key = -1
        self.last_frame = b""
        self.lone_head = b""
        self.lone_len = -1
        self.lone_key = -1


def _frame(header: Header, type_: int, payload: bytes, mflags: int = 0) -> bytes:
    return HEADER.pack(MAGIC, VERSION, HEADER_SIZE + len(payload), type_, mflags,
                       header.flags, header.node_id, header.port,
                       header.bus_port) + payload


GossipEntry = tuple[str, int, str, int, int, int]


def gossip(header: Header, type_: int, entries: Sequence[GossipEntry]) -> bytes:
    """entries: (id str, flags, ip str, port, bus_port, pong_age_s)."""
    parts = [_U16.pack(len(entries))]
    for node_id, flags, ip, port, bus_port, pong_age_s in entries:
        ip_bytes = ip.encode()
        parts.append(_GOSSIP.pack(node_id.encode(), flags, port, bus_port,
                                  min(max(pong_age_s, 0), 0xFFFFFFFF), len(ip_bytes)))
        parts.append(ip_bytes)
    return _frame(header, type_, b"".join(parts))


def fail(header: Header, node_id: str) -> bytes:
    return _frame(header, FAIL, node_id.encode())


def _middle(header: Header, type_: int, mflags: int) -> bytes:
    """The header's bytes from the type to the bus port: packed once per
    type and mflags (compiled, a pack of the ten fields boxed each and went
    through the generic call, ~1.8k a frame)."""
    key = type_ | mflags << 16
    middle = header.middles.get(key)
    if middle is None:
        middle = _COUNTED_PACK(MAGIC, VERSION, 0, type_, mflags, header.flags, header.node_id,
                               header.port, header.bus_port, 0)[_MIDDLE_FROM:HEADER_SIZE]
        header.middles[key] = middle
    return middle


def _counted(header: Header, type_: int, count: int, size: int, mflags: int) -> bytes:
    """The header of a frame whose payload is a u32 ``count`` and ``size``
    bytes more, with the count: what jobs() and jobids() put in front."""
    return b"%s%s%s%s" % (_MAGIC_VERSION_BYTES, (HEADER_SIZE + 4 + size).to_bytes(4, "little"),
                          _middle(header, type_, mflags),
                          _AUX_BYTES[count] if count < _AUX_CACHED else count.to_bytes(4, "little"))


def jobs(header: Header, type_: int, records: list[bytes], mflags: int = 0,
         size: int = -1) -> bytes:
    """records: serialized jobs (protocol.jobcodec); ``size``: their bytes,
    if the caller counted them.  The records are copied once, behind the
    header (a frame of a pipelined turn is ~15 KB: joining them, then
    adding the count and the header, copied them three times)."""
    if len(records) == 1:
        # A lone record to each new holder (Outbox.send_to_all appends the
        # one object to every peer's batch): the frame made for the first
        # peer is the next ones' too, the same bytes, made once per job on
        # the origin's critical path (bench/README.md, "A replicated job's
        # critical path").  Kept only while small: no large job held.
        record = records[0]
        key = type_ | mflags << 16
        if record is header.last_record and key == header.last_key:
            return header.last_frame
        length = HEADER_SIZE + 4 + len(record)
        if length != header.lone_len or key != header.lone_key:
            header.lone_head = b"%s%s%s%s" % (_MAGIC_VERSION_BYTES, length.to_bytes(4, "little"),
                                              _middle(header, type_, mflags), _AUX_BYTES[1])
            header.lone_len = length
            header.lone_key = key
        frame = header.lone_head + record
        if len(record) <= LAST_FRAME_KEPT_BYTES:
            header.last_record = record
            header.last_key = key
            header.last_frame = frame
        return frame
    if size < 0:
        size = sum(map(len, records))
    parts = [_counted(header, type_, len(records), size, mflags)]
    parts.extend(records)
    return b"".join(parts)


def jobids(header: Header, type_: int, items: list[bytes | tuple[bytes, int]],
           mflags: int = 0) -> bytes:
    """items: (job id bytes, aux) pairs, or a job ID alone for aux 0 (a
    replica's GOTJOBs: no pair made per copy), all of the same type and
    mflags."""
    count = len(items)
    if count == 1:
        # A lone job's frame (every frame of a job at a low rate: its
        # GOTJOB, SETACK, GOTACK, DELJOB): one pack, header to aux.
        item = items[0]
        if isinstance(item, bytes):
            job_id = item
            aux = 0
        else:
            job_id, aux = item
        if (len(job_id) == JOB_ID_LEN and 0 <= aux < _AUX_CACHED and 0 <= type_ < 32
                and 0 <= mflags < 8):
            key = type_ | mflags << 5
            head = header.one_item_heads[key]
            if len(head) == 0:  # (len: native, a truth test is a generic call)
                head = _COUNTED_PACK(MAGIC, VERSION, ONE_ITEM_FRAME_LEN, type_, mflags,
                                     header.flags, header.node_id, header.port,
                                     header.bus_port, 1)
                header.one_item_heads[key] = head
            # (bytes formatting: compiled, a native build of the three,
            # where b"".join took a tuple and a method call)
            return b"%s%s%s" % (head, job_id, _AUX_BYTES[aux])
        return _jobids_with_aux(header, type_, items, mflags)
    # The common frame (GOTJOB, DELJOB: 40-byte IDs, aux 0) is the IDs
    # joined by the zero aux, one C join; a pack per item costs ~0.6k
    # instructions (bench/README.md, "Issue 29 point 4").
    ids = []
    for item in items:
        if isinstance(item, bytes):
            job_id = item
            aux = 0
        else:
            job_id, aux = item
        if aux or len(job_id) != JOB_ID_LEN:
            return _jobids_with_aux(header, type_, items, mflags)
        ids.append(job_id)
    if not ids:
        return _frame(header, type_, _U32.pack(0), mflags)
    return b"".join((_counted(header, type_, count, count * JOBID_ITEM_LEN, mflags),
                     _NO_AUX.join(ids), _NO_AUX))


def _jobids_with_aux(header: Header, type_: int, items: Sequence[bytes | tuple[bytes, int]],
                     mflags: int) -> bytes:
    """jobids() of items some of which have an aux (SETACK's holder count,
    GOTACK's known flag): each item's ID and its aux's bytes (taken from a
    table while small), one join."""
    count = len(items)
    parts = [_counted(header, type_, count, count * JOBID_ITEM_LEN, mflags)]
    for item in items:
        if isinstance(item, bytes):
            job_id = item
            aux = 0
        else:
            job_id, aux = item
        if len(job_id) != JOB_ID_LEN:
            # (not an ID of ours: packed as the format says, NUL-padded or cut)
            parts.append(_JOBID.pack(job_id, aux))
            continue
        parts.append(job_id)
        parts.append(_AUX_BYTES[aux] if 0 <= aux < _AUX_CACHED else _U32.pack(aux))
    return b"".join(parts)


def queue_op(header: Header, type_: int, name: bytes, aux: int = 0) -> bytes:
    return _frame(header, type_, _QUEUE.pack(aux, len(name)) + name)


def publish(header: Header, channel: bytes, message: bytes, shard: bool) -> bytes:
    return _frame(header, PUBLISH, _U32.pack(len(channel)) + channel + message,
                  SHARD if shard else 0)
def queue_policy(header: Header, name: bytes, version_ms: int, origin: str,
                 policy: bytes) -> bytes:
    return _frame(header, QPOLICY, _QPOLICY.pack(version_ms, origin.encode(), len(name))
                  + name + policy)


def schedule(header: Header, name: bytes, version_ms: int, origin: str,
             record: bytes, mflags: int = 0) -> bytes:
    return _frame(header, SCHEDULE, _QPOLICY.pack(version_ms, origin.encode(), len(name))
                  + name + record, mflags)


def schedule_fired(header: Header, name: bytes, tick_ms: int, firer: str,
                   job_id: bytes) -> bytes:
    return _frame(header, SCHEDFIRED, _FIRED.pack(tick_ms, firer.encode(), job_id,
                                                  len(name)) + name)


def last_error(header: Header, job_id: bytes, text: bytes) -> bytes:
    return _frame(header, LASTERROR, job_id + text)


def frame_length(buf: bytes | bytearray | memoryview, offset: int = 0,
                 max_frame: int = MAX_FRAME) -> int | None:
    """Length of the frame starting at ``offset`` once its header is in, or
    None if more bytes are needed.  Raises BusError on a bad header,
    FrameTooBig over ``max_frame``."""
    if len(buf) - offset < 8:
        return None
    # (one unpack: the magic and version as one u32, then the length)
    magic: int
    length: int
    magic, length = _MAGIC_LENGTH_FROM(buf, offset)
    if magic != _MAGIC_VERSION:
        if buf[offset:offset + 3] != MAGIC:
            if buf[offset:offset + 3] in (HELLO_MAGIC, SEALED_MAGIC):
                raise BusError("the peer authenticates its frames (cluster-secret), "
                               "this node has no cluster-secret")
            raise BusError("bad magic")
        raise BusError(f"unsupported bus version {buf[offset + 3]}")
    if length < HEADER_SIZE:
        raise BusError(f"bad frame length {length}")
    if length > max_frame:
        raise FrameTooBig(f"frame of {length} bytes, over cluster-bus-max-frame {max_frame}")
    return length


def frame_len(buf: bytes, pos: i64, max_frame: i64) -> i64:
    """frame_length of a frame in bytes (the transport's read loop), or -1
    if more bytes are needed: the header's 8 bytes read one by one
    (compiled, native reads; an unpack is a call and a tuple of objects).
    (i64: compiled, plain C arithmetic where tagged ints checked each step.)"""
    if len(buf) - pos < 8:
        return -1
    length = u32(buf, pos + 4)
    if (buf[pos] != _M0 or buf[pos + 1] != _M1 or buf[pos + 2] != _M2
            or buf[pos + 3] != VERSION or length < HEADER_SIZE or length > max_frame):
        frame_length(buf, pos, max_frame)  # (raises, saying why)
        raise BusError("bad frame header")
    return length


class FrameCount:
    """The frames of one message type sent or received (/metrics).  (A
    native field: an item of a list[int] was boxed at each count, and the
    int it replaced freed.)"""

    __slots__ = ("n",)
    n: int

    def __init__(self) -> None:
        self.n = 0


def frame_counts() -> list[FrameCount]:
    """One count per message type, indexed by type."""
    return [FrameCount() for _ in NAMES]


class _LastSender:
    """The senders of the last two frames decoded, raw and as text: a
    link's frames come from one peer, and a replicated job's from its two
    other holders in turn, so a 40-byte compare mostly replaces the hash
    and look-up of _CHECKED_IDS."""

    __slots__ = ("raw", "text", "raw2", "text2")
    raw: bytes
    text: str
    raw2: bytes  # the one before: kept while frames alternate between two
    text2: str

    def __init__(self) -> None:
        self.raw = b""
        self.text = ""
        self.raw2 = b""
        self.text2 = ""


_LAST_SENDER: Final = _LastSender()

# The first bytes (magic to sender) of lone-item job-ID frames checked
# lately, and their senders, in slots by the type's and the sender's low
# bits: a frame that starts with one (a job's GOTJOB, SETACK, GOTACK,
# DELJOB, WORKING) has its header read by one compare, no slice.
_PREFIX_LEN: Final = HEADER_SIZE - 4
_PREFIX_SLOTS: Final = 2048
_PREFIXES: Final[list[bytes]] = [b""] * _PREFIX_SLOTS
_PREFIX_SENDERS: Final[list[str]] = [""] * _PREFIX_SLOTS


def _prefix_slot(data: bytes) -> i64:
    """A frame's slot in _PREFIXES."""
    return (i64(data[8]) & 31) | (i64(data[12]) & 7) << 5 | (i64(data[13]) & 7) << 8


def decode(frame: bytes | bytearray | memoryview, gotjob_raw: bool = False) -> Message:
    """Decode one whole frame (bytes) into a Message.  ``gotjob_raw``: a
    GOTJOB's body is its items as they came (bytes, 44 each, the length
    checked), for replication.on_gotjob_frame to match as a whole before
    unpacking them (jobid_items)."""
    data = frame if isinstance(frame, bytes) else bytes(frame)
    type_, mflags, sender = read_header(data)
    sflags = data[11]
    port = u16(data, 52)
    bus_port = u16(data, 54)
    if type_ >= TYPE_COUNT:  # a newer node's: ignored (see the top)
        return Message(type_, mflags, sender, sflags, port, bus_port, None)
    return Message(type_, mflags, sender, sflags, port, bus_port,
                   decode_body(data, type_, gotjob_raw))


def read_header(data: bytes) -> tuple[int, int, str]:
    """The type, mflags and sender of one whole frame, its header checked
    (as decode's: BusError if it does not hold).  With decode_body, what
    the cluster reads of every job's frames: no Message made."""
    size: i64 = len(data)
    if size == ONE_ITEM_FRAME_LEN:
        slot = _prefix_slot(data)
        prefix = _PREFIXES[slot]
        if len(prefix) and data.startswith(prefix):  # (len: native, a truth test is not)
            # (the magic, version, length, type, flags and sender of a
            # frame read below, and this one's length is that one's)
            return u16(data, 8), data[10], _PREFIX_SENDERS[slot]
    if size < HEADER_SIZE:
        raise BusError("short frame")
    # (the header's fields read byte by byte: compiled, native reads with
    # no object made, where an unpack made a tuple and 8 objects; i64, plain
    # C arithmetic)
    length = u32(data, 4)
    if (data[0] != _M0 or data[1] != _M1 or data[2] != _M2 or data[3] != VERSION
            or length != size):
        raise BusError("bad frame header")
    raw_sender = data[12:HEADER_SIZE - 4]
    last = _LAST_SENDER
    if raw_sender == last.raw:
        sender = last.text
    elif raw_sender == last.raw2:
        sender = last.text2
    else:
        checked = _node_id(raw_sender)
        if checked is None:
            raise BusError("bad sender id")
        last.raw2 = last.raw
        last.text2 = last.text
        sender = last.text = checked
        last.raw = raw_sender
    if size == ONE_ITEM_FRAME_LEN:
        slot = _prefix_slot(data)
        _PREFIXES[slot] = data[:_PREFIX_LEN]
        _PREFIX_SENDERS[slot] = sender
    type_: i64 = u16(data, 8)
    return type_, data[10], sender


def decode_body(data: bytes, type_: int, gotjob_raw: bool = False) -> Any:
    """The body of a whole frame of a type this node knows (< TYPE_COUNT),
    its header read (read_header), as decode's Message has it.  Raises
    BusError if the payload does not add up."""
    size: i64 = len(data)
    body: Any  # (by type: a compiled local keeps the type of its first value)
    kind = _KINDS[type_]
    try:
        if kind == _JOBID_KIND:
            # The job frames of every job (GOTJOB, SETACK, GOTACK, DELJOB):
            # read here, from the frame itself, a lone item's bytes in place.
            if size < HEADER_SIZE + 4:
                raise ValueError("truncated count")
            count = u32(data, HEADER_SIZE)
            if HEADER_SIZE + 4 + count * JOBID_ITEM_LEN != size:
                _expect_end(HEADER_SIZE + 4 + count * JOBID_ITEM_LEN, size)
            if gotjob_raw and type_ == GOTJOB:
                body = data[HEADER_SIZE + 4:]
            elif count == 1:
                body = [(_lone_id(data), lone_aux(data))]
            else:
                body = list(_JOBID.iter_unpack(memoryview(data)[HEADER_SIZE + 4:]))
        elif kind == _JOBS_KIND:
            body = _decode_jobs(data, HEADER_SIZE)
        else:
            body = _decode_body(type_, memoryview(data)[HEADER_SIZE:])
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise BusError(f"bad {NAMES[type_]} payload: {exc}") from None
    return body


def lone_job_id(data: bytes, type_: int) -> bytes:
    """The job ID of a whole job-ID frame of ONE_ITEM_FRAME_LEN bytes, its
    header read (read_header): decode_body's lone item without the list
    of one tuple (its aux: lone_aux).  Raises BusError as decode_body does
    if the frame's count is not 1."""
    count = u32(data, HEADER_SIZE)
    if count != 1 or len(data) != ONE_ITEM_FRAME_LEN:
        raise BusError(f"bad {NAMES[type_]} payload: payload is {len(data)} bytes, "
                       f"expected {HEADER_SIZE + 4 + count * JOBID_ITEM_LEN}")
    return _lone_id(data)


def _lone_id(data: bytes) -> bytes:
    """The ID of a job-ID frame's lone item, its count checked."""
    return data[HEADER_SIZE + 4:ONE_ITEM_FRAME_LEN - 4]


def lone_aux(data: bytes) -> int:
    """The aux of lone_job_id's item."""
    return u32(data, ONE_ITEM_FRAME_LEN - 4)


def jobid_items(raw: bytes) -> list[tuple[bytes, int]]:
    """The (job id, aux) items of a job-ID frame's body taken raw."""
    return list(_JOBID.iter_unpack(raw))


def jobids_raw(job_ids: list[bytes]) -> bytes:
    """The raw body (decode's ``gotjob_raw``) of 40-byte IDs with aux 0."""
    return _NO_AUX.join(job_ids) + _NO_AUX if job_ids else b""


def _decode_body(type_: int, payload: memoryview) -> Any:
    size = len(payload)
    if type_ in GOSSIP_TYPES:
        (count,) = _U16.unpack_from(payload)
        pos = 2
        entries = []
        for _ in range(count):
            node_id, flags, port, bus_port, pong_age, iplen = _GOSSIP.unpack_from(payload, pos)
            pos += _GOSSIP.size
            if pos + iplen > size:
                raise ValueError("truncated gossip entry")
            ip = _check_ip(bytes(payload[pos:pos + iplen]))
            pos += iplen
            entries.append((_check_node_id(node_id), flags, ip, port, bus_port, pong_age))
        _expect_end(pos, size)
        return entries
    if type_ == FAIL:
        _expect_end(NODE_ID_LEN, size)
        return _check_node_id(bytes(payload))
    if type_ in QUEUE_TYPES:
        aux, qlen = _QUEUE.unpack_from(payload)
        _expect_end(_QUEUE.size + qlen, size)
        return aux, bytes(payload[_QUEUE.size:])
    if type_ == PUBLISH:
        (clen,) = _U32.unpack_from(payload)
        if 4 + clen > size:
            raise ValueError("truncated channel")
        return bytes(payload[4:4 + clen]), bytes(payload[4 + clen:])
    if type_ == SCHEDFIRED:
        tick_ms, firer, job_id, nlen = _FIRED.unpack_from(payload)
        _expect_end(_FIRED.size + nlen, size)
        if not _valid_job_id(job_id):
            raise ValueError("bad job id")
        return (bytes(payload[_FIRED.size:]), tick_ms, _check_node_id(firer), job_id)
    if type_ == LASTERROR:
        job_id = bytes(payload[:JOB_ID_LEN])
        if size < JOB_ID_LEN or not _valid_job_id(job_id):
            raise ValueError("bad job id")
        return job_id, bytes(payload[JOB_ID_LEN:])
    if type_ == QPOLICY or type_ == SCHEDULE:
        version_ms, origin, qlen = _QPOLICY.unpack_from(payload)
        end = _QPOLICY.size + qlen
        if end > size:
            raise ValueError("truncated queue name")
        return (version_ms, _check_node_id(origin), bytes(payload[_QPOLICY.size:end]),
                bytes(payload[end:]))
    raise ValueError("unknown type")


def _decode_jobs(frame: bytes, pos: int) -> list[jobcodec.JobFields]:
    """The job records of a REPLJOB or YOURJOBS frame, from ``pos``."""
    if len(frame) < pos + 4:
        raise ValueError("truncated count")
    count = u32(frame, pos)
    records, end = jobcodec.decode_many(frame, pos + 4, count)
    _expect_end(end, len(frame))
    # (Any: compiled, a record's ID read alone, where the typed tuple's read
    # checked and unboxed its 14 fields)
    rows: list[Any] = records
    if count == 1:  # (a lone job's frame: no join, no slices)
        valid = _valid_job_id(rows[0][0])
    else:
        valid = _valid_job_ids(b"".join([r[0] for r in rows]), count)
    if not valid:
        raise ValueError("bad job id")
    return records


# Node IDs are 40 lowercase hex digits and addresses are IP literals: they
# end up in nodes.conf and CLUSTER NODES lines, so nothing else may pass.
_HEX_DIGITS: Final = frozenset(b"0123456789abcdef")


# The node IDs checked so far, as their text: the senders of frames and the
# entries of gossip are the same few peers over and over, and the check of
# each byte cost ~2.4k instructions an ID compiled (bench/README.md, "A
# turn's fixed costs").  Bounded: emptied once it holds _CHECKED_IDS_MAX.
_CHECKED_IDS: Final[dict[bytes, str]] = {}
_CHECKED_IDS_MAX: Final = 1024


def _node_id(raw: bytes) -> str | None:
    """``raw`` as text if it is a node ID, else None."""
    text = _CHECKED_IDS.get(raw)
    if text is not None:
        return text
    if len(raw) != NODE_ID_LEN or not _HEX_DIGITS.issuperset(raw):
        return None
    text = raw.decode("ascii")
    if len(_CHECKED_IDS) >= _CHECKED_IDS_MAX:
        _CHECKED_IDS.clear()
    _CHECKED_IDS[raw] = text
    return text


def _check_node_id(raw: bytes) -> str:
    text = _node_id(raw)
    if text is None:
        raise ValueError("bad node id")
    return text


# A job ID is "D-", 8 hex digits, "-", 24 base64 characters, "-", 4 hex
# digits.  A stored job's ID is echoed in replies (JSCAN sends it as a
# status line), so one from a peer must not hold other bytes.
_JOB_ID_CHARS: Final = (b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                        b"0123456789+/-")
_D: Final = 0x44  # b"D"[0]
# Every byte to 1 if a job ID may hold it, else to 0: an ID maps to _ALL_OK.
_JOB_ID_BYTE_OK: Final = bytes([1 if b in _JOB_ID_CHARS else 0 for b in range(256)])
_ALL_OK: Final = b"\x01" * JOB_ID_LEN
_DASH: Final = 0x2D  # b"-"[0]




def _valid_job_ids(ids: bytes, count: int) -> bool:
    """``count`` 40-byte IDs joined, each as above (no other byte, "D-" in
    front, dashes at 10 and 35): a few C loops over the frame's IDs at
    once, cheaper than a regex (bench/README.md, "Against Disque C")."""
    dashes = b"-" * count
    return (not ids.translate(None, _JOB_ID_CHARS) and ids[0::40] == b"D" * count
            and ids[1::40] == dashes and ids[10::40] == dashes and ids[35::40] == dashes)


def _valid_job_id(job_id: bytes) -> bool:
    """_valid_job_ids of one ID: its bytes read in place, the others
    mapped through a table made once (a deletion set is a table made per
    call: ~1.9k instructions an ID)."""
    return (len(job_id) == JOB_ID_LEN and job_id[0] == _D and job_id[1] == _DASH
            and job_id[10] == _DASH and job_id[35] == _DASH
            and job_id.translate(_JOB_ID_BYTE_OK) == _ALL_OK)


# The addresses checked so far (gossip names the same few peers over and
# over; ipaddress's parse of one cost ~21k instructions).  Bounded as
# _CHECKED_IDS.
_CHECKED_IPS: Final[dict[bytes, str]] = {}


def _check_ip(raw: bytes) -> str:
    ip = _CHECKED_IPS.get(raw)
    if ip is not None:
        return ip
    ip = raw.decode("ascii")
    if ip:
        ipaddress.ip_address(ip)  # ValueError if it is not an address
    if len(_CHECKED_IPS) >= _CHECKED_IDS_MAX:
        _CHECKED_IPS.clear()
    _CHECKED_IPS[raw] = ip
    return ip


def _expect_end(pos: int, size: int) -> None:
    if pos != size:
        raise ValueError(f"payload is {size} bytes, expected {pos}")


# ------------------------------------------------ authenticated links
#
# With a cluster secret, each side of a link first sends a hello:
#
#     magic "TQH" | version u8 | nonce 16s
#
# (its own fresh random nonce), then only envelopes:
#
#     magic "TQS" | version u8 | total length u32 | sequence u64 |
#     frames | tag 32s
#
# where ``frames`` are whole frames as above, and ``tag`` is
# HMAC-SHA256(secret, receiver's nonce | every byte before the tag).  The
# receiver's nonce ties an envelope to one link and one direction (a frame
# captured on another link, or sent the other way, fails its tag); the
# sequence number, counted from 0 in each direction, ties it to its place
# on the link (a replayed, dropped or reordered envelope fails).  Frames a
# turn queues for a peer travel in one envelope: one tag for all of them.

HELLO_MAGIC = b"TQH"
SEALED_MAGIC = b"TQS"
NONCE_LEN = 16
TAG_LEN = 32
HELLO = struct.Struct("<3sB16s")
SEAL_PREFIX = struct.Struct("<3sBIQ")
_LENGTH_SEQ = struct.Struct("<IQ")  # an envelope's length and number, at offset 4
SEAL_OVERHEAD = SEAL_PREFIX.size + TAG_LEN
SEAL_BODY_MAX = 256 * 1024  # frames share an envelope up to this; a bigger frame goes alone

def hello(nonce: bytes) -> bytes:
    """The first bytes each side sends on an authenticated link."""
    return HELLO.pack(HELLO_MAGIC, VERSION, nonce)


def read_hello(buf: bytes | bytearray, offset: int = 0) -> bytes | None:
    """The peer's nonce from its hello at ``offset``, or None if more bytes
    are needed.  Raises AuthError if the link does not start with one."""
    if len(buf) - offset < 4:
        return None
    magic = bytes(buf[offset:offset + 3])
    if magic != HELLO_MAGIC:
        if magic == MAGIC:
            raise AuthError("unauthenticated frame (the peer has no cluster-secret?)")
        raise AuthError("no hello at the start of the link")
    if buf[offset + 3] != VERSION:
        raise AuthError(f"unsupported hello version {buf[offset + 3]}")
    if len(buf) - offset < HELLO.size:
        return None
    return bytes(buf[offset + 4:offset + HELLO.size])


def link_mac(secret: bytes, receiver_nonce: bytes) -> "hmac.HMAC":
    """The HMAC state every envelope to the owner of ``receiver_nonce``
    starts from (copied per envelope: the key is hashed once per link)."""
    return hmac.new(secret, receiver_nonce, hashlib.sha256)


def seal(mac: "hmac.HMAC", seq: int, body: bytes) -> bytes:
    """One envelope holding ``body`` (whole frames), number ``seq``."""
    prefix = SEAL_PREFIX.pack(SEALED_MAGIC, VERSION, SEAL_OVERHEAD + len(body), seq)
    h = mac.copy()
    h.update(prefix)
    h.update(body)
    return b"".join((prefix, body, h.digest()))


def seal_frames(mac: "hmac.HMAC", seq: int, frames: list[bytes]) -> tuple[bytes, int]:
    """``frames`` in envelopes numbered from ``seq``: one if they fit in
    SEAL_BODY_MAX (or there is only one), else as many as needed.  Returns
    the bytes to send and the next sequence number."""
    if len(frames) == 1:
        return seal(mac, seq, frames[0]), seq + 1
    total = sum(map(len, frames))
    if total <= SEAL_BODY_MAX:
        return seal(mac, seq, b"".join(frames)), seq + 1
    envelopes = []
    batch: list[bytes] = []
    size = 0
    for frame in frames:
        if batch and size + len(frame) > SEAL_BODY_MAX:
            envelopes.append(seal(mac, seq, b"".join(batch)))
            seq += 1
            batch = []
            size = 0
        batch.append(frame)
        size += len(frame)
    envelopes.append(seal(mac, seq, b"".join(batch)))
    return b"".join(envelopes), seq + 1


def sealed_length(buf: bytes | bytearray, offset: int = 0,
                  max_frame: int = MAX_FRAME) -> int | None:
    """Length of the envelope at ``offset`` once its first 8 bytes are in,
    or None if more are needed.  Raises AuthError if it is not an envelope
    (a plain frame, say), FrameTooBig if its frames are over ``max_frame``."""
    if len(buf) - offset < 8:
        return None
    magic = bytes(buf[offset:offset + 3])
    if magic != SEALED_MAGIC:
        if magic == MAGIC:
            raise AuthError("unauthenticated frame (the peer has no cluster-secret?)")
        if magic == HELLO_MAGIC:
            raise AuthError("a second hello on the link")
        raise AuthError("bad magic")
    if buf[offset + 3] != VERSION:
        raise AuthError(f"unsupported envelope version {buf[offset + 3]}")
    length: int = _U32.unpack_from(buf, offset + 4)[0]
    if length < SEAL_OVERHEAD + HEADER.size:
        raise AuthError(f"bad envelope length {length}")
    if length - SEAL_OVERHEAD > max_frame:
        raise FrameTooBig(f"envelope of {length} bytes, over cluster-bus-max-frame {max_frame}")
    return length


def unseal(mac: "hmac.HMAC", envelope: bytes, seq: int,
           max_frame: int = MAX_FRAME, alt_mac: "hmac.HMAC | None" = None) -> list[bytes]:
    """The frames of one whole envelope, which must carry a good tag (by
    ``mac``, or else by ``alt_mac``: a second secret while the cluster's
    is rotated) and the sequence number ``seq``.  Raises AuthError
    otherwise, BusError if its frames do not add up to its body."""
    size = len(envelope)
    if size < SEAL_OVERHEAD + HEADER.size:
        raise AuthError("bad envelope length")
    length, got = _LENGTH_SEQ.unpack_from(envelope, 4)
    if size != length:
        raise AuthError("bad envelope length")
    end = size - TAG_LEN
    signed = memoryview(envelope)[:end]
    h = mac.copy()
    h.update(signed)
    tag = envelope[end:]
    if not hmac.compare_digest(h.digest(), tag):
        if alt_mac is not None:
            h = alt_mac.copy()
            h.update(signed)
        if alt_mac is None or not hmac.compare_digest(h.digest(), tag):
            raise AuthError("bad tag (forged, replayed from another link, "
                            "or another cluster-secret)")
    if got != seq:
        raise AuthError(f"envelope number {got} where {seq} was due (replayed or reordered)")
    pos = SEAL_PREFIX.size
    frames = []
    while pos < end:
        length = frame_length(envelope, pos, max_frame)
        if length is None or pos + length > end:
            raise BusError("envelope frames do not add up to its length")
        frames.append(envelope[pos:pos + length])
        pos += length
    return frames
