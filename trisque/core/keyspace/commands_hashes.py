"""Hash commands: HSET, HMSET, HSETNX, HGET, HMGET, HGETALL, HKEYS, HVALS,
HDEL, HEXISTS, HLEN, HSTRLEN, HINCRBY, HINCRBYFLOAT, HRANDFIELD, HSCAN,
with Redis 7.0's replies and errors (t_hash.c).

HSET and HGET are hot: they reach the db's dict directly, as GET and SET
do.  AOF: HMSET and HSETNX are logged as HSET, HINCRBY and HINCRBYFLOAT as the
HSET of their result (replays never redo float arithmetic), the rest as
they came.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import CommandError, wrong_arity
from ..jobs.scan import scan
from ..command import Commands
from .args import int_arg
from .containers import (EMPTY_SCAN, LONG_MAX, array, bulks, changed, count_arg,
                         lookup_typed, map_reply, scan_cursor, scan_options, scan_reply)
from .encoding_limits import LIMITS
from .hashes import FIELD_OVERHEAD, Hash
from .numbers import INT64_MAX, INT64_MIN, add_long_double, format_long_double, parse_ll, parse_long_double
from .types import WRONGTYPE

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: group generic, the key at argv[1]
key_command = COMMANDS.command


def _hash(node: Node, client: Client, key: bytes) -> Hash | None:
    return lookup_typed(node, client, key, Hash)


def _set_fields(h: Hash, argv: list[bytes], start: int) -> tuple[int, int]:
    """Set argv[start:]'s field/value pairs in ``h``: (fields added, bytes
    grown).  The listpack bounds are checked first, as Redis's
    hashTypeTryConversion."""
    if not h.big:
        bound = LIMITS.hash_value
        for arg in islice(argv, start, None):
            if len(arg) > bound:
                h.big = True
                break
    added = delta = 0
    get = h.get
    for i in range(start, len(argv), 2):
        field, value = argv[i], argv[i + 1]
        old = get(field)
        if old is None:
            added += 1
            delta += FIELD_OVERHEAD + len(field) + len(value)
        else:
            delta += len(value) - len(old)
        h[field] = value
    if len(h) > LIMITS.hash_entries:
        h.big = True
    h.nbytes += delta
    return added, delta


def _hset(node: Node, client: Client, argv: list[bytes]) -> int:
    """Redis's hsetCommand: the number of new fields."""
    if len(argv) % 2:
        raise CommandError(wrong_arity(argv[0].decode("latin-1").lower()))
    ks = node.keyspace
    db = ks.dbs[client.db]
    key = argv[1]
    value = db.keys.get(key)
    if value is not None and db.expires:
        value = ks.lookup(db, key)
    if value is None:
        h = Hash()
        added, _ = _set_fields(h, argv, 2)
        ks.store(db, key, h)
    elif type(value) is Hash:
        added, delta = _set_fields(value, argv, 2)
        changed(node, db, key, delta, False)
    else:
        raise CommandError(WRONGTYPE)
    if argv[0] == b"HSET":
        ks.log(db, *argv)
    else:
        ks.log(db, b"HSET", *argv[1:])
    return added


@key_command("HSET", -4, "write denyoom fast")
def hset(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return b":%d\r\n" % _hset(node, client, argv)


@key_command("HMSET", -4, "write denyoom fast")
def hmset(node: Node, client: Client, argv: list[bytes]) -> bytes:
    _hset(node, client, argv)
    return resp.OK


@key_command("HSETNX", 4, "write denyoom fast")
def hsetnx(node: Node, client: Client, argv: list[bytes]) -> bytes:
    h = _hash(node, client, argv[1])
    if h is not None and argv[2] in h:
        return resp.ZERO
    _hset(node, client, [b"HSET", argv[1], argv[2], argv[3]])
    return resp.ONE


@key_command("HGET", 3, "readonly fast")
def hget(node: Node, client: Client, argv: list[bytes]) -> bytes:
    ks = node.keyspace
    db = ks.dbs[client.db]
    key = argv[1]
    h = db.keys.get(key)
    if h is None or (db.expires and ks.lookup(db, key) is None):
        return resp.null(client.proto)
    if type(h) is not Hash:
        raise CommandError(WRONGTYPE)
    value = h.get(argv[2])
    if value is None:
        return resp.null(client.proto)
    return b"$%d\r\n%s\r\n" % (len(value), value)


@key_command("HMGET", -3, "readonly fast")
def hmget(node: Node, client: Client, argv: list[bytes]) -> bytes:
    h = _hash(node, client, argv[1])
    null = resp.null(client.proto)
    out = [b"*%d\r\n" % (len(argv) - 2)]
    for field in argv[2:]:
        value = h.get(field) if h is not None else None
        out.append(null if value is None else b"$%d\r\n%s\r\n" % (len(value), value))
    return b"".join(out)


@key_command("HGETALL", 2, "readonly")
def hgetall(node: Node, client: Client, argv: list[bytes]) -> bytes:
    h = _hash(node, client, argv[1])
    pairs = [item for pair in h.items() for item in pair] if h is not None else []
    return map_reply(pairs, client.proto)


@key_command("HKEYS", 2, "readonly")
def hkeys(node: Node, client: Client, argv: list[bytes]) -> bytes:
    h = _hash(node, client, argv[1])
    return array(list(h) if h is not None else [])


@key_command("HVALS", 2, "readonly")
def hvals(node: Node, client: Client, argv: list[bytes]) -> bytes:
    h = _hash(node, client, argv[1])
    return array(list(h.values()) if h is not None else [])


@key_command("HDEL", -3, "write fast")
def hdel(node: Node, client: Client, argv: list[bytes]) -> bytes:
    key = argv[1]
    h = _hash(node, client, key)
    if h is None:
        return resp.ZERO
    deleted = delta = 0
    for field in argv[2:]:
        value = h.pop(field, None)
        if value is not None:
            deleted += 1
            delta -= FIELD_OVERHEAD + len(field) + len(value)
    if deleted:
        h.nbytes += delta
        h.deletions += deleted
        db = node.keyspace.dbs[client.db]
        changed(node, db, key, delta, not h)
        node.keyspace.log(db, *argv)
    return b":%d\r\n" % deleted


@key_command("HLEN", 2, "readonly fast")
def hlen(node: Node, client: Client, argv: list[bytes]) -> bytes:
    h = _hash(node, client, argv[1])
    return b":%d\r\n" % (len(h) if h is not None else 0)


@key_command("HSTRLEN", 3, "readonly fast")
def hstrlen(node: Node, client: Client, argv: list[bytes]) -> bytes:
    h = _hash(node, client, argv[1])
    value = h.get(argv[2]) if h is not None else None
    return b":%d\r\n" % (len(value) if value is not None else 0)


@key_command("HEXISTS", 3, "readonly fast")
def hexists(node: Node, client: Client, argv: list[bytes]) -> bytes:
    h = _hash(node, client, argv[1])
    return resp.ONE if h is not None and argv[2] in h else resp.ZERO


def _store_field(node: Node, client: Client, key: bytes, h: Hash | None, field: bytes,
                 value: bytes) -> None:
    """Set one field of HINCRBY* (the hash created if need be) and log it
    as an HSET of the result.  The result may cross the listpack bounds:
    Redis's hashTypeSet checks them."""
    if h is None:
        _hset(node, client, [b"HSET", key, field, value])
        return
    if len(field) > LIMITS.hash_value or len(value) > LIMITS.hash_value:
        h.big = True
    old = h.get(field)
    delta = len(value) - len(old) if old is not None else FIELD_OVERHEAD + len(field) + len(value)
    h[field] = value
    if len(h) > LIMITS.hash_entries:
        h.big = True
    h.nbytes += delta
    db = node.keyspace.dbs[client.db]
    changed(node, db, key, delta, False)
    node.keyspace.log(db, b"HSET", key, field, value)


@key_command("HINCRBY", 4, "write denyoom fast")
def hincrby(node: Node, client: Client, argv: list[bytes]) -> bytes:
    by = int_arg(argv[3])
    key, field = argv[1], argv[2]
    h = _hash(node, client, key)
    old = h.get(field) if h is not None else None
    current = 0
    if old is not None:
        parsed = parse_ll(old)
        if parsed is None:
            raise CommandError("ERR hash value is not an integer")
        current = parsed
    result = current + by
    if result > INT64_MAX or result < INT64_MIN:
        raise CommandError("ERR increment or decrement would overflow")
    _store_field(node, client, key, h, field, b"%d" % result)
    return b":%d\r\n" % result


@key_command("HINCRBYFLOAT", 4, "write denyoom fast")
def hincrbyfloat(node: Node, client: Client, argv: list[bytes]) -> bytes:
    increment = parse_long_double(argv[3])
    if increment is None:
        raise CommandError("ERR value is not a valid float")
    if type(increment) is float:
        raise CommandError("ERR value is NaN or Infinity")
    key, field = argv[1], argv[2]
    h = _hash(node, client, key)
    old = h.get(field) if h is not None else None
    current = parse_long_double(old) if old is not None else 0
    if current is None:
        raise CommandError("ERR hash value is not a float")
    result = add_long_double(current, increment)
    if type(result) is float:  # inf or nan
        raise CommandError("ERR increment would produce NaN or Infinity")
    data = format_long_double(result)
    _store_field(node, client, key, h, field, data)
    return b"$%d\r\n%s\r\n" % (len(data), data)


@key_command("HRANDFIELD", -2, "readonly")
def hrandfield(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """HRANDFIELD key [count [WITHVALUES]] (Redis's hrandfieldCommand)."""
    argc = len(argv)
    if argc == 2:
        h = _hash(node, client, argv[1])
        if h is None:
            return resp.null(client.proto)
        field = next(islice(h, node.random.randrange(len(h)), None))
        return b"$%d\r\n%s\r\n" % (len(field), field)
    count = count_arg(argv[2])
    if argc > 4 or (argc == 4 and argv[3].upper() != b"WITHVALUES"):
        raise CommandError("ERR syntax error")
    withvalues = argc == 4
    if withvalues and not -LONG_MAX // 2 <= count <= LONG_MAX // 2:
        raise CommandError("ERR value is out of range")
    h = _hash(node, client, argv[1])
    if h is None or count == 0:
        return resp.EMPTY_ARRAY
    rng = node.random
    if count < 0 or count == 1:  # with repetitions, in random order
        fields = rng.choices(list(h), k=-count if count < 0 else 1)
    elif count >= len(h):
        fields = list(h)  # the whole hash, in its order
    else:
        fields = rng.sample(list(h), count)
    if not withvalues:
        return array(fields)
    if client.proto == 3:
        return b"*%d\r\n%s" % (len(fields), b"".join(
            [b"*2\r\n" + bulks((field, h[field])) for field in fields]))
    return array([item for field in fields for item in (field, h[field])])


@key_command("HSCAN", -3, "readonly")
def hscan(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """HSCAN key cursor [MATCH pattern] [COUNT count].  A listpack hash
    comes whole in one call (as Redis); a big one through scan.py's cursor,
    which never misses a field present for the whole scan."""
    cursor = scan_cursor(argv[2])
    h = _hash(node, client, argv[1])
    if h is None:
        return EMPTY_SCAN
    count, match = scan_options(argv, 3)
    if not h.big:
        fields = [f for f in h if match is None or match(f)]
        return scan_reply(0, [item for f in fields for item in (f, h[f])])
    wanted = match if match is not None else _always
    cursor, fields = scan(h, cursor, count, False, wanted, h.deletions, keys=True)
    return scan_reply(cursor, [item for f in fields for item in (f, h[f])])


def _always(field: bytes) -> bool:
    return True
