"""HyperLogLogs in Redis's exact HYLL string format (hyperloglog.c), so
that GET, GETRANGE and SETRANGE see the bytes redis-server would hold.

The format, as Redis defines it:

- a 16-byte header: ``HYLL``, the encoding (0 dense, 1 sparse), three
  unused bytes, and the cached cardinality (64 bits little endian; its top
  bit set means "stale, recompute");
- dense: 16384 registers of 6 bits, packed from the least significant bit
  of each byte up (12288 bytes);
- sparse: run-length opcodes: ZERO ``00xxxxxx`` (1-64 zero registers),
  XZERO ``01xxxxxx yyyyyyyy`` (1-16384 zero registers), VAL ``1vvvvvxx``
  (1-4 registers of value 1-32).  A write that needs a value above 32, or
  would make the string longer than hll-sparse-max-bytes, turns it dense.

An element goes to the register its MurmurHash64A (seed 0xadc83b19) names
in its low 14 bits; the register keeps the longest run of zeros + 1 seen in
the remaining bits.  The estimate is Ertl's improved raw estimator, as 7.0
computes it, in the same double arithmetic.

Sparse updates follow Redis's in-place algorithm opcode for opcode (split
the run that holds the register, merge equal neighbours within five
opcodes), because the resulting bytes depend on it.  To make a PFADD of
many elements cheap, a well-formed sparse body is decoded once into a
list of opcodes with the first register of each (``Sparse``: a bisect
finds a register's opcode) and encoded back at the end; ``sparse_set_bytes``
is the same algorithm on the bytes themselves, for bodies that do not
decode cleanly (corrupted ones, whose outcome Redis defines too).
"""

from __future__ import annotations

import math
import struct
from bisect import bisect_right

HEADER = 16
REGISTERS = 16384
P = 14
Q = 64 - P
DENSE_BYTES = REGISTERS * 6 // 8
DENSE_SIZE = HEADER + DENSE_BYTES
DENSE = 0
SPARSE = 1
SPARSE_VAL_MAX = 32
MAGIC = b"HYLL"
ALPHA_INF = 0.721347520444481703680  # 0.5 / ln(2)
SELF_TEST_ERROR = 1.04 / math.sqrt(REGISTERS)

NOT_HLL = "WRONGTYPE Key is not a valid HyperLogLog string value."
CORRUPTED = "INVALIDOBJ Corrupted HLL object detected"

_M = 0xC6A4A7935BD1E995
_U64 = U64 = (1 << 64) - 1
_SEED = 0xADC83B19
_XZERO_BIT = 0x40
_BYTE = [bytes((i,)) for i in range(256)]
_PROMOTE = 2  # Sparse.set: the register needs the dense encoding

# ------------------------------------------------------------------ hash


_UNPACK = {n: struct.Struct("<%dQ" % n).unpack_from for n in range(1, 17)}


def murmur64a(data: bytes, seed: int = _SEED) -> int:
    """MurmurHash64A as Redis has it (endian neutral: words read little endian)."""
    size = len(data)
    h = (seed ^ (size * _M)) & _U64
    words = size >> 3
    if words:
        unpack = _UNPACK.get(words) or struct.Struct("<%dQ" % words).unpack_from
        for k in unpack(data):
            k = (k * _M) & _U64
            h = ((((k ^ (k >> 47)) * _M) & _U64 ^ h) * _M) & _U64
    tail = size & 7
    if tail:
        h = ((h ^ int.from_bytes(data[size - tail:], "little")) * _M) & _U64
    h ^= h >> 47
    h = (h * _M) & _U64
    return h ^ (h >> 47)


def pattern(element: bytes) -> tuple[int, int]:
    """hllPatLen: (register, run of zeros + 1) of ``element``."""
    h = murmur64a(element)
    rest = (h >> P) | (1 << Q)  # the bit at Q ends the run at Q + 1
    return h & (REGISTERS - 1), (rest & -rest).bit_length()


# ---------------------------------------------------------------- header


def new_hll() -> bytearray:
    """createHLLObject: an empty sparse HLL (XZERO:16384)."""
    return bytearray(MAGIC + bytes((SPARSE, 0, 0, 0)) + bytes(8) + b"\x7f\xff")


def is_hll(value: bytes | bytearray) -> bool:
    """isHLLObjectOrReply's checks beyond the type."""
    return (len(value) >= HEADER and value[:4] == MAGIC and value[4] <= SPARSE
            and (value[4] != DENSE or len(value) == DENSE_SIZE))


def cached_count(value: bytes | bytearray) -> int | None:
    if value[15] & 0x80:
        return None
    return int.from_bytes(value[8:16], "little")


def invalidate(value: bytearray) -> None:
    value[15] |= 0x80


# ----------------------------------------------------------------- dense

# Four 6-bit registers in three bytes a, b, c: r0 = a & 63,
# r1 = a >> 6 | (b & 15) << 2, r2 = b >> 4 | (c & 3) << 4, r3 = c >> 2.
_LOW6 = bytes(i & 63 for i in range(256))
_HIGH2 = bytes(i >> 6 for i in range(256))
_LOW4_UP2 = bytes((i & 15) << 2 for i in range(256))
_HIGH4 = bytes(i >> 4 for i in range(256))
_LOW2_UP4 = bytes((i & 3) << 4 for i in range(256))
_HIGH6 = bytes(i >> 2 for i in range(256))
_REG_LOW2_UP6 = bytes(((i & 3) << 6) & 0xFF for i in range(256))
_REG_HIGH4 = bytes((i >> 2) & 15 for i in range(256))
_REG_LOW4_UP4 = bytes(((i & 15) << 4) & 0xFF for i in range(256))
_REG_HIGH2 = bytes((i >> 4) & 3 for i in range(256))
_REG_UP2 = bytes(((i & 63) << 2) & 0xFF for i in range(256))


def _or(x: bytes, y: bytes) -> bytes:
    """Bytewise OR of two strings of the same length (bits that do not overlap)."""
    return (int.from_bytes(x, "little") | int.from_bytes(y, "little")).to_bytes(len(x), "little")


def dense_registers(value: bytes | bytearray) -> bytearray:
    """The 16384 registers of a dense HLL, one byte each."""
    body = bytes(value[HEADER:DENSE_SIZE])
    a, b, c = body[0::3], body[1::3], body[2::3]
    raw = bytearray(REGISTERS)
    raw[0::4] = a.translate(_LOW6)
    raw[1::4] = _or(a.translate(_HIGH2), b.translate(_LOW4_UP2))
    raw[2::4] = _or(b.translate(_HIGH4), c.translate(_LOW2_UP4))
    raw[3::4] = c.translate(_HIGH6)
    return raw


def dense_body(raw: bytes | bytearray) -> bytearray:
    """16384 registers (each below 64) packed as the dense encoding."""
    r0, r1, r2, r3 = (bytes(raw[i::4]) for i in range(4))
    body = bytearray(DENSE_BYTES)
    body[0::3] = _or(r0, r1.translate(_REG_LOW2_UP6))
    body[1::3] = _or(r1.translate(_REG_HIGH4), r2.translate(_REG_LOW4_UP4))
    body[2::3] = _or(r2.translate(_REG_HIGH2), r3.translate(_REG_UP2))
    return body


def dense_set(value: bytearray, index: int, count: int) -> int:
    """hllDenseSet: raise register ``index`` to ``count``; 1 if it grew."""
    bit = index * 6
    byte = HEADER + (bit >> 3)
    shift = bit & 7
    if byte + 1 < DENSE_SIZE:
        pair = value[byte] | value[byte + 1] << 8
        if count <= (pair >> shift) & 63:
            return 0
        pair = (pair & ~(63 << shift)) | count << shift
        value[byte] = pair & 0xFF
        value[byte + 1] = pair >> 8
        return 1
    if count <= (value[byte] >> shift) & 63:  # the last register: one byte
        return 0
    value[byte] = (value[byte] & ~(63 << shift) & 0xFF) | ((count << shift) & 0xFF)
    return 1


def dense_add(value: bytearray, element: bytes) -> int:
    index, count = pattern(element)
    return dense_set(value, index, count)


# ---------------------------------------------------------------- sparse


def _xzero(length: int) -> int:
    return ((length - 1) | (_XZERO_BIT << 8))


def _zero_run(length: int) -> list[int]:
    """The opcode of ``length`` zero registers (as Redis picks it)."""
    return [_xzero(length)] if length > 64 else [length - 1]


def _val(value: int, length: int) -> int:
    return 0x80 | (value - 1) << 2 | (length - 1)


def sparse_registers(value: bytes | bytearray) -> bytearray | None:
    """The registers of a sparse HLL, one byte each; None if it does not
    cover exactly 16384 registers (hllSparseToDense and hllMerge), or a
    run of values goes past the last one."""
    raw = bytearray(REGISTERS)
    idx = 0
    p = HEADER
    end = len(value)
    while p < end:
        op = value[p]
        if op < 0x40:
            idx += op + 1
            p += 1
        elif op < 0x80:
            idx += ((op & 63) << 8 | (value[p + 1] if p + 1 < end else 0)) + 1
            p += 2
        else:
            run = (op & 3) + 1
            if idx + run > REGISTERS:
                return None  # (the fix of CVE-2025-32023 that 7.0.15's builds carry)
            raw[idx:idx + run] = _BYTE[((op >> 2) & 31) + 1] * run
            idx += run
            p += 1
    return raw if idx == REGISTERS else None


def sparse_histogram(value: bytes | bytearray) -> list[int] | None:
    """hllSparseRegHisto: registers per value; None if the runs do not
    add up to 16384 registers."""
    hist = [0] * 64
    idx = 0
    p = HEADER
    end = len(value)
    while p < end:
        op = value[p]
        if op < 0x40:
            run = op + 1
            hist[0] += run
            p += 1
        elif op < 0x80:
            run = ((op & 63) << 8 | (value[p + 1] if p + 1 < end else 0)) + 1
            hist[0] += run
            p += 2
        else:
            run = (op & 3) + 1
            hist[((op >> 2) & 31) + 1] += run
            p += 1
        idx += run
    return hist if idx == REGISTERS else None


def to_dense(value: bytearray) -> bool:
    """hllSparseToDense, in place (the header kept, but for the encoding);
    False if the sparse body is corrupted (then nothing changes)."""
    if value[4] == DENSE:
        return True
    raw = sparse_registers(value)
    if raw is None:
        return False
    value[HEADER:] = dense_body(raw)
    value[4] = DENSE
    return True


class Sparse:
    """A well-formed sparse body as a list of opcodes (ints: a one-byte
    opcode as itself, an XZERO as its two bytes big endian, >= 0x4000) and
    the first register of each, for as long as one command updates it."""

    __slots__ = ("ops", "firsts", "size")

    def __init__(self, ops: list[int], firsts: list[int], size: int) -> None:
        self.ops = ops
        self.firsts = firsts
        self.size = size  # the string's length: header + opcode bytes

    @classmethod
    def decode(cls, value: bytes | bytearray) -> Sparse | None:
        """None unless the opcodes cover exactly 16384 registers and the
        last one is whole."""
        ops: list[int] = []
        firsts: list[int] = []
        first = 0
        p = HEADER
        end = len(value)
        while p < end:
            op = value[p]
            if op < 0x40:
                span = op + 1
                p += 1
            elif op < 0x80:
                if p + 1 >= end:
                    return None
                op = op << 8 | value[p + 1]
                span = (op & 0x3FFF) + 1
                p += 2
            else:
                span = (op & 3) + 1
                p += 1
            ops.append(op)
            firsts.append(first)
            first += span
        if first != REGISTERS:
            return None
        return cls(ops, firsts, len(value))

    def encode(self) -> bytes:
        ops = self.ops
        if max(ops) < 0x100:
            return bytes(ops)
        return b"".join([_BYTE[op] if op < 0x100 else op.to_bytes(2, "big") for op in ops])

    def registers(self) -> bytearray:
        raw = bytearray(REGISTERS)
        for op, first in zip(self.ops, self.firsts):
            if op >= 0x80 and op < 0x100:
                raw[first:first + (op & 3) + 1] = _BYTE[((op >> 2) & 31) + 1] * ((op & 3) + 1)
        return raw

    def set(self, index: int, count: int, max_bytes: int) -> int:
        """hllSparseSet on the opcode list: 1 updated, 0 not needed,
        _PROMOTE: the caller turns the HLL dense and sets it there."""
        if count > SPARSE_VAL_MAX:
            return _PROMOTE
        ops = self.ops
        firsts = self.firsts
        i = bisect_right(firsts, index) - 1
        op = ops[i]
        first = firsts[i]
        if op < 0x40:
            span = op + 1
        elif op < 0x100:
            span = (op & 3) + 1
            old = ((op >> 2) & 31) + 1
            if old >= count:
                return 0
        else:
            span = (op & 0x3FFF) + 1
        if span == 1 and op < 0x100:  # a VAL or ZERO of one register: in place
            ops[i] = _val(count, 1)
        else:
            last = first + span - 1
            if op < 0x80 or op >= 0x100:  # ZERO or XZERO: split the run of zeros
                seq = _zero_run(index - first) if index != first else []
                seq.append(_val(count, 1))
                if index != last:
                    seq += _zero_run(last - index)
            else:  # VAL: split the run of its value
                current = ((op >> 2) & 31) + 1
                seq = [_val(current, index - first)] if index != first else []
                seq.append(_val(count, 1))
                if index != last:
                    seq.append(_val(current, last - index))
            seq_bytes = len(seq) + sum(1 for o in seq if o >= 0x100)
            delta = seq_bytes - (2 if op >= 0x100 else 1)
            if delta > 0 and self.size + delta > max_bytes:
                return _PROMOTE
            seq_firsts = [first] if index != first else []
            seq_firsts.append(index)
            if index != last:
                seq_firsts.append(index + 1)
            ops[i:i + 1] = seq
            firsts[i:i + 1] = seq_firsts
            self.size += delta
        # Merge equal VAL neighbours, up to five opcodes from the previous one.
        p = i - 1 if i > 0 else 0
        scan = 5
        while p < len(ops) and scan > 0:
            scan -= 1
            op = ops[p]
            if op < 0x80 or op >= 0x100:
                p += 1
                continue
            if p + 1 < len(ops):
                nxt = ops[p + 1]
                if 0x80 <= nxt < 0x100 and (op ^ nxt) & 0x7C == 0:
                    length = (op & 3) + (nxt & 3) + 2
                    if length <= 4:
                        ops[p] = _val(((op >> 2) & 31) + 1, length)
                        del ops[p + 1]
                        del firsts[p + 1]
                        self.size -= 1
                        continue
            p += 1
        return 1


def sparse_set_bytes(value: bytearray, index: int, count: int, max_bytes: int) -> int:
    """hllSparseSet on the bytes themselves, for a sparse body that does
    not decode cleanly (Sparse.set is the same on a clean one): 1
    updated, 0 not needed, -1 corrupted, _PROMOTE as Sparse.set."""
    if count > SPARSE_VAL_MAX:
        return _PROMOTE
    end = len(value)
    p = HEADER
    first = 0
    prev = -1
    span = 0
    oplen = 1
    while p < end:
        op = value[p]
        oplen = 1
        if op < 0x40:
            span = op + 1
        elif op >= 0x80:
            span = (op & 3) + 1
        else:
            span = ((op & 63) << 8 | (value[p + 1] if p + 1 < end else 0)) + 1
            oplen = 2
        if index <= first + span - 1:
            break
        prev = p
        p += oplen
        first += span
    if span == 0 or p >= end:
        return -1
    op = value[p]
    if op >= 0x80 and ((op >> 2) & 31) + 1 >= count:
        return 0
    if span == 1 and (op < 0x40 or op >= 0x80):
        value[p] = _val(count, 1)
    else:
        last = first + span - 1
        if op < 0x80:
            seq = _zero_run(index - first) if index != first else []
            seq.append(_val(count, 1))
            if index != last:
                seq += _zero_run(last - index)
        else:
            current = ((op >> 2) & 31) + 1
            seq = [_val(current, index - first)] if index != first else []
            seq.append(_val(count, 1))
            if index != last:
                seq.append(_val(current, last - index))
        data = b"".join([_BYTE[o] if o < 0x100 else o.to_bytes(2, "big") for o in seq])
        delta = len(data) - oplen
        if delta > 0 and end + delta > max_bytes:
            return _PROMOTE
        if p + oplen > end:  # a cut XZERO: Redis's length counts it as two bytes
            value[p:] = data[:len(data) - 1]
        else:
            value[p:p + oplen] = data
    p = prev if prev >= 0 else HEADER
    end = len(value)
    scan = 5
    while p < end and scan > 0:
        scan -= 1
        op = value[p]
        if op < 0x80:
            p += 2 if op >= 0x40 else 1
            continue
        if p + 1 < end and value[p + 1] >= 0x80:
            nxt = value[p + 1]
            if (op ^ nxt) & 0x7C == 0 and (op & 3) + (nxt & 3) + 2 <= 4:
                value[p + 1] = _val(((op >> 2) & 31) + 1, (op & 3) + (nxt & 3) + 2)
                del value[p]
                end -= 1
                continue
        p += 1
    return 1


# ------------------------------------------------------------- adding


class Decoded:
    """What was decoded of an HLL's body (its registers, one byte each;
    its sparse opcodes), kept while the body stays as it was: a PFADD of
    one element or a PFCOUNT of several keys then costs a comparison of
    the body rather than a walk over it.  Keyed by the value's identity
    and checked against a copy of its encoding and body, so a stale or
    reused entry is never believed; header-only writes (the cached
    count) keep it."""

    __slots__ = ("encoding", "body", "raw", "sparse")

    def __init__(self, value: bytes | bytearray, raw: bytearray | None,
                 sparse: Sparse | None) -> None:
        self.encoding = value[4]
        self.body = bytes(value[HEADER:])
        self.raw = raw
        self.sparse = sparse


DECODED_MAX = 64  # HLLs whose registers are kept decoded (~30 KB each at most)
_decoded: dict[int, Decoded] = {}


def decoded(value: bytes | bytearray) -> Decoded | None:
    entry = _decoded.get(id(value))
    if entry is None or entry.encoding != value[4] or value[HEADER:] != entry.body:
        return None
    return entry


def remember(value: bytes | bytearray, raw: bytearray | None, sparse: Sparse | None) -> None:
    key = id(value)
    _decoded.pop(key, None)
    if len(_decoded) >= DECODED_MAX:
        del _decoded[next(iter(_decoded))]
    _decoded[key] = Decoded(value, raw, sparse)


def registers_of(value: bytes | bytearray) -> bytearray | None:
    """registers(), from the decoded entry while the body is unchanged
    (the caller must not change the array it gets)."""
    entry = decoded(value)
    if entry is not None and entry.raw is not None:
        return entry.raw
    raw = registers(value)
    if raw is not None:
        remember(value, raw, entry.sparse if entry is not None else None)
    return raw


def add(value: bytearray, elements: list[bytes], max_bytes: int) -> tuple[int, bool]:
    """PFADD's loop: (registers updated, or -1 if the HLL turned out
    corrupted; whether its sparse body was rewritten by the byte-level
    path, whose bytes the caller logs as they are)."""
    entry = decoded(value)
    raw = entry.raw if entry is not None else None
    updated = 0
    if value[4] == SPARSE:
        sparse = entry.sparse if entry is not None else None
        if sparse is None:
            sparse = Sparse.decode(value)
        if sparse is None:
            return _add_to_unclean(value, elements, max_bytes), True
        for n, element in enumerate(elements):
            index, count = pattern(element)
            if raw is not None and count > raw[index]:
                raw[index] = count
            status = sparse.set(index, count, max_bytes)
            if status == _PROMOTE:
                value[HEADER:] = dense_body(sparse.registers())
                value[4] = DENSE
                dense_set(value, index, count)
                updated += 1 + _add_dense(value, elements[n + 1:], raw)
                remember(value, raw, None)
                return updated, False
            updated += status
        if updated:
            value[HEADER:] = sparse.encode()
            remember(value, raw, sparse)
        return updated, False
    updated = _add_dense(value, elements, raw)
    if updated:
        remember(value, raw, None)
    return updated, False


def _add_dense(value: bytearray, elements: list[bytes], raw: bytearray | None) -> int:
    updated = 0
    for element in elements:
        index, count = pattern(element)
        if raw is not None and count > raw[index]:
            raw[index] = count
        updated += dense_set(value, index, count)
    return updated


def _add_to_unclean(value: bytearray, elements: list[bytes], max_bytes: int) -> int:
    updated = 0
    for element in elements:
        index, count = pattern(element)
        if value[4] == DENSE:
            updated += dense_set(value, index, count)
            continue
        status = sparse_set_bytes(value, index, count, max_bytes)
        if status == -1:
            return -1
        if status == _PROMOTE:
            if not to_dense(value):
                return -1
            dense_set(value, index, count)
            status = 1
        updated += status
    return updated


def set_registers(value: bytearray, raw: bytes | bytearray, max_bytes: int) -> None:
    """PFMERGE's write: every non-zero register of ``raw`` into ``value``
    (which ``raw`` already includes, so dense registers simply become it)."""
    if value[4] == DENSE:
        value[HEADER:] = dense_body(raw)
        return
    sparse = Sparse.decode(value)
    assert sparse is not None  # (validated as a source)
    for index in range(REGISTERS):
        count = raw[index]
        if count and sparse.set(index, count, max_bytes) == _PROMOTE:
            merged = sparse.registers()
            for j in range(index, REGISTERS):
                if raw[j] > merged[j]:
                    merged[j] = raw[j]
            value[HEADER:] = dense_body(merged)
            value[4] = DENSE
            return
    value[HEADER:] = sparse.encode()


# ------------------------------------------------------------- counting


def registers(value: bytes | bytearray) -> bytearray | None:
    """The registers of a valid HLL of either encoding (None: corrupted)."""
    if value[4] == DENSE:
        return dense_registers(value)
    return sparse_registers(value)


def merge_into(acc: bytearray, raw: bytes | bytearray) -> bytearray:
    """Register-wise max of two 16384-byte register arrays (values below
    64), with big-integer arithmetic on 8-bit lanes: a lane of
    (a | 0x80) - b keeps its 0x80 bit exactly where a >= b."""
    a = int.from_bytes(acc, "little")
    b = int.from_bytes(raw, "little")
    high = _HIGH_BITS
    a_ge_b = (((a | high) - b) & high) >> 7
    keep_a = a_ge_b * 0xFF
    merged = (a & keep_a) | (b & ~keep_a & _ALL_LANES)
    return bytearray(merged.to_bytes(REGISTERS, "little"))


_ALL_LANES = (1 << (8 * REGISTERS)) - 1
_HIGH_BITS = int.from_bytes(b"\x80" * REGISTERS, "little")


_LANES_7F = int.from_bytes(b"\x7f" * REGISTERS, "little")
_LANES_01 = int.from_bytes(b"\x01" * REGISTERS, "little")


def histogram(raw: bytes | bytearray) -> list[int]:
    """Registers per value, counted on 8-bit lanes of one big integer: a
    lane of (registers ^ v) + 0x7f keeps its 0x80 bit clear exactly where
    the register is v.  Values are counted upwards until all 16384
    registers are (they rarely exceed 20)."""
    lanes = int.from_bytes(raw, "little")
    hist = [0] * 64
    seen = 0
    for v in range(64):
        if seen == REGISTERS:
            break
        n = REGISTERS - (((lanes ^ _LANES_01 * v) + _LANES_7F) & _HIGH_BITS).bit_count()
        hist[v] = n
        seen += n
    return hist


def _sigma(x: float) -> float:
    if x == 1.0:
        return math.inf
    y = 1.0
    z = x
    while True:
        x *= x
        z_prime = z
        z += x * y
        y += y
        if z_prime == z:
            return z


def _tau(x: float) -> float:
    if x == 0.0 or x == 1.0:
        return 0.0
    y = 1.0
    z = 1 - x
    while True:
        x = math.sqrt(x)
        z_prime = z
        y *= 0.5
        z -= math.pow(1 - x, 2) * y
        if z_prime == z:
            return z / 3


def estimate(hist: list[int]) -> int:
    """hllCount's estimate from the register histogram (Ertl)."""
    m = float(REGISTERS)
    z = m * _tau((m - hist[Q + 1]) / m)
    for j in range(Q, 0, -1):
        z += hist[j]
        z *= 0.5
    z += m * _sigma(hist[0] / m)
    e = ALPHA_INF * m * m / z
    rounded = math.floor(e)  # llroundl: halves away from zero
    if e - rounded >= 0.5:
        rounded += 1
    return int(rounded)


def count(value: bytes | bytearray) -> int | None:
    """The estimate of one valid HLL (None: its sparse body is corrupted)."""
    entry = decoded(value)
    if entry is not None and entry.raw is not None:
        return estimate(histogram(entry.raw))
    if value[4] == DENSE:
        return estimate(histogram(registers_of(value) or b""))
    hist = sparse_histogram(value)
    return None if hist is None else estimate(hist)


def decode_sparse(value: bytes | bytearray) -> bytes:
    """PFDEBUG DECODE: ``z:len``, ``Z:len`` and ``v:value,len`` per opcode."""
    words = []
    p = HEADER
    end = len(value)
    while p < end:
        op = value[p]
        if op < 0x40:
            words.append(b"z:%d" % (op + 1))
            p += 1
        elif op < 0x80:
            words.append(b"Z:%d" % (((op & 63) << 8 | (value[p + 1] if p + 1 < end else 0)) + 1))
            p += 2
        else:
            words.append(b"v:%d,%d" % (((op >> 2) & 31) + 1, (op & 3) + 1))
            p += 1
    return b" ".join(words)
