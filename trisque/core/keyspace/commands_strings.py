"""String commands: GET, SET, SETNX, SETEX, PSETEX, GETSET, GETDEL, GETEX,
MGET, MSET, MSETNX, INCR, INCRBY, DECR, DECRBY, INCRBYFLOAT, APPEND,
STRLEN, GETRANGE (SUBSTR), SETRANGE, with Redis 7's replies and errors.

GET, SET and INCR are hot: they reach the db's dict directly and build
their replies with one format, as ADDJOB does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import CommandError, wrong_arity
from ..command import Commands
from .args import (EX, EXAT, GET, KEEPTTL, NX, PERSIST, PX, PXAT, XX, expire_at_ms,
                   int_arg, string_options)
from .keyspace import EXPIRE_OVERHEAD, KEY_OVERHEAD
from .numbers import (INT64_MAX, INT64_MIN, add_long_double, format_long_double,
                      parse_ll, parse_long_double)
from .strings import STRING_OVERHEAD
from .types import WRONGTYPE, memory_of

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: group generic, the key at argv[1]
key_command = COMMANDS.command

_EMPTY_BULK = b"$0\r\n\r\n"
_NOT_FLOAT = "ERR value is not a valid float"
_TOO_BIG = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"


def _bulk(value: bytes | bytearray) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(value), value)


def _string_or_none(node: Node, client: Client, key: bytes) -> bytes | bytearray | None:
    """The string at ``key``, None if there is none; WRONGTYPE otherwise."""
    ks = node.keyspace
    value = ks.lookup(ks.dbs[client.db], key)
    if value is None or isinstance(value, (bytes, bytearray)):
        return value
    raise CommandError(WRONGTYPE)


@key_command("GET", 2, "readonly fast")
def get(node: Node, client: Client, argv: list[bytes]) -> bytes:
    ks = node.keyspace
    db = ks.dbs[client.db]
    key = argv[1]
    value = db.keys.get(key)
    if value is None or (db.expires and ks.lookup(db, key) is None):
        return resp.null(client.proto)
    if type(value) is bytes or type(value) is bytearray:
        return b"$%d\r\n%s\r\n" % (len(value), value)
    raise CommandError(WRONGTYPE)


@key_command("SET", -3, "write denyoom")
def set_(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    """SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]"""
    if len(argv) != 3:
        flags, expire = string_options(argv, 3, True)
        return _set_generic(node, client, flags, argv[1], argv[2], expire, "set",
                            resp.OK, None)
    # Plain SET, inline: replace whatever is there, TTL gone.
    ks = node.keyspace
    db = ks.dbs[client.db]
    key, value = argv[1], argv[2]
    keys = db.keys
    old = keys.get(key)
    if old is None:
        delta = KEY_OVERHEAD + len(key) + STRING_OVERHEAD + len(value)
        if ks.notify_flags:
            ks.created.append((db.id, key))  # (Keyspace.store's "new", inline)
    else:
        if type(old) is bytes:  # (a string's memory_of, without the type's lookup)
            delta = len(value) - len(old)
        else:
            delta = STRING_OVERHEAD + len(value) - memory_of(old)
        if db.expires and db.remove_expire(key):
            delta -= EXPIRE_OVERHEAD
    keys[key] = value
    db.memory += delta
    node.memory_changed(delta)
    if db.watched:
        ks.touched(db, key)
    if old is not None and ks.blocking.count:
        ks.blocking.replaced(db, key, old)  # (a blocked XREADGROUP's stream)
    ks.log(db, b"SET", key, value)
    return resp.OK


def _set_generic(node: Node, client: Client, flags: int, key: bytes, value: bytes,
                 expire: bytes | None, name: str, ok_reply: bytes,
                 abort_reply: bytes | None) -> bytes | None:
    """Redis's setGenericCommand: every SET form, SETNX, SETEX, PSETEX."""
    ks = node.keyspace
    db = ks.dbs[client.db]
    when = expire_at_ms(node, expire, flags, name) if expire is not None else None
    old = ks.lookup(db, key)
    if flags & GET:
        if old is not None and not isinstance(old, (bytes, bytearray)):
            raise CommandError(WRONGTYPE)
        old_reply = resp.null(client.proto) if old is None else _bulk(old)
    if (flags & NX and old is not None) or (flags & XX and old is None):
        if flags & GET:
            return old_reply
        return abort_reply if abort_reply is not None else resp.null(client.proto)
    keepttl = bool(flags & KEEPTTL)
    ks.store(db, key, value, keepttl)
    if when is not None:
        ks.set_expire(db, key, when)
        # Relative times become absolute: the record replays the same later.
        ks.log(db, b"SET", key, value, b"PXAT", b"%d" % when)
    elif keepttl:
        ks.log(db, b"SET", key, value, b"KEEPTTL")
    else:
        ks.log(db, b"SET", key, value)
    return old_reply if flags & GET else ok_reply


@key_command("SETNX", 3, "write denyoom fast")
def setnx(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    return _set_generic(node, client, NX, argv[1], argv[2], None, "setnx",
                        resp.ONE, resp.ZERO)


@key_command("SETEX", 4, "write denyoom")
def setex(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    return _set_generic(node, client, EX, argv[1], argv[3], argv[2], "setex",
                        resp.OK, None)


@key_command("PSETEX", 4, "write denyoom")
def psetex(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    return _set_generic(node, client, PX, argv[1], argv[3], argv[2], "psetex",
                        resp.OK, None)


@key_command("GETSET", 3, "write denyoom fast")
def getset(node: Node, client: Client, argv: list[bytes]) -> bytes:
    old = _string_or_none(node, client, argv[1])
    ks = node.keyspace
    db = ks.dbs[client.db]
    ks.store(db, argv[1], argv[2])
    ks.log(db, b"SET", argv[1], argv[2])
    return resp.null(client.proto) if old is None else _bulk(old)


@key_command("GETDEL", 2, "write fast")
def getdel(node: Node, client: Client, argv: list[bytes]) -> bytes:
    old = _string_or_none(node, client, argv[1])
    if old is None:
        return resp.null(client.proto)
    ks = node.keyspace
    db = ks.dbs[client.db]
    ks.delete(db, argv[1])
    ks.log(db, b"DEL", argv[1])
    return _bulk(old)


@key_command("GETEX", -2, "write fast")
def getex(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """GETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST]"""
    flags, expire = string_options(argv, 2, False)
    key = argv[1]
    value = _string_or_none(node, client, key)
    if value is None:
        return resp.null(client.proto)
    ks = node.keyspace
    db = ks.dbs[client.db]
    reply = _bulk(value)
    if expire is not None:
        when = expire_at_ms(node, expire, flags, "getex")
        if flags & (EXAT | PXAT) and when <= node.now_ms() and not ks.replaying:
            ks.delete(db, key)  # already past: gone now (checkAlreadyExpired)
            ks.log(db, b"DEL", key)
        else:
            ks.set_expire(db, key, when)
            ks.log(db, b"PEXPIREAT", key, b"%d" % when)
    elif flags & PERSIST and ks.remove_expire(db, key):
        ks.log(db, b"PERSIST", key)
    return reply


@key_command("MGET", -2, "readonly fast", keys=(1, -1, 1))
def mget(node: Node, client: Client, argv: list[bytes]) -> bytes:
    ks = node.keyspace
    db = ks.dbs[client.db]
    null = resp.null(client.proto)
    out = [b"*%d\r\n" % (len(argv) - 1)]
    for key in argv[1:]:
        value = ks.lookup(db, key)
        if type(value) is bytes or type(value) is bytearray:
            out.append(b"$%d\r\n%s\r\n" % (len(value), value))
        else:
            out.append(null)  # missing, or not a string: nil, as Redis
    return b"".join(out)


def _mset_pairs(argv: list[bytes], name: str) -> None:
    if len(argv) % 2 == 0:
        raise CommandError(wrong_arity(name))


@key_command("MSET", -3, "write denyoom", keys=(1, -1, 2))
def mset(node: Node, client: Client, argv: list[bytes]) -> bytes:
    _mset_pairs(argv, "mset")
    ks = node.keyspace
    db = ks.dbs[client.db]
    for i in range(1, len(argv), 2):
        ks.store(db, argv[i], argv[i + 1])
    ks.log(db, *argv)
    return resp.OK


@key_command("MSETNX", -3, "write denyoom", keys=(1, -1, 2))
def msetnx(node: Node, client: Client, argv: list[bytes]) -> bytes:
    _mset_pairs(argv, "msetnx")
    ks = node.keyspace
    db = ks.dbs[client.db]
    for i in range(1, len(argv), 2):
        if ks.lookup(db, argv[i]) is not None:
            return resp.ZERO
    for i in range(1, len(argv), 2):
        ks.store(db, argv[i], argv[i + 1])
    ks.log(db, b"MSET", *argv[1:])
    return resp.ONE


def _incr(node: Node, client: Client, argv: list[bytes], by: int) -> bytes:
    """Redis's incrDecrCommand: the integer at key (0 if none) plus ``by``;
    the TTL stays."""
    ks = node.keyspace
    db = ks.dbs[client.db]
    key = argv[1]
    value = ks.lookup(db, key)
    if value is None:
        current = 0
    elif type(value) is bytes or type(value) is bytearray:
        parsed = parse_ll(value)
        if parsed is None:
            raise CommandError("ERR value is not an integer or out of range")
        current = parsed
    else:
        raise CommandError(WRONGTYPE)
    result = current + by
    if result > INT64_MAX or result < INT64_MIN:
        raise CommandError("ERR increment or decrement would overflow")
    data = b"%d" % result
    if value is None:
        ks.store(db, key, data)
    else:
        db.keys[key] = data  # same key, same TTL
        delta = len(data) - len(value)
        if delta:
            ks.grow(db, delta)
        if db.watched:
            ks.touched(db, key)
    ks.log(db, *argv)
    return b":%d\r\n" % result


@key_command("INCR", 2, "write denyoom fast")
def incr(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _incr(node, client, argv, 1)


@key_command("DECR", 2, "write denyoom fast")
def decr(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _incr(node, client, argv, -1)


@key_command("INCRBY", 3, "write denyoom fast")
def incrby(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _incr(node, client, argv, int_arg(argv[2]))


@key_command("DECRBY", 3, "write denyoom fast")
def decrby(node: Node, client: Client, argv: list[bytes]) -> bytes:
    by = int_arg(argv[2])
    if by == INT64_MIN:
        raise CommandError("ERR decrement would overflow")
    return _incr(node, client, argv, -by)


@key_command("INCRBYFLOAT", 3, "write denyoom fast")
def incrbyfloat(node: Node, client: Client, argv: list[bytes]) -> bytes:
    key = argv[1]
    value = _string_or_none(node, client, key)
    current = parse_long_double(value) if value is not None else 0
    increment = parse_long_double(argv[2])
    if current is None or increment is None:
        raise CommandError(_NOT_FLOAT)
    result = add_long_double(current, increment)
    if type(result) is float:  # inf or nan
        raise CommandError("ERR increment would produce NaN or Infinity")
    data = format_long_double(result)
    ks = node.keyspace
    db = ks.dbs[client.db]
    ks.store(db, key, data, keepttl=True)
    # The result, not the increment: replays never redo float arithmetic.
    ks.log(db, b"SET", key, data, b"KEEPTTL")
    return _bulk(data)


def _check_length(node: Node, size: int) -> None:
    if size > node.config.proto_max_bulk_len:
        raise CommandError(_TOO_BIG)


def _grow_in_place(node: Node, client: Client, key: bytes, value: bytes | bytearray) -> bytearray:
    """The string at ``key`` as a bytearray that may be changed in place
    (Redis's dbUnshareStringValue: from now on it is "raw")."""
    if type(value) is bytearray:
        return value
    grown = bytearray(value)
    node.keyspace.dbs[client.db].keys[key] = grown
    return grown


@key_command("APPEND", 3, "write denyoom fast")
def append(node: Node, client: Client, argv: list[bytes]) -> bytes:
    key, tail = argv[1], argv[2]
    value = _string_or_none(node, client, key)
    ks = node.keyspace
    db = ks.dbs[client.db]
    if value is None:
        ks.store(db, key, tail)
        ks.log(db, *argv)
        return b":%d\r\n" % len(tail)
    _check_length(node, len(value) + len(tail))
    grown = _grow_in_place(node, client, key, value)
    grown += tail
    ks.grow(db, len(tail))
    if db.watched:
        ks.touched(db, key)
    ks.log(db, *argv)
    return b":%d\r\n" % len(grown)


@key_command("STRLEN", 2, "readonly fast")
def strlen(node: Node, client: Client, argv: list[bytes]) -> bytes:
    value = _string_or_none(node, client, argv[1])
    return b":%d\r\n" % (len(value) if value is not None else 0)


@key_command("SUBSTR", 4, "readonly")
@key_command("GETRANGE", 4, "readonly")
def getrange(node: Node, client: Client, argv: list[bytes]) -> bytes:
    start = int_arg(argv[2])
    end = int_arg(argv[3])
    value = _string_or_none(node, client, argv[1])
    if value is None:
        return _EMPTY_BULK
    size = len(value)
    if start < 0 and end < 0 and start > end:
        return _EMPTY_BULK
    if start < 0:
        start = max(0, size + start)
    if end < 0:
        end = max(0, size + end)
    if end >= size:
        end = size - 1
    if start > end or size == 0:
        return _EMPTY_BULK
    return _bulk(value[start:end + 1])


@key_command("SETRANGE", 4, "write denyoom")
def setrange(node: Node, client: Client, argv: list[bytes]) -> bytes:
    key, chunk = argv[1], argv[3]
    offset = int_arg(argv[2])
    if offset < 0:
        raise CommandError("ERR offset is out of range")
    value = _string_or_none(node, client, key)
    ks = node.keyspace
    db = ks.dbs[client.db]
    if not chunk:
        return b":%d\r\n" % (len(value) if value is not None else 0)
    _check_length(node, offset + len(chunk))
    if value is None:
        grown = bytearray(offset)
        ks.store(db, key, grown)
        before = 0
    else:
        grown = _grow_in_place(node, client, key, value)
        before = len(grown)
    end = offset + len(chunk)
    if end > len(grown):
        grown.extend(bytes(end - len(grown)))
    grown[offset:end] = chunk
    ks.grow(db, len(grown) - before - (offset if value is None else 0))
    if db.watched:
        ks.touched(db, key)
    ks.log(db, *argv)
    return b":%d\r\n" % len(grown)
