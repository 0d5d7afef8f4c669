"""BZPOPMIN and BZPOPMAX: ZPOPMIN/ZPOPMAX that wait for a sorted set, on
the keyspace's blocking machinery (blocking.py, as BLPOP): the first
non-empty key of the command's keys is popped at once, else the client
waits, served first come first served when a ZADD (or a RENAME, MOVE,
ZRANGESTORE...) creates one of its keys.  Replies ``[key, member,
score]``; the pop is logged as ZPOPMIN/ZPOPMAX of that key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import CommandError
from ..command import Commands
from .blocking import KeyWaiter
from .commands_lists import timeout_ms_arg
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
