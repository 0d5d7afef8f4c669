"""Set commands: SADD, SREM, SMEMBERS, SISMEMBER, SMISMEMBER, SCARD, SPOP,
SRANDMEMBER, SMOVE, SINTER, SUNION, SDIFF (and their STORE forms),
SINTERCARD, SSCAN, with Redis 7.0's replies and errors (t_set.c); RESP3
sets (``~``) where Redis sends them.

AOF: SPOP is random, so its effect is logged (SREM of what it popped, or
DEL when it took everything); the other writes are deterministic and
logged as they came.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import CommandError
from ..jobs.scan import scan
from ..command import Commands
from .containers import (EMPTY_SCAN, OUT_OF_RANGE_POSITIVE, array, changed, count_arg,
                         lookup_typed, scan_cursor, scan_options, scan_reply, set_reply)
from .sets import Set
from .types import WRONGTYPE

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: group generic, the key at argv[1]
key_command = COMMANDS.command


def _set(node: Node, client: Client, key: bytes) -> Set | None:
    return lookup_typed(node, client, key, Set)


@key_command("SADD", -3, "write denyoom fast")
def sadd(node: Node, client: Client, argv: list[bytes]) -> bytes:
    key = argv[1]
    s = _set(node, client, key)
    ks = node.keyspace
    db = ks.dbs[client.db]
    created = s is None
    if s is None:
        s = Set()
    before = s.nbytes
    added = 0
    for member in argv[2:]:
        added += s.add(member)
    if created:
        ks.store(db, key, s)
    elif added:
        changed(node, db, key, s.nbytes - before, False)
    if added:
        ks.log(db, *argv)
    return b":%d\r\n" % added


@key_command("SREM", -3, "write fast")
def srem(node: Node, client: Client, argv: list[bytes]) -> bytes:
    key = argv[1]
    s = _set(node, client, key)
    if s is None:
        return resp.ZERO
    before = s.nbytes
    removed = 0
    for member in argv[2:]:
        removed += s.remove(member)
    if removed:
        db = node.keyspace.dbs[client.db]
        changed(node, db, key, s.nbytes - before, not s)
        node.keyspace.log(db, *argv)
    return b":%d\r\n" % removed


@key_command("SMEMBERS", 2, "readonly")
def smembers(node: Node, client: Client, argv: list[bytes]) -> bytes:
    s = _set(node, client, argv[1])
    return set_reply(s.members() if s is not None else [], client.proto)


@key_command("SISMEMBER", 3, "readonly fast")
def sismember(node: Node, client: Client, argv: list[bytes]) -> bytes:
    s = _set(node, client, argv[1])
    return resp.ONE if s is not None and argv[2] in s else resp.ZERO


@key_command("SMISMEMBER", -3, "readonly fast")
def smismember(node: Node, client: Client, argv: list[bytes]) -> bytes:
    s = _set(node, client, argv[1])
    return b"*%d\r\n%s" % (len(argv) - 2, b"".join(
        [resp.ONE if s is not None and member in s else resp.ZERO for member in argv[2:]]))


@key_command("SCARD", 2, "readonly fast")
def scard(node: Node, client: Client, argv: list[bytes]) -> bytes:
    s = _set(node, client, argv[1])
    return b":%d\r\n" % (len(s) if s is not None else 0)


def _random_member(node: Node, s: Set) -> bytes:
    """A uniformly random member: O(n) at C speed (a dict has no random
    access; Redis samples its buckets)."""
    return next(islice(s, node.random.randrange(len(s)), None))


@key_command("SPOP", -2, "write fast",
             summary="SPOP key [count]: random members removed; logged as their SREM.")
def spop(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """SPOP key [count]: random members removed; logged as their SREM."""
    key = argv[1]
    if len(argv) > 3:
        raise CommandError("ERR syntax error")
    ks = node.keyspace
    db = ks.dbs[client.db]
    if len(argv) == 2:
        s = _set(node, client, key)
        if s is None:
            return resp.null(client.proto)
        member = _random_member(node, s)
        popped = [member]
    else:
        count = count_arg(argv[2], 0, OUT_OF_RANGE_POSITIVE)
        s = _set(node, client, key)
        if s is None or count == 0:
            return set_reply([], client.proto)
        if count >= len(s):
            members = s.members()
            ks.delete(db, key)
            ks.log(db, b"DEL", key)
            return set_reply(members, client.proto)
        popped = node.random.sample(list(s), count)
    before = s.nbytes
    for member in popped:
        s.remove(member)
    changed(node, db, key, s.nbytes - before, not s)
    ks.log(db, b"SREM", key, *popped)
    if len(argv) == 2:
        return b"$%d\r\n%s\r\n" % (len(popped[0]), popped[0])
    return set_reply(popped, client.proto)


@key_command("SRANDMEMBER", -2, "readonly",
             summary="SRANDMEMBER key [count]: a negative count may repeat members.")
def srandmember(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """SRANDMEMBER key [count]: a negative count may repeat members."""
    if len(argv) > 3:
        raise CommandError("ERR syntax error")
    if len(argv) == 2:
        s = _set(node, client, argv[1])
        if s is None:
            return resp.null(client.proto)
        member = _random_member(node, s)
        return b"$%d\r\n%s\r\n" % (len(member), member)
    count = count_arg(argv[2])
    s = _set(node, client, argv[1])
    if s is None or count == 0:
        return resp.EMPTY_ARRAY
    if count < 0:
        return array(node.random.choices(list(s), k=-count))
    if count >= len(s):
        return array(s.members())
    return array(node.random.sample(list(s), count))


@key_command("SMOVE", 4, "write fast", keys=(1, 2, 1))
def smove(node: Node, client: Client, argv: list[bytes]) -> bytes:
    src_key, dst_key, member = argv[1], argv[2], argv[3]
    ks = node.keyspace
    db = ks.dbs[client.db]
    src = ks.lookup(db, src_key)
    dst = ks.lookup(db, dst_key)
    if src is None:
        return resp.ZERO
    if src.__class__ is not Set or (dst is not None and dst.__class__ is not Set):
        raise CommandError(WRONGTYPE)
    assert isinstance(src, Set)
    if src is dst:
        return resp.ONE if member in src else resp.ZERO
    before = src.nbytes
    if not src.remove(member):
        return resp.ZERO
    changed(node, db, src_key, src.nbytes - before, not src)
    if dst is None:
        dst = Set()
        dst.add(member)
        ks.store(db, dst_key, dst)
    else:
        assert isinstance(dst, Set)
        before = dst.nbytes
        if dst.add(member):
            changed(node, db, dst_key, dst.nbytes - before, False)
    ks.log(db, *argv)
    return resp.ONE


def _sets(node: Node, client: Client, keys: list[bytes]) -> list[Set | None]:
    """The sets at ``keys`` (None where missing); WRONGTYPE at the first
    key of another type."""
    ks = node.keyspace
    db = ks.dbs[client.db]
    out: list[Set | None] = []
    for key in keys:
        value = ks.lookup(db, key)
        if value is not None and value.__class__ is not Set:
            raise CommandError(WRONGTYPE)
        out.append(value)
    return out


def _inter(sets: list[Set | None], limit: int = 0) -> Set:
    """The intersection (empty if any set is missing); ``limit`` > 0 stops
    once it has that many members (SINTERCARD)."""
    result = Set()
    present = [s for s in sets if s is not None]
    if not sets or len(present) < len(sets):
        return result
    ordered = sorted(present, key=len)
    smallest, others = ordered[0], ordered[1:]
    for member in smallest.members():
        if all(member in other for other in others):
            result.add(member)
            if limit and len(result) >= limit:
                break
    return result


def _union(sets: list[Set | None]) -> Set:
    result = Set()
    for s in sets:
        if s is not None:
            for member in s:
                result.add(member)
    return result


def _diff(sets: list[Set | None]) -> Set:
    result = Set()
    first = sets[0]
    if first is None:
        return result
    others = [s for s in sets[1:] if s is not None]
    for member in first:
        if not any(member in other for other in others):
            result.add(member)
    return result


def _store(node: Node, client: Client, dst_key: bytes, result: Set,
           argv: list[bytes]) -> bytes:
    """The *STORE forms: ``result`` replaces ``dst_key`` (an empty result
    deletes it)."""
    ks = node.keyspace
    db = ks.dbs[client.db]
    if result:
        ks.store(db, dst_key, result)
        ks.log(db, *argv)
    elif ks.lookup(db, dst_key) is not None:
        ks.delete(db, dst_key)
        ks.log(db, b"DEL", dst_key)
    return b":%d\r\n" % len(result)


@key_command("SINTER", -2, "readonly", keys=(1, -1, 1))
def sinter(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return set_reply(_inter(_sets(node, client, argv[1:])).members(), client.proto)


@key_command("SUNION", -2, "readonly", keys=(1, -1, 1))
def sunion(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return set_reply(_union(_sets(node, client, argv[1:])).members(), client.proto)


@key_command("SDIFF", -2, "readonly", keys=(1, -1, 1))
def sdiff(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return set_reply(_diff(_sets(node, client, argv[1:])).members(), client.proto)


@key_command("SINTERSTORE", -3, "write denyoom", keys=(1, -1, 1))
def sinterstore(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _store(node, client, argv[1], _inter(_sets(node, client, argv[2:])), argv)


@key_command("SUNIONSTORE", -3, "write denyoom", keys=(1, -1, 1))
def sunionstore(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _store(node, client, argv[1], _union(_sets(node, client, argv[2:])), argv)


@key_command("SDIFFSTORE", -3, "write denyoom", keys=(1, -1, 1))
def sdiffstore(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _store(node, client, argv[1], _diff(_sets(node, client, argv[2:])), argv)


@key_command("SINTERCARD", -3, "readonly", keys=(0, 0, 0),
             summary="SINTERCARD numkeys key [key ...] [LIMIT limit]")
def sintercard(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """SINTERCARD numkeys key [key ...] [LIMIT limit]"""
    numkeys = count_arg(argv[1], 1, "ERR numkeys should be greater than 0")
    if numkeys > len(argv) - 2:
        raise CommandError("ERR Number of keys can't be greater than number of args")
    limit = 0
    i = 2 + numkeys
    while i < len(argv):
        if argv[i].upper() == b"LIMIT" and i + 1 < len(argv):
            limit = count_arg(argv[i + 1], 0, "ERR LIMIT can't be negative")
            i += 2
        else:
            raise CommandError("ERR syntax error")
    return b":%d\r\n" % len(_inter(_sets(node, client, argv[2:2 + numkeys]), limit))


@key_command("SSCAN", -3, "readonly",
             summary="SSCAN key cursor [MATCH pattern] [COUNT count].  An intset comes")
def sscan(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """SSCAN key cursor [MATCH pattern] [COUNT count].  An intset comes
    whole and sorted in one call (as Redis); a hash-table set through
    scan.py's cursor, which never misses a member present throughout."""
    cursor = scan_cursor(argv[2])
    s = _set(node, client, argv[1])
    if s is None:
        return EMPTY_SCAN
    count, match = scan_options(argv, 3)
    if s.intset:
        return scan_reply(0, [m for m in s.members() if match is None or match(m)])
    cursor, found = scan(s, cursor, count, False, match or _always, s.deletions, keys=True)
    return scan_reply(cursor, found)


def _always(member: bytes) -> bool:
    return True
