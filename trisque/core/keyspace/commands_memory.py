"""MEMORY USAGE key [SAMPLES count]: the bytes a key is estimated to hold.

The figure is the one ``maxmemory`` counts for the key (keyspace.py's
per-key overhead, the key's bytes and its type's ``memory``): exact for
our estimate, so SAMPLES, Redis's sampling of big collections, is checked
and otherwise changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import SYNTAX, CommandError, unknown_subcommand, wrong_arity
from ..command import Commands
from .args import int_arg
from .keyspace import KEY_OVERHEAD
from .types import memory_of

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(2, 2, 1))  # the keyspace's: MEMORY USAGE names its key at argv[2]
key_command = COMMANDS.command

_HELP = [
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Print this help.",
]


@key_command("MEMORY", -2, "readonly",
             summary="MEMORY USAGE key [SAMPLES count]: a key's estimated bytes; MEMORY HELP")
def memory(node: Node, client: Client, argv: list[bytes]) -> bytes:
    sub = argv[1].upper()
    if sub == b"HELP" and len(argv) == 2:
        return resp.encode([resp.Status(line) for line in _HELP], client.proto)
    if sub == b"USAGE" and len(argv) < 3:
        raise CommandError(wrong_arity("memory|usage"))
    if sub != b"USAGE":
        raise CommandError(unknown_subcommand(argv[1].decode("utf-8", "replace"), "MEMORY"))
    for i in range(3, len(argv), 2):
        if argv[i].upper() != b"SAMPLES" or i + 1 >= len(argv):
            raise CommandError(SYNTAX)
        if int_arg(argv[i + 1], "ERR value is not an integer or out of range") < 0:
            raise CommandError(SYNTAX)
    ks = node.keyspace
    key = argv[2]
    value = ks.lookup(ks.dbs[client.db], key)
    if value is None:
        return resp.null(client.proto)
    return resp.integer(KEY_OVERHEAD + len(key) + memory_of(value))
