"""The transaction commands: MULTI, EXEC, DISCARD, WATCH, UNWATCH (the
rules are transactions.py's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import OOM, CommandError
from ..command import Commands
from .transactions import (EXECABORT, NOT_IN_EXEC, Atomic, Transaction, discard,
                           unwatch_all, watch_failed, watch_key)

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: group generic, the key at argv[1]
key_command = COMMANDS.command


@key_command("MULTI", 1, "fast loading", keys=(0, 0, 0))
def multi(node: Node, client: Client, argv: list[bytes]) -> bytes:
    if client.multi is not None:
        raise CommandError("ERR MULTI calls can not be nested")
    client.multi = Transaction()
    return resp.OK


@key_command("DISCARD", 1, "fast loading", keys=(0, 0, 0))
def discard_command(node: Node, client: Client, argv: list[bytes]) -> bytes:
    if client.multi is None:
        raise CommandError("ERR DISCARD without MULTI")
    discard(node, client)
    return resp.OK


@key_command("WATCH", -2, "fast", keys=(1, -1, 1))
def watch(node: Node, client: Client, argv: list[bytes]) -> bytes:
    if client.multi is not None:
        raise CommandError("ERR WATCH inside MULTI is not allowed")
    if client.watch is not None and client.watch.dirty:
        return resp.OK  # no point watching more: EXEC fails anyway
    db = node.keyspace.dbs[client.db]
    for key in argv[1:]:
        watch_key(node, client, db, key)
    return resp.OK


@key_command("UNWATCH", 1, "fast", keys=(0, 0, 0))
def unwatch(node: Node, client: Client, argv: list[bytes]) -> bytes:
    unwatch_all(client)
    return resp.OK


@key_command("EXEC", 1, "loading", keys=(0, 0, 0))
def exec_(node: Node, client: Client, argv: list[bytes]) -> bytes:
    multi = client.multi
    if multi is None:
        raise CommandError("ERR EXEC without MULTI")
    if multi.aborted:
        discard(node, client)
        raise CommandError(EXECABORT)
    if (multi.deny_oom and node.config.maxmemory
            and node.used_memory >= node.config.maxmemory):
        discard(node, client)
        raise CommandError("EXECABORT Transaction discarded because of: " + OOM)
    failed = watch_failed(node, client)
    discard(node, client)  # (MULTI state and watched keys go either way)
    if failed:
        return resp.null_array(client.proto)
    replies = [b"*%d\r\n" % len(multi.commands)]
    with Atomic(node):
        for command, args in multi.commands:
            refusal = NOT_IN_EXEC.get(command.name)
            if refusal is not None:
                replies.append(resp.error(refusal))
                continue
            out = client.out
            mark = len(out)
            reply = node.call(client, command, args)
            if len(out) > mark:
                # Pushes to this very client (a RESP3 subscriber publishing
                # to itself): Redis 7.0 writes them inside EXEC's array.
                replies += out[mark:]
                del out[mark:]
            replies.append(reply)
    return b"".join(replies)
