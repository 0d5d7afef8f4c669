"""Bits of a string, as Redis's bitops.c numbers them: bit 0 is the most
significant bit of the first byte.  Pure functions on bytes, no keyspace:
population count, the first set or clear bit, and BITFIELD's integers of
1 to 64 bits at any bit offset with their overflow rules.

Python's big integers do the byte-at-a-time work in C: a run of bytes read
as one big-endian integer has its bits in Redis's order, so a popcount is
``int.bit_count`` and a field is a shift and a mask.
"""

from __future__ import annotations

U64 = (1 << 64) - 1
I64_MIN = -(1 << 63)

# BITFIELD's OVERFLOW modes (BFOVERFLOW_*)
WRAP, SAT, FAIL = 0, 1, 2


def popcount(data: bytes | bytearray, start: int, end: int) -> int:
    """Bits set in data[start:end + 1] (redisPopcount)."""
    return int.from_bytes(data[start:end + 1], "big").bit_count()


def first_bit(data: bytes | bytearray, bit: int) -> int:
    """Where the first ``bit`` (1 or 0) of ``data`` is (redisBitpos): -1
    if there is no 1; len(data) * 8 if there is no 0 (the string is taken
    as padded with zeros on the right)."""
    skip = b"\x00" if bit else b"\xff"
    rest = data.lstrip(skip)
    if not rest:
        return -1 if bit else len(data) * 8
    byte = rest[0] if bit else ~rest[0] & 0xFF
    return (len(data) - len(rest)) * 8 + 8 - byte.bit_length()


def to_int64(value: int) -> int:
    """``value`` as C's int64_t holds it after a wrapping operation."""
    value &= U64
    return value - (1 << 64) if value >> 63 else value


def get_field(data: bytes | bytearray, offset: int, bits: int, signed: bool) -> int:
    """The ``bits``-wide integer at bit ``offset``; bytes past the end of
    ``data`` read as zeros (BITFIELD GET's zero-padded copy)."""
    first = offset >> 3
    last = (offset + bits - 1) >> 3
    chunk = bytes(data[first:last + 1])
    if len(chunk) < last + 1 - first:
        chunk = chunk.ljust(last + 1 - first, b"\x00")
    value = (int.from_bytes(chunk, "big") >> ((last + 1) * 8 - offset - bits)) & ((1 << bits) - 1)
    if signed and value >> (bits - 1):
        value -= 1 << bits
    return value


def set_field(data: bytearray, offset: int, bits: int, value: int) -> None:
    """Store the low ``bits`` bits of ``value`` at bit ``offset`` (``data``
    already long enough)."""
    first = offset >> 3
    last = (offset + bits - 1) >> 3
    shift = (last + 1) * 8 - offset - bits
    mask = ((1 << bits) - 1) << shift
    chunk = int.from_bytes(data[first:last + 1], "big")
    chunk = (chunk & ~mask) | ((value << shift) & mask)
    data[first:last + 1] = chunk.to_bytes(last + 1 - first, "big")


def unsigned_overflow(value: int, incr: int, bits: int, mode: int) -> tuple[int, int]:
    """checkUnsignedBitfieldOverflow: (1 overflow, -1 underflow or 0, the
    value to store instead under WRAP or SAT).  ``value`` is C's uint64_t
    (a negative SET value arrives as its two's complement)."""
    value &= U64
    top = (1 << bits) - 1
    max_incr = to_int64(top - value)
    min_incr = to_int64(-value)
    if value > top or (incr > 0 and incr > max_incr):
        if mode == WRAP:
            return 1, (value + incr) & top
        return 1, top
    if incr < 0 and incr < min_incr:
        if mode == WRAP:
            return 1, (value + incr) & top
        return -1, 0
    return 0, 0


def signed_overflow(value: int, incr: int, bits: int, mode: int) -> tuple[int, int]:
    """checkSignedBitfieldOverflow, with C's wrapping int64 arithmetic in
    its bounds (so a SET far out of range may saturate at the top)."""
    top = (1 << (bits - 1)) - 1
    bottom = -top - 1
    max_incr = to_int64(top - value)
    min_incr = to_int64(bottom - value)
    if (value > top or (bits != 64 and incr > max_incr)
            or (value >= 0 and incr > 0 and incr > max_incr)):
        return 1, _signed_limit(value, incr, bits, mode, top)
    if (value < bottom or (bits != 64 and incr < min_incr)
            or (value < 0 and incr < 0 and incr < min_incr)):
        limit = _signed_limit(value, incr, bits, mode, bottom)
        return (1 if mode == WRAP else -1), limit
    return 0, 0


def _signed_limit(value: int, incr: int, bits: int, mode: int, saturated: int) -> int:
    if mode != WRAP:
        return saturated
    total = (value + incr) & U64
    if bits < 64:
        mask = (U64 << bits) & U64
        total = total | mask if total & (1 << (bits - 1)) else total & ~mask
    return to_int64(total)
