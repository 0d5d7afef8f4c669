"""Database commands: SELECT, MOVE, SWAPDB, DBSIZE, FLUSHDB, FLUSHALL.

FLUSHDB and FLUSHALL are Redis's and empty keys only: jobs are the
replicated path, and a Redis tool's FLUSHALL on one node must not drop
copies the cluster counts on.  Disque's ``DEBUG FLUSHALL`` still empties
everything on the node, jobs, queues and keys (commands_server.py).
``ASYNC`` frees the values from the cron, a bounded number each time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import CommandError
from ..command import Commands
from .args import int_arg
from .numbers import INT32_MAX, INT32_MIN, parse_ll

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: group generic, the key at argv[1]
key_command = COMMANDS.command


def _db_index(node: Node, arg: bytes, message: str | None) -> int:
    """getIntFromObjectOrReply, then a db that exists."""
    index = int_arg(arg, message or "ERR value is not an integer or out of range")
    if index < INT32_MIN or index > INT32_MAX:
        raise CommandError(message or "ERR value is out of range, value must between "
                           f"{INT32_MIN} and {INT32_MAX}")
    if not 0 <= index < len(node.keyspace.dbs):
        raise CommandError("ERR DB index is out of range")
    return index


@key_command("SELECT", 2, "loading fast", keys=(0, 0, 0))
def select(node: Node, client: Client, argv: list[bytes]) -> bytes:
    client.db = _db_index(node, argv[1], None)
    return resp.OK


@key_command("MOVE", 3, "write fast")
def move(node: Node, client: Client, argv: list[bytes]) -> bytes:
    ks = node.keyspace
    src = ks.dbs[client.db]
    dst = ks.dbs[_db_index(node, argv[2], None)]
    if src is dst:
        raise CommandError("ERR source and destination objects are the same")
    key = argv[1]
    value = ks.lookup(src, key)
    if value is None or ks.lookup(dst, key) is not None:
        return resp.ZERO
    when = src.expires.get(key)
    ks.delete(src, key)
    ks.store(dst, key, value)
    if when is not None:
        ks.set_expire(dst, key, when)
    ks.log(src, *argv)
    return resp.ONE


@key_command("SWAPDB", 3, "write fast", keys=(0, 0, 0), syntax="index1 index2")
def swapdb(node: Node, client: Client, argv: list[bytes]) -> bytes:
    ks = node.keyspace
    indexes = []
    for arg, which in ((argv[1], "first"), (argv[2], "second")):
        index = parse_ll(arg)
        if index is None or not INT32_MIN <= index <= INT32_MAX:
            raise CommandError(f"ERR invalid {which} DB index")
        indexes.append(index)
    if not all(0 <= index < len(ks.dbs) for index in indexes):
        raise CommandError("ERR DB index is out of range")
    a, b = ks.dbs[indexes[0]], ks.dbs[indexes[1]]
    if a is not b:
        ks.swap_dbs(a, b)
    ks.log(ks.dbs[client.db], b"SWAPDB", b"%d" % indexes[0], b"%d" % indexes[1])
    return resp.OK


@key_command("DBSIZE", 1, "readonly fast", keys=(0, 0, 0))
def dbsize(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return b":%d\r\n" % len(node.keyspace.dbs[client.db].keys)


def _lazy(argv: list[bytes]) -> bool:
    """[ASYNC|SYNC] (lazyfree-lazy-user-flush no: SYNC by default)."""
    if len(argv) > 2:
        raise CommandError("ERR syntax error")
    if len(argv) == 2:
        mode = argv[1].upper()
        if mode not in (b"ASYNC", b"SYNC"):
            raise CommandError("ERR syntax error")
        return mode == b"ASYNC"
    return False


@key_command("FLUSHDB", -1, "write", keys=(0, 0, 0))
def flushdb(node: Node, client: Client, argv: list[bytes]) -> bytes:
    lazy = _lazy(argv)
    ks = node.keyspace
    db = ks.dbs[client.db]
    ks.flush_db(db, lazy)
    ks.log(db, b"FLUSHDB")
    return resp.OK


@key_command("FLUSHALL", -1, "write", keys=(0, 0, 0))
def flushall(node: Node, client: Client, argv: list[bytes]) -> bytes:
    lazy = _lazy(argv)
    ks = node.keyspace
    ks.flush_all(lazy)
    ks.log(ks.dbs[client.db], b"FLUSHALL")
    return resp.OK
