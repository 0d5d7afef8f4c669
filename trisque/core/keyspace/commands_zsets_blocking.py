"""BZPOPMIN, BZPOPMAX, and ZMPOP with its blocking BZMPOP.

BZPOPMIN and BZPOPMAX are ZPOPMIN/ZPOPMAX that wait for a sorted set, on
the keyspace's blocking machinery (blocking.py, as BLPOP): the first
non-empty key of the command's keys is popped at once, else the client
waits, served first come first served when a ZADD (or a RENAME, MOVE,
ZRANGESTORE...) creates one of its keys.  Replies ``[key, member,
score]``; the pop is logged as ZPOPMIN/ZPOPMAX of that key.

ZMPOP numkeys key... MIN|MAX [COUNT n] pops up to n members of the first
non-empty key (nil if none) and BZMPOP timeout numkeys ... waits for one;
both reply ``[key, [[member, score], ...]]`` and are logged as
ZPOPMIN/ZPOPMAX key n.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import SYNTAX, CommandError
from ..command import Commands
from .blocking import KeyWaiter
from .commands_lists import timeout_ms_arg
from .numbers import parse_ll
from .commands_zsets import pop
from .containers import double
from .types import WRONGTYPE
from .zsets import ZSet

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node
    from .db import Db

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: group generic, the key at argv[1]
key_command = COMMANDS.command

_POP_NAMES = {False: b"ZPOPMIN", True: b"ZPOPMAX"}


def _served(node: Node, client: Client, db: Db, key: bytes, z: ZSet, highest: bool) -> bytes:
    score, member = pop(node, client, key, z, 1, highest)[0]
    node.keyspace.log(db, _POP_NAMES[highest], key)
    return b"*3\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n%s" % (len(key), key, len(member), member,
                                                  double(score, client.proto))


class ZPopWaiter(KeyWaiter):
    """BZPOPMIN/BZPOPMAX waiting for one of its keys."""

    __slots__ = ("highest",)

    def __init__(self, db: int, keys: tuple[bytes, ...], highest: bool) -> None:
        super().__init__(db, keys, ZSet)
        self.highest = highest

    def serve(self, node: Node, client: Client, db: Db, key: bytes, value: object) -> bytes:
        assert isinstance(value, ZSet)
        return _served(node, client, db, key, value, self.highest)

    def as_command(self, key: bytes) -> list[bytes]:
        return [b"ZPOPMAX" if self.highest else b"ZPOPMIN", key]


def _bzpop(node: Node, client: Client, argv: list[bytes], highest: bool) -> bytes | None:
    """Redis's blockingGenericZpopCommand."""
    timeout_ms = timeout_ms_arg(argv[-1])
    ks = node.keyspace
    db = ks.dbs[client.db]
    keys = argv[1:-1]
    for key in keys:
        value = ks.lookup(db, key)
        if value is None:
            continue
        if value.__class__ is not ZSet:
            raise CommandError(WRONGTYPE)
        assert isinstance(value, ZSet)
        return _served(node, client, db, key, value, highest)
    blocking = ks.blocking
    if blocking.deny():
        return resp.null_array(client.proto)  # inside EXEC/a script: as timed out
    blocking.block(client, ZPopWaiter(client.db, tuple(dict.fromkeys(keys)), highest),
                   timeout_ms)
    return None


@key_command("BZPOPMIN", -3, "write", keys=(1, -2, 1),
             summary="BZPOPMIN key [key ...] timeout")
def bzpopmin(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    """BZPOPMIN key [key ...] timeout"""
    return _bzpop(node, client, argv, False)


@key_command("BZPOPMAX", -3, "write", keys=(1, -2, 1),
             summary="BZPOPMAX key [key ...] timeout")
def bzpopmax(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    """BZPOPMAX key [key ...] timeout"""
    return _bzpop(node, client, argv, True)


# ------------------------------------------------------ ZMPOP and BZMPOP

def _mpop_args(argv: list[bytes], numkeys_at: int) -> tuple[list[bytes], bool, int]:
    """``numkeys key... MIN|MAX [COUNT n]`` from ``argv[numkeys_at:]``:
    (keys, highest, count), as zmpopGenericCommand reads them."""
    numkeys = parse_ll(argv[numkeys_at])
    if numkeys is None or numkeys < 1:
        raise CommandError("ERR numkeys should be greater than 0")
    where_at = numkeys_at + numkeys + 1
    if where_at >= len(argv):
        raise CommandError(SYNTAX)
    where = argv[where_at].upper()
    if where not in (b"MIN", b"MAX"):
        raise CommandError(SYNTAX)
    count = -1
    i = where_at + 1
    while i < len(argv):
        if count == -1 and argv[i].upper() == b"COUNT" and i + 1 < len(argv):
            count = parse_ll(argv[i + 1]) or 0
            if count < 1:
                raise CommandError("ERR count should be greater than 0")
            i += 2
        else:
            raise CommandError(SYNTAX)
    return argv[numkeys_at + 1:where_at], where == b"MAX", max(count, 1)


def _mpop_served(node: Node, client: Client, db: Db, key: bytes, z: ZSet, highest: bool,
                 count: int) -> bytes:
    pairs = pop(node, client, key, z, count, highest)
    node.keyspace.log(db, _POP_NAMES[highest], key, b"%d" % len(pairs))
    proto = client.proto
    return b"*2\r\n$%d\r\n%s\r\n*%d\r\n%s" % (len(key), key, len(pairs), b"".join(
        [b"*2\r\n$%d\r\n%s\r\n%s" % (len(m), m, double(s, proto)) for s, m in pairs]))


class ZMPopWaiter(KeyWaiter):
    """BZMPOP waiting for one of its keys."""

    __slots__ = ("highest", "count")

    def __init__(self, db: int, keys: tuple[bytes, ...], highest: bool, count: int) -> None:
        super().__init__(db, keys, ZSet)
        self.highest = highest
        self.count = count

    def serve(self, node: Node, client: Client, db: Db, key: bytes, value: object) -> bytes:
        assert isinstance(value, ZSet)
        return _mpop_served(node, client, db, key, value, self.highest, self.count)

    def as_command(self, key: bytes) -> list[bytes]:
        return [b"ZPOPMAX" if self.highest else b"ZPOPMIN", key]


def _zmpop(node: Node, client: Client, keys: list[bytes], highest: bool, count: int,
           timeout_ms: int | None) -> bytes | None:
    ks = node.keyspace
    db = ks.dbs[client.db]
    for key in keys:
        value = ks.lookup(db, key)
        if value is None:
            continue
        if value.__class__ is not ZSet:
            raise CommandError(WRONGTYPE)
        assert isinstance(value, ZSet)
        return _mpop_served(node, client, db, key, value, highest, count)
    blocking = ks.blocking
    if timeout_ms is None or blocking.deny():
        return resp.null_array(client.proto)  # (BZMPOP inside EXEC/a script: as timed out)
    blocking.block(client, ZMPopWaiter(client.db, tuple(dict.fromkeys(keys)), highest, count),
                   timeout_ms)
    return None


@key_command("ZMPOP", -4, "write", keys=(0, 0, 0),
             syntax="numkeys key [key ...] MIN|MAX [COUNT count]")
def zmpop(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    keys, highest, count = _mpop_args(argv, 1)
    return _zmpop(node, client, keys, highest, count, None)


@key_command("BZMPOP", -5, "write", keys=(0, 0, 0),
             syntax="timeout numkeys key [key ...] MIN|MAX [COUNT count]")
def bzmpop(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    timeout_ms = timeout_ms_arg(argv[1])
    keys, highest, count = _mpop_args(argv, 2)
    return _zmpop(node, client, keys, highest, count, timeout_ms)
