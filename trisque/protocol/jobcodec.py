"""A job as bytes, for the cluster bus and the append-only file.

Layout (little endian): a fixed part, then the queue name, the body and the
IDs of the nodes that may hold a copy.  Every length is checked on decode:
a short or inconsistent record raises ValueError, never a partial job.

``etime_ms`` is whatever the caller puts there: the bus sends the time to
live left (clocks differ between nodes), the AOF the absolute expiry.

A job with a delivery policy (core/jobs/policy.py: a delivery limit, a
dead-letter queue, a backoff, its history once dead) has the flag
``HAS_POLICY`` and, after the node IDs, u32 length + the encoded policy.
Every other job's record is byte for byte what it was before policies.
"""

import struct
from collections.abc import Collection
from typing import Final

from mypy_extensions import i64

from .native import COMPILED, u16, u32

_FIXED = struct.Struct("<40sBBHQqIIIIIIH")
_UNPACK_FIXED: Final = _FIXED.unpack_from  # (compiled: a call, not a method lookup per record)
_FIXED_SIZE: Final = 86  # _FIXED.size (a constant: no attribute read per call)
_U32 = struct.Struct("<I")
NODE_ID_LEN: Final = 40
HAS_POLICY: Final = 64  # in the flags byte: a policy follows the node IDs
# Compiled, decode_many reads the fixed fields in place (native byte reads);
# interpreted, each byte read is a Python step and unpack_from ~20x cheaper.
# (Tests set it to read both ways interpreted.)
IN_PLACE: Final = COMPILED
FIELDS = ("id", "state", "flags", "repl", "ctime", "etime_ms", "delay_s",
          "retry_s", "nacks", "deliveries", "queue", "body", "nodes", "policy")

# One decoded record, the fields in FIELDS order (policy: b"" for none).
JobFields = tuple[bytes, int, int, int, int, int, int, int, int, int,
                  bytes, bytes, tuple[str, ...], bytes]


def encode(job_id: bytes, state: int, flags: int, repl: int, ctime: int, etime_ms: int,
           delay_s: int, retry_s: int, nacks: int, deliveries: int, queue: bytes,
           body: bytes, nodes: Collection[str | bytes], policy: bytes = b"") -> bytes:
    if policy:
        flags |= HAS_POLICY
    return b"".join((
        _FIXED.pack(job_id, state, flags, repl, ctime, etime_ms, delay_s,
                    retry_s, nacks, deliveries, len(queue), len(body), len(nodes)),
        queue, body, *(n.encode() if isinstance(n, str) else n for n in nodes),
        policy_suffix(policy)))


def policy_suffix(policy: bytes) -> bytes:
    """What follows the node IDs of a record: b"" without a policy."""
    return _U32.pack(len(policy)) + policy if policy else b""


def without_policy(record: bytes) -> bytes:
    """The record as a node that predates policies reads it: the flag
    cleared, the policy cut (a mixed cluster, cluster/outbox.py)."""
    flags = record[41]
    if not flags & HAS_POLICY:
        return record
    qlen, blen, nnodes = struct.unpack_from("<IIH", record, _FIXED.size - 10)
    end = _FIXED.size + qlen + blen + nnodes * NODE_ID_LEN
    return b"".join((record[:41], bytes((flags & ~HAS_POLICY,)), record[42:end]))


_NODE_TUPLES: dict[bytes, tuple[str, ...]] = {}  # raw node-ID block -> tuple of str, shared between jobs
_NODE_TUPLES_MAX = 4096


def _node_ids(raw: bytes) -> tuple[str, ...]:
    """The node IDs of a record.  Most jobs are held by the same few sets
    of nodes: one shared tuple per set saves the decoding and, for a
    million replicas, a few hundred MB of identical strings."""
    nodes = _NODE_TUPLES.get(raw)
    if nodes is None:
        text = raw.decode("ascii")
        nodes = tuple(text[i:i + NODE_ID_LEN] for i in range(0, len(text), NODE_ID_LEN))
        if len(_NODE_TUPLES) >= _NODE_TUPLES_MAX:
            _NODE_TUPLES.clear()
        _NODE_TUPLES[raw] = nodes
    return nodes


class _LastNodes:
    """The node-ID block of the last record decoded and its tuple: a
    replica's lone REPLJOBs mostly name the same holders, whose 120 bytes
    are then compared, not hashed for _NODE_TUPLES' look-up."""

    __slots__ = ("raw", "nodes")
    raw: bytes
    nodes: tuple[str, ...]

    def __init__(self) -> None:
        self.raw = b""
        self.nodes = ()


_LAST_NODES: Final = _LastNodes()


def decode(data: bytes, offset: int = 0) -> tuple[JobFields, int]:
    """Return (fields tuple in FIELDS order, offset after the record)."""
    records, end = decode_many(data, offset, 1)
    return records[0], end


def decode_many(data: bytes | bytearray | memoryview, offset: int,
                count: int) -> tuple[list[JobFields], int]:
    """``count`` records one after the other from ``offset``: (list of
    fields tuples, offset after the last).  One loop, since a bus frame
    carries hundreds."""
    raw = data if isinstance(data, bytes) else bytes(data)
    size = len(raw)
    fixed = _FIXED_SIZE
    records: list[JobFields] = []
    # The fields declared int: compiled, the slicing and the arithmetic
    # below are then native (unpack's values are Any), and a ctime past
    # i64 (unpack's) still fits.
    qlen: int
    blen: int
    nnodes: int
    state: int
    flags: int
    repl: int
    ctime: int
    etime_ms: int
    delay_s: int
    retry_s: int
    nacks: int
    deliveries: int
    # Consecutive records mostly have the same holders: their bytes are
    # compared with the last ones, not hashed for _node_ids' lookup.
    last = _LAST_NODES
    last_raw = last.raw
    nodes = last.nodes
    for _ in range(count):
        end = offset + fixed
        if end > size:
            raise ValueError("truncated job record")
        o: i64 = offset
        if IN_PLACE and raw[o + 51] < 128:
            # The fixed fields read in place (compiled: native byte reads
            # and i64 arithmetic, no generic call and no object per field).
            job_id = raw[offset:offset + 40]
            state = raw[o + 40]
            flags = raw[o + 41]
            repl = u16(raw, o + 42)
            ctime = u32(raw, o + 44) | u32(raw, o + 48) << 32
            # (etime is signed: its top byte taken as such)
            top: i64 = raw[o + 59]
            if top >= 128:
                top -= 256
            etime_ms = (u32(raw, o + 52) | u16(raw, o + 56) << 32
                        | i64(raw[o + 58]) << 48 | top << 56)
            delay_s = u32(raw, o + 60)
            retry_s = u32(raw, o + 64)
            nacks = u32(raw, o + 68)
            deliveries = u32(raw, o + 72)
            qlen = u32(raw, o + 76)
            blen = u32(raw, o + 80)
            nnodes = u16(raw, o + 84)
        else:  # (a ctime of 2**63 or more: beyond i64)
            (job_id, state, flags, repl, ctime, etime_ms, delay_s, retry_s, nacks,
             deliveries, qlen, blen, nnodes) = _UNPACK_FIXED(raw, offset)
        if state > 3:
            raise ValueError("bad job state")
        qend = end + qlen
        bend = qend + blen
        offset = bend + nnodes * NODE_ID_LEN
        if offset > size:
            raise ValueError("truncated job record")
        block = raw[bend:offset]
        if block != last_raw:
            last_raw = block
            nodes = _node_ids(block)
        policy = b""
        if flags & HAS_POLICY:
            flags &= ~HAS_POLICY
            if offset + 4 > size:
                raise ValueError("truncated job record")
            plen: int = _U32.unpack_from(raw, offset)[0]
            pend = offset + 4 + plen
            if pend > size or not plen:
                raise ValueError("truncated job record")
            policy = raw[offset + 4:pend]
            offset = pend
        records.append((job_id, state, flags, repl, ctime, etime_ms, delay_s, retry_s, nacks,
                        deliveries, raw[end:qend], raw[qend:bend], nodes, policy))
    if last_raw is not last.raw:
        last.raw = last_raw
        last.nodes = nodes
    return records, offset
