"""COPY source destination [DB destination-db] [REPLACE], as Redis 7.0.

The copy is a value of its own (each type's ``copy`` in its ValueType:
the same encoding, nothing shared that a later write could change) with
the source's TTL.  It is logged with its destination db spelled out, so
the record replays the same whatever db the client had selected.
"""

from __future__ import annotations

import copy as copy_module
from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import SYNTAX, CommandError
from ..command import Commands
from .commands_db import _db_index
from .types import type_of

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(1, 2, 1))  # the keyspace's: source and destination
key_command = COMMANDS.command


def copy_value(value: object) -> object:
    copy = type_of(value).copy
    return copy(value) if copy is not None else copy_module.deepcopy(value)


@key_command("COPY", -3, "write denyoom", syntax="source destination [DB destination-db] [REPLACE]")
def copy_(node: Node, client: Client, argv: list[bytes]) -> bytes:
    ks = node.keyspace
    src = ks.dbs[client.db]
    dst = src
    replace = False
    i = 3
    while i < len(argv):
        option = argv[i].upper()
        if option == b"REPLACE":
            replace = True
        elif option == b"DB" and i + 1 < len(argv):
            dst = ks.dbs[_db_index(node, argv[i + 1], None)]  # (as SELECT and MOVE)
            i += 1
        else:
            raise CommandError(SYNTAX)
        i += 1
    key, newkey = argv[1], argv[2]
    if src is dst and key == newkey:
        raise CommandError("ERR source and destination objects are the same")
    value = ks.lookup(src, key)
    if value is None:
        return resp.ZERO
    when = src.expires.get(key)
    if ks.lookup(dst, newkey) is not None:
        if not replace:
            return resp.ZERO
        ks.delete(dst, newkey)
    ks.store(dst, newkey, copy_value(value))
    if when is not None:
        ks.set_expire(dst, newkey, when)
    ks.log(src, b"COPY", key, newkey, b"DB", b"%d" % dst.id, *([b"REPLACE"] if replace else []))
    return resp.ONE
