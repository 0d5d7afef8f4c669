"""Redis 7's functions: FUNCTION and its subcommands.

For now only ``FUNCTION FLUSH [ASYNC|SYNC]``: no library can be loaded
yet, so flushing empties nothing and answers OK (Redis's own test suite
calls it before every test, which is why it comes first).  LOAD, FCALL,
FCALL_RO, LIST, DELETE, DUMP/RESTORE, STATS and the libraries' state
(AOF, rewrite, maxmemory) come in this module next.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import CommandError, unknown_subcommand
from ..command import Commands

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(0, 0, 0))  # the keyspace's; FUNCTION names no key
key_command = COMMANDS.command


@key_command("FUNCTION", -2, "", "Manage Redis 7 functions (FLUSH only yet)",
             "FLUSH [ASYNC|SYNC]")
def function(node: Node, client: Client, argv: list[bytes]) -> bytes:
    sub = argv[1].upper()
    if sub != b"FLUSH":
        raise CommandError(unknown_subcommand(argv[1].decode("utf-8", "replace"), "FUNCTION"))
    if len(argv) > 3:
        raise CommandError("ERR unknown subcommand or wrong number of arguments for "
                           f"'{argv[1].decode('utf-8', 'replace')}'. Try FUNCTION HELP.")
    if len(argv) == 3 and argv[2].upper() not in (b"SYNC", b"ASYNC"):
        raise CommandError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
    return resp.OK
