"""Generic key commands: DEL, UNLINK, EXISTS, TYPE, KEYS, SCAN, RENAME,
RENAMENX, EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL, EXPIRETIME,
PEXPIRETIME, PERSIST, RANDOMKEY, OBJECT, with Redis 7's replies and errors.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import CommandError, unknown_subcommand, wrong_arity
from ..jobs.scan import parse_cursor, scan
from ..command import Commands
from .args import int_arg
from .containers import scan_arguments
from .numbers import INT64_MAX, INT64_MIN
from .patterns import compile_pattern
from .types import NAMES, type_of

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: group generic, the key at argv[1]
key_command = COMMANDS.command


@key_command("UNLINK", -2, "write fast", keys=(1, -1, 1))
@key_command("DEL", -2, "write", keys=(1, -1, 1))
def del_(node: Node, client: Client, argv: list[bytes]) -> bytes:
    ks = node.keyspace
    db = ks.dbs[client.db]
    deleted = []
    for key in argv[1:]:
        if ks.lookup(db, key) is not None and ks.delete(db, key):
            deleted.append(key)
    if deleted:
        ks.log(db, b"DEL", *deleted)
    return b":%d\r\n" % len(deleted)


@key_command("EXISTS", -2, "readonly fast", keys=(1, -1, 1))
def exists(node: Node, client: Client, argv: list[bytes]) -> bytes:
    ks = node.keyspace
    db = ks.dbs[client.db]
    return b":%d\r\n" % sum(1 for key in argv[1:] if ks.lookup(db, key) is not None)


@key_command("TYPE", 2, "readonly fast")
def type_(node: Node, client: Client, argv: list[bytes]) -> bytes:
    ks = node.keyspace
    value = ks.lookup(ks.dbs[client.db], argv[1])
    return b"+none\r\n" if value is None else b"+%s\r\n" % type_of(value).name.encode()


def _keys_array(keys: list[bytes]) -> bytes:
    return b"*%d\r\n%s" % (len(keys), b"".join(
        [b"$%d\r\n%s\r\n" % (len(key), key) for key in keys]))


@key_command("KEYS", 2, "readonly", keys=(0, 0, 0))
def keys_(node: Node, client: Client, argv: list[bytes]) -> bytes:
    ks = node.keyspace
    db = ks.dbs[client.db]
    pattern = argv[1]
    now_ms = node.now_ms()
    wanted = None if pattern == b"*" else compile_pattern(pattern)  # KEYS *: every key
    found = [key for key in db.keys
             if (wanted is None or wanted(key)) and not ks.is_expired(db, key, now_ms)]
    return _keys_array(found)


@key_command("SCAN", -2, "readonly", keys=(0, 0, 0),
             summary="SCAN cursor [MATCH pattern] [COUNT count] [TYPE type].  Every key")
def scan_(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """SCAN cursor [MATCH pattern] [COUNT count] [TYPE type].  Every key
    present for the whole iteration is returned (scan.py's cursor)."""
    arg = argv[1]
    try:
        if arg[-1:].isspace():
            raise CommandError("")
        cursor = parse_cursor(arg)
    except CommandError:
        raise CommandError("ERR invalid cursor") from None
    count, match, type_name = scan_arguments(argv, 2, with_type=True)
    ks = node.keyspace
    db = ks.dbs[client.db]
    now_ms = node.now_ms()
    keys = db.keys
    wanted_type = NAMES.get(type_name) if type_name is not None else None

    def wanted(key: bytes) -> bool:
        if match is not None and not match(key):
            return False
        if type_name is not None and type_of(keys[key]) is not wanted_type:
            return False
        return not ks.is_expired(db, key, now_ms)

    cursor, found = scan(keys, cursor, count, False, wanted, db.deletions, keys=True)
    cursor_text = b"%d" % cursor
    return b"*2\r\n$%d\r\n%s\r\n%s" % (len(cursor_text), cursor_text, _keys_array(found))


def _rename(node: Node, client: Client, argv: list[bytes], nx: bool) -> bytes:
    ks = node.keyspace
    db = ks.dbs[client.db]
    src, dst = argv[1], argv[2]
    value = ks.lookup(db, src)
    if value is None:
        raise CommandError("ERR no such key")
    if src == dst:
        return resp.ZERO if nx else resp.OK
    when = db.expires.get(src)
    if ks.lookup(db, dst) is not None:
        if nx:
            return resp.ZERO
        ks.delete(db, dst)
    ks.delete(db, src)
    ks.store(db, dst, value)
    if when is not None:
        ks.set_expire(db, dst, when)
    ks.log(db, b"RENAME", src, dst)
    return resp.ONE if nx else resp.OK


@key_command("RENAME", 3, "write", keys=(1, 2, 1))
def rename(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _rename(node, client, argv, nx=False)


@key_command("RENAMENX", 3, "write fast", keys=(1, 2, 1))
def renamenx(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _rename(node, client, argv, nx=True)


_EXPIRE_FLAGS = {b"NX": 1, b"XX": 2, b"GT": 4, b"LT": 8}


def _expire(node: Node, client: Client, argv: list[bytes], base_ms: int,
            unit_ms: int) -> bytes:
    """Redis's expireGenericCommand: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT."""
    flags = 0
    for opt in argv[3:]:
        flag = _EXPIRE_FLAGS.get(opt.upper())
        if flag is None:
            raise CommandError(f"ERR Unsupported option {opt.decode('utf-8', 'replace')}")
        flags |= flag
    if flags & 1 and flags & 14:
        raise CommandError("ERR NX and XX, GT or LT options at the same time are not compatible")
    if flags & 4 and flags & 8:
        raise CommandError("ERR GT and LT options at the same time are not compatible")
    when = int_arg(argv[2])
    name = argv[0].decode("latin-1").lower()
    if unit_ms == 1000:
        if when > INT64_MAX // 1000 or when < -(-INT64_MIN // 1000):  # C truncates
            raise CommandError(f"ERR invalid expire time in '{name}' command")
        when *= 1000
    if when > INT64_MAX - base_ms:
        raise CommandError(f"ERR invalid expire time in '{name}' command")
    when += base_ms
    ks = node.keyspace
    db = ks.dbs[client.db]
    key = argv[1]
    if ks.lookup(db, key) is None:
        return resp.ZERO
    if flags:
        current = db.expires.get(key)
        if ((flags & 1 and current is not None) or (flags & 2 and current is None)
                or (flags & 4 and (current is None or when <= current))
                or (flags & 8 and current is not None and when >= current)):
            return resp.ZERO
    if when <= node.now_ms() and not ks.replaying:
        ks.delete(db, key)  # already past (checkAlreadyExpired): gone now
        ks.log(db, b"DEL", key)
    else:
        ks.set_expire(db, key, when)
        ks.log(db, b"PEXPIREAT", key, b"%d" % when)
    return resp.ONE


@key_command("EXPIRE", -3, "write fast")
def expire(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _expire(node, client, argv, node.now_ms(), 1000)


@key_command("PEXPIRE", -3, "write fast")
def pexpire(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _expire(node, client, argv, node.now_ms(), 1)


@key_command("EXPIREAT", -3, "write fast")
def expireat(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _expire(node, client, argv, 0, 1000)


@key_command("PEXPIREAT", -3, "write fast")
def pexpireat(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _expire(node, client, argv, 0, 1)


def _ttl(node: Node, client: Client, key: bytes) -> int | None:
    """-2: no key; None: no TTL; else ms left (0 at least)."""
    ks = node.keyspace
    db = ks.dbs[client.db]
    if ks.lookup(db, key) is None:
        return -2
    when = db.expires.get(key)
    return None if when is None else max(0, when - node.now_ms())


@key_command("TTL", 2, "readonly fast")
def ttl(node: Node, client: Client, argv: list[bytes]) -> bytes:
    left = _ttl(node, client, argv[1])
    if left is None:
        return b":-1\r\n"
    return b":%d\r\n" % (left if left == -2 else (left + 500) // 1000)


@key_command("PTTL", 2, "readonly fast")
def pttl(node: Node, client: Client, argv: list[bytes]) -> bytes:
    left = _ttl(node, client, argv[1])
    return b":-1\r\n" if left is None else b":%d\r\n" % left


def _expiretime(node: Node, client: Client, key: bytes) -> int:
    ks = node.keyspace
    db = ks.dbs[client.db]
    if ks.lookup(db, key) is None:
        return -2
    when = db.expires.get(key)
    return -1 if when is None else when


@key_command("EXPIRETIME", 2, "readonly fast")
def expiretime(node: Node, client: Client, argv: list[bytes]) -> bytes:
    when = _expiretime(node, client, argv[1])
    return b":%d\r\n" % (when if when < 0 else when // 1000)


@key_command("PEXPIRETIME", 2, "readonly fast")
def pexpiretime(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return b":%d\r\n" % _expiretime(node, client, argv[1])


@key_command("PERSIST", 2, "write fast")
def persist(node: Node, client: Client, argv: list[bytes]) -> bytes:
    ks = node.keyspace
    db = ks.dbs[client.db]
    key = argv[1]
    if ks.lookup(db, key) is None or not ks.remove_expire(db, key):
        return resp.ZERO
    ks.log(db, b"PERSIST", key)
    return resp.ONE


@key_command("RANDOMKEY", 1, "readonly", keys=(0, 0, 0),
             summary="A random live key.  O(n) in the db's size (a dict has no random")
def randomkey(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """A random live key.  O(n) in the db's size (a dict has no random
    access); expired keys met on the way are deleted, as Redis does."""
    ks = node.keyspace
    db = ks.dbs[client.db]
    keys = db.keys
    while keys:
        key = next(islice(keys, node.random.randrange(len(keys)), None))
        if ks.lookup(db, key) is not None:
            return b"$%d\r\n%s\r\n" % (len(key), key)
    return resp.null(client.proto)


_OBJECT_HELP = [
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Print this help.",
]


@key_command("OBJECT", -2, "readonly", keys=(2, 2, 1),
             summary="OBJECT ENCODING|IDLETIME|REFCOUNT|FREQ key, OBJECT HELP.  Access")
def object_(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """OBJECT ENCODING|IDLETIME|REFCOUNT|FREQ key, OBJECT HELP.  Access
    times are not kept (a field per key): IDLETIME answers 0."""
    sub = argv[1].upper()
    if sub not in (b"ENCODING", b"IDLETIME", b"REFCOUNT", b"FREQ", b"HELP"):
        raise CommandError(unknown_subcommand(argv[1].decode("utf-8", "replace"), "OBJECT"))
    if len(argv) != (2 if sub == b"HELP" else 3):
        raise CommandError(wrong_arity("object|" + sub.decode().lower()))
    if sub == b"HELP":
        return resp.encode([resp.Status(line) for line in _OBJECT_HELP], client.proto)
    ks = node.keyspace
    value = ks.lookup(ks.dbs[client.db], argv[2])
    if value is None:
        return resp.null(client.proto)
    if sub == b"ENCODING":
        return resp.bulk(type_of(value).encoding(value))
    if sub == b"FREQ":
        raise CommandError(
            "ERR An LFU maxmemory policy is not selected, access frequency not "
            "tracked. Please note that when switching between policies at runtime "
            "LRU and LFU data will take some time to adjust.")
    if sub == b"IDLETIME":
        return resp.ZERO
    if type(value) is bytes and len(value) <= 4 and value.isdigit() and (
            value[0] != 48 or len(value) == 1):
        return b":2147483647\r\n"  # Redis's shared integers 0-9999
    return resp.ONE
