"""Bitmap commands on strings: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP,
BITFIELD and BITFIELD_RO, with Redis 7.0's replies and errors (bitops.c).

A string that a bit command writes becomes a ``bytearray`` changed in
place (Redis's dbUnshareStringValue: "raw"), grown with zeros as far as
the highest bit written; the growth is reported to maxmemory.  Offsets
are refused past proto-max-bulk-len bytes (2^32-1 bits by default), except
while the AOF is replayed (Redis's mustObeyClient).

AOF: every write here is deterministic given the keyspace, so it is logged
as it came, and only when it changed something (a SETBIT or BITFIELD that
leaves the bytes as they were is not logged, as Redis does not propagate
it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import SYNTAX, CommandError
from ..command import Commands
from .args import int_arg
from .bits import (FAIL, SAT, WRAP, first_bit, get_field, popcount, set_field,
                   signed_overflow, to_int64, unsigned_overflow)
from .numbers import parse_ll
from .types import WRONGTYPE

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: group generic, the key at argv[1]
key_command = COMMANDS.command

_BAD_OFFSET = "ERR bit offset is not an integer or out of range"
_BAD_BIT = "ERR bit is not an integer or out of range"
_BAD_TYPE = ("ERR Invalid bitfield type. Use something like i16 u8. "
             "Note that u64 is not supported but i64 is.")
_OVERFLOWS = {b"WRAP": WRAP, b"SAT": SAT, b"FAIL": FAIL}
_BITOPS = (b"AND", b"OR", b"XOR", b"NOT")


def _string_or_none(node: Node, client: Client, key: bytes) -> bytes | bytearray | None:
    ks = node.keyspace
    value = ks.lookup(ks.dbs[client.db], key)
    if value is None or type(value) is bytes or type(value) is bytearray:
        return value
    raise CommandError(WRONGTYPE)


def _bit_offset(node: Node, arg: bytes, bits: int = 0) -> int:
    """getBitOffsetFromArgument: a bit offset, ``#n`` meaning n * bits for
    BITFIELD (``bits`` > 0), at most proto-max-bulk-len bytes in."""
    hashed = bits > 0 and arg[:1] == b"#"
    offset = parse_ll(arg[1:] if hashed else arg)
    if offset is None:
        raise CommandError(_BAD_OFFSET)
    if hashed:
        offset = to_int64(offset * bits)  # (C's long long multiplication)
    if offset < 0 or ((offset >> 3) >= node.config.proto_max_bulk_len
                      and not node.keyspace.replaying):
        raise CommandError(_BAD_OFFSET)
    return offset


def _writable(node: Node, client: Client, key: bytes, max_bit: int) -> tuple[bytearray, int]:
    """lookupStringForBitCommand: the string at ``key`` as a bytearray at
    least long enough for bit ``max_bit`` (created or zero-padded), and
    whether that created or grew it."""
    ks = node.keyspace
    db = ks.dbs[client.db]
    value = _string_or_none(node, client, key)
    size = (max_bit >> 3) + 1
    if value is None:
        grown = bytearray(size)
        ks.store(db, key, grown)
        return grown, 1
    if type(value) is bytearray:
        grown = value
    else:
        grown = bytearray(value)
        db.keys[key] = grown  # same key, same TTL, same size
    if len(grown) >= size:
        return grown, 0
    added = size - len(grown)
    grown.extend(bytes(added))
    ks.grow(db, added)
    return grown, 1


def _written(node: Node, client: Client, argv: list[bytes]) -> None:
    """A bit command changed the string at argv[1]: WATCH and the AOF."""
    ks = node.keyspace
    db = ks.dbs[client.db]
    if db.watched:
        ks.touched(db, argv[1])
    ks.log(db, *argv)


@key_command("SETBIT", 4, "write denyoom")
def setbit(node: Node, client: Client, argv: list[bytes]) -> bytes:
    offset = _bit_offset(node, argv[2])
    on = parse_ll(argv[3])
    if on is None or on & ~1:
        raise CommandError(_BAD_BIT)
    ks = node.keyspace
    db = ks.dbs[client.db]
    key = argv[1]
    if key not in db.keys:
        # A new bitmap (the usual case of per-user flags), inline as SET's.
        data = bytearray((offset >> 3) + 1)
        if on:
            data[offset >> 3] = 0x80 >> (offset & 7)
        ks.store(db, key, data)
        ks.log(db, *argv)
        return resp.ZERO
    data, dirty = _writable(node, client, key, offset)
    byte = offset >> 3
    mask = 0x80 >> (offset & 7)
    old = data[byte] & mask
    if dirty or bool(old) != bool(on):
        data[byte] = data[byte] | mask if on else data[byte] & ~mask
        _written(node, client, argv)
    return resp.ONE if old else resp.ZERO


@key_command("GETBIT", 3, "readonly fast")
def getbit(node: Node, client: Client, argv: list[bytes]) -> bytes:
    offset = _bit_offset(node, argv[2])
    value = _string_or_none(node, client, argv[1])
    byte = offset >> 3
    if value is None or byte >= len(value):
        return resp.ZERO
    return resp.ONE if value[byte] & (0x80 >> (offset & 7)) else resp.ZERO


def _bit_or_byte(arg: bytes) -> bool:
    word = arg.upper()
    if word == b"BIT":
        return True
    if word == b"BYTE":
        return False
    raise CommandError(SYNTAX)


def _edge_masks(start: int, end: int) -> tuple[int, int, int, int]:
    """A bit range as its bytes and the masks of the bits outside it in its
    first and last bytes (Redis's first/last_byte_neg_mask)."""
    first_mask = ~((1 << (8 - (start & 7))) - 1) & 0xFF
    last_mask = (1 << (7 - (end & 7))) - 1
    return start >> 3, end >> 3, first_mask, last_mask


@key_command("BITCOUNT", -2, "readonly")
def bitcount(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """BITCOUNT key [start end [BYTE|BIT]]"""
    value = _string_or_none(node, client, argv[1])
    if value is None:
        return resp.ZERO  # before the range is read, as Redis
    argc = len(argv)
    first_mask = last_mask = 0
    if argc == 4 or argc == 5:
        start = int_arg(argv[2])
        end = int_arg(argv[3])
        if start < 0 and end < 0 and start > end:
            return resp.ZERO
        isbit = argc == 5 and _bit_or_byte(argv[4])
        total = len(value) * 8 if isbit else len(value)
        start, end = _clamp(start, end, total)
        if isbit and start <= end:
            start, end, first_mask, last_mask = _edge_masks(start, end)
    elif argc == 2:
        start, end = 0, len(value) - 1
    else:
        raise CommandError(SYNTAX)
    if start > end:
        return resp.ZERO
    count = popcount(value, start, end)
    if first_mask:
        count -= (value[start] & first_mask).bit_count()
    if last_mask:
        count -= (value[end] & last_mask).bit_count()
    return b":%d\r\n" % count


def _clamp(start: int, end: int, total: int) -> tuple[int, int]:
    """Negative indexes from the end, then both into 0..total-1."""
    if start < 0:
        start += total
    if end < 0:
        end += total
    start = max(start, 0)
    end = max(end, 0)
    if end >= total:
        end = total - 1
    return start, end


@key_command("BITPOS", -3, "readonly")
def bitpos(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """BITPOS key bit [start [end [BYTE|BIT]]]"""
    bit = int_arg(argv[2])
    if bit != 0 and bit != 1:
        raise CommandError("ERR The bit argument must be 1 or 0.")
    value = _string_or_none(node, client, argv[1])
    if value is None:
        return b":-1\r\n" if bit else resp.ZERO  # an endless run of zeros
    argc = len(argv)
    end_given = False
    first_mask = last_mask = 0
    if 4 <= argc <= 6:
        start = int_arg(argv[3])
        isbit = argc == 6 and _bit_or_byte(argv[5])
        total = len(value)
        if argc >= 5:
            end = int_arg(argv[4])
            end_given = True
        else:
            end = total * 8 + 7 if isbit else total - 1
        if isbit:
            total *= 8
        start, end = _clamp(start, end, total)
        if isbit and start <= end:
            start, end, first_mask, last_mask = _edge_masks(start, end)
    elif argc == 3:
        start, end = 0, len(value) - 1
    else:
        raise CommandError(SYNTAX)
    if start > end:
        return b":-1\r\n"  # an empty range has neither a 0 nor a 1
    pos, start, size = _bitpos_range(value, bit, start, end, first_mask, last_mask)
    # With an explicit end, the bits right of the range are not zeros.
    if end_given and bit == 0 and pos == size * 8:
        return b":-1\r\n"
    if pos != -1:
        pos += start * 8
    return b":%d\r\n" % pos


def _bitpos_range(value: bytes | bytearray, bit: int, start: int, end: int,
                  first_mask: int, last_mask: int) -> tuple[int, int, int]:
    """Redis's bitposCommand search of bytes start..end whose first and
    last bytes have the bits outside the range masked: (the position found
    from the byte it stopped counting at, that byte, the bytes it had
    left), which is what its reply is made of."""
    size = end - start + 1
    if first_mask:
        edge = value[start] & ~first_mask if bit else value[start] | first_mask
        if last_mask and size == 1:
            edge = edge & ~last_mask if bit else edge | last_mask
        pos = first_bit(bytes((edge & 0xFF,)), bit)
        if size == 1 or (pos != -1 and pos != 8):
            return pos, start, size
        start += 1
        size -= 1
    middle = size - (1 if last_mask else 0)
    if middle > 0:
        pos = first_bit(value[start:start + middle], bit)
        if size == middle or (pos != -1 and pos != middle * 8):
            return pos, start, size
        start += middle
        size -= middle
    edge = value[end] & ~last_mask if bit else value[end] | last_mask
    return first_bit(bytes((edge & 0xFF,)), bit), start, size


@key_command("BITOP", -4, "write denyoom", keys=(2, -1, 1))
def bitop(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """BITOP AND|OR|XOR|NOT destkey key [key ...]"""
    op = argv[1].upper()
    if op not in _BITOPS:
        raise CommandError(SYNTAX)
    if op == b"NOT" and len(argv) != 4:
        raise CommandError("ERR BITOP NOT must be called with a single source key.")
    sources = [_string_or_none(node, client, key) or b"" for key in argv[3:]]
    size = max(len(s) for s in sources)
    ks = node.keyspace
    db = ks.dbs[client.db]
    dest = argv[2]
    if not size:
        if ks.lookup(db, dest) is not None:
            ks.delete(db, dest)
            ks.log(db, *argv)
        return resp.ZERO
    # Each source as one big integer, left-aligned: shorter ones are
    # padded with zero bytes on the right.
    numbers = [int.from_bytes(s, "big") << (8 * (size - len(s))) for s in sources]
    result = numbers[0]
    if op == b"AND":
        for n in numbers[1:]:
            result &= n
    elif op == b"OR":
        for n in numbers[1:]:
            result |= n
    elif op == b"XOR":
        for n in numbers[1:]:
            result ^= n
    else:
        result = ~result & ((1 << (8 * size)) - 1)
    ks.store(db, dest, result.to_bytes(size, "big"))
    ks.log(db, *argv)
    return b":%d\r\n" % size


class _FieldOp:
    """One GET, SET or INCRBY of a BITFIELD (Redis's bitfieldOp)."""
    __slots__ = ("write", "incr", "signed", "bits", "offset", "value", "overflow")

    def __init__(self, write: bool, incr: bool, signed: bool, bits: int, offset: int,
                 value: int, overflow: int) -> None:
        self.write = write
        self.incr = incr
        self.signed = signed
        self.bits = bits
        self.offset = offset
        self.value = value
        self.overflow = overflow


def _field_type(arg: bytes) -> tuple[bool, int]:
    """getBitfieldTypeFromArgument: i1..i64 or u1..u63."""
    sign = arg[:1]
    if sign != b"i" and sign != b"u":
        raise CommandError(_BAD_TYPE)
    bits = parse_ll(arg[1:].split(b"\x00", 1)[0])  # (read as a C string)
    signed = sign == b"i"
    if bits is None or bits < 1 or bits > (64 if signed else 63):
        raise CommandError(_BAD_TYPE)
    return signed, bits


def _field_ops(node: Node, argv: list[bytes]) -> list[_FieldOp]:
    ops: list[_FieldOp] = []
    overflow = WRAP
    j = 2
    argc = len(argv)
    while j < argc:
        left = argc - j - 1
        sub = argv[j].upper()
        if sub == b"OVERFLOW" and left >= 1:
            mode = _OVERFLOWS.get(argv[j + 1].upper())
            if mode is None:
                raise CommandError("ERR Invalid OVERFLOW type specified")
            overflow = mode
            j += 2
            continue
        if not ((sub == b"GET" and left >= 2) or
                ((sub == b"SET" or sub == b"INCRBY") and left >= 3)):
            raise CommandError(SYNTAX)
        signed, bits = _field_type(argv[j + 1])
        offset = _bit_offset(node, argv[j + 2], bits)
        write = sub != b"GET"
        value = int_arg(argv[j + 3]) if write else 0
        ops.append(_FieldOp(write, sub == b"INCRBY", signed, bits, offset, value, overflow))
        j += 4 if write else 3
    return ops


def _bitfield(node: Node, client: Client, argv: list[bytes], readonly_command: bool) -> bytes:
    ops = _field_ops(node, argv)
    writes = [op for op in ops if op.write]
    dirty = 0
    data: bytes | bytearray | None
    if not writes:
        data = _string_or_none(node, client, argv[1])
    elif readonly_command:
        raise CommandError("ERR BITFIELD_RO only supports the GET subcommand")
    else:
        highest = max(op.offset + op.bits - 1 for op in writes)
        data, dirty = _writable(node, client, argv[1], highest)
    out = [b"*%d\r\n" % len(ops)]
    changes = 0
    for op in ops:
        if not op.write:
            out.append(b":%d\r\n" % get_field(data or b"", op.offset, op.bits, op.signed))
            continue
        assert type(data) is bytearray
        old = get_field(data, op.offset, op.bits, op.signed)
        check = signed_overflow if op.signed else unsigned_overflow
        if op.incr:
            overflowed, limit = check(old, op.value, op.bits, op.overflow)
            new = limit if overflowed else old + op.value
            reply = new
        else:
            overflowed, limit = check(op.value, 0, op.bits, op.overflow)
            new = limit if overflowed else op.value
            reply = old
        if overflowed and op.overflow == FAIL:
            out.append(resp.null(client.proto))
            continue
        out.append(b":%d\r\n" % reply)
        set_field(data, op.offset, op.bits, new)
        if dirty or old != new:
            changes += 1
    if changes or dirty:
        node.keyspace.changes += max(changes - 1, 0)  # (Redis's dirty += changes)
        _written(node, client, argv)
    return b"".join(out)


@key_command("BITFIELD", -2, "write denyoom")
def bitfield(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """BITFIELD key [GET type offset | SET type offset value |
    INCRBY type offset increment | OVERFLOW WRAP|SAT|FAIL ...]"""
    return _bitfield(node, client, argv, False)


@key_command("BITFIELD_RO", -2, "readonly fast")
def bitfield_ro(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """BITFIELD_RO key [GET type offset ...]"""
    return _bitfield(node, client, argv, True)

