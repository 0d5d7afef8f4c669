"""CLIENT PAUSE and CLIENT UNPAUSE: Redis 7.0's client pause
(networking.c pauseClients, server.c processCommand).

- ``CLIENT PAUSE timeout [WRITE|ALL]`` holds, until ``timeout`` ms from
  now or CLIENT UNPAUSE, every client's commands (ALL, the default) or
  those that may change the dataset or reach a replica (WRITE): a command
  flagged ``write`` or ``may_replicate`` (PUBLISH, SPUBLISH, PFCOUNT,
  EVAL, EVALSHA, FCALL), an EVAL/FCALL whose script or function declares
  flags without ``no-writes``, an EXEC whose queued commands include one.
  A new pause while paused keeps the later end and the stricter kind.
- A held command is parked, not refused: the client is blocked on a
  ``HeldCommand`` (INFO's blocked_clients counts it, CLIENT LIST shows
  ``b``), reads nothing more meanwhile, and the command runs when the
  pause ends, clients in the order they were held; one held again by a
  pause still in force (ALL lowered to WRITE) waits on.  Checks that
  answer at once (unknown command, arity, NOAUTH, OOM...) come first, so
  a bad request gets its error while paused, as in Redis.
- The core never waits: the node runs the held commands after the command
  that ended the pause (``node.keys_ready`` is the "something to do after
  this command" flag it already reads), or from the cron when the timeout
  passes (every 100 ms, as Redis's serverCron checks it).
- While paused the keys stand still: nothing expires, neither lazily (a
  key past its time reads as missing but stays) nor actively, as Redis
  keeps the dataset constant for a failover.  No key is ever evicted by a
  node (maxmemory-policy has no key-evicting policy).
- Disque's side: ADDJOB, GETJOB (it takes a job off its queue), ACKJOB,
  NACK and every job command flagged ``write`` are held under WRITE;
  QLEN, SHOW, JSCAN, QPEEK and the queue PAUSE command (Disque's, which
  pauses a queue and is unrelated) are not.  The cluster bus is never
  held: replication from other nodes, acks and queue federation go on,
  and so do the jobs' own timers (retries, TTLs), which the cluster
  agrees on across nodes.
- CLIENT KILL and a disconnect drop a held client and its command; CLIENT
  UNBLOCK does not release one (it answers 0, as Redis 7.2 settled it).
"""

from __future__ import annotations

from hashlib import sha1
from typing import TYPE_CHECKING, Final

from ...protocol import resp
from ...protocol.args import to_int, upper
from ...protocol.errors import CommandError

if TYPE_CHECKING:
    from ..client import Client
    from ..command import Command
    from ..node import Node

PAUSE_OFF: Final = 0
PAUSE_WRITE: Final = 1
PAUSE_ALL: Final = 2

_SCRIPT_COMMANDS: Final = frozenset(("EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO"))
_FUNCTION_COMMANDS: Final = frozenset(("FCALL", "FCALL_RO"))


class HeldCommand:
    """``client.blocked`` while its command waits for the pause to end."""

    __slots__ = ("argv",)

    def __init__(self, argv: list[bytes]) -> None:
        self.argv = argv

    def cancel(self, node: Node, client: Client) -> None:
        node.client_pause.held.pop(client, None)

    def timeout(self, node: Node, client: Client) -> None:
        pass  # (never armed: a held client waits for the pause's end only)


class ClientPause:
    """``node.client_pause``; ``node.paused`` mirrors ``kind`` for the
    one test node.execute makes per command."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.kind = PAUSE_OFF
        self.end_ms = 0
        self.held: dict[Client, None] = {}  # in the order held
        self.resuming: list[Client] = []  # released, to run after this command

    def pause(self, end_ms: int, kind: int) -> None:
        if self.kind != PAUSE_OFF:
            kind = max(kind, self.kind)
            end_ms = max(end_ms, self.end_ms)
        self.kind = kind
        self.end_ms = end_ms
        self.node.paused = kind
        self.check(self.node.now_ms())  # (PAUSE 0 ends at once)

    def unpause(self) -> None:
        self._set(PAUSE_OFF)

    def check(self, now_ms: int) -> None:
        """End the pause if its time has passed (the cron's look)."""
        if self.kind != PAUSE_OFF and self.end_ms < now_ms:
            self._set(PAUSE_OFF)

    def cron(self, now_ms: int) -> None:
        self.check(now_ms)
        if self.resuming:
            self.resume()

    def _set(self, kind: int) -> None:
        lowered = kind < self.kind
        self.kind = kind
        self.node.paused = kind
        if kind == PAUSE_OFF:
            self.end_ms = 0
        if lowered and self.held:
            # every held client is looked at again: those a weaker pause
            # still holds are held anew, behind the others
            self.resuming.extend(self.held)
            self.held.clear()
            self.node.keys_ready = True

    def holds(self, client: Client, command: Command, argv: list[bytes]) -> bool:
        """Whether ``command`` must wait for the pause: if so the client is
        parked with it."""
        if self.kind == PAUSE_WRITE and not may_write(self.node, client, command, argv):
            return False
        client.last_cmd = command.lname
        self.node.block(client, HeldCommand(argv), 0)
        self.held[client] = None
        return True

    def resume(self) -> None:
        """Run the released clients' commands, oldest held first; each
        client then goes on with what it sent meanwhile."""
        node = self.node
        resuming, self.resuming = self.resuming, []
        for client in resuming:
            held = client.blocked
            if type(held) is not HeldCommand or client.killed:
                continue
            node.unblock(client)
            node.execute(client, held.argv)
            if node.on_wake is not None:
                node.on_wake.wake(client)  # its output, and its next requests


def may_write(node: Node, client: Client, command: Command, argv: list[bytes]) -> bool:
    """Redis's is_may_replicate_command: what CLIENT PAUSE WRITE holds."""
    if command.name == "EXEC":
        multi = client.multi
        if multi is None:
            return False
        return any(may_write(node, client, queued, queued_argv)
                   for queued, queued_argv in multi.commands)
    if command.name in _SCRIPT_COMMANDS or command.name in _FUNCTION_COMMANDS:
        declared = _declared_flags(node, command, argv)
        if declared is not None:  # declared flags replace the command's (script.c)
            from ..keyspace.scripting import NO_WRITES
            return not declared & NO_WRITES
    flags = command.flags
    return "write" in flags or "may_replicate" in flags


def _declared_flags(node: Node, command: Command, argv: list[bytes]) -> int | None:
    """A script's or function's declared flags, None if it declares none
    or is unknown yet (eval.c evalGetCommandFlags, functions.c
    fcallGetCommandFlags)."""
    from ..keyspace.scripting import shebang_flags  # (Lua: loaded on first use)
    engine = node.scripting
    if command.name in _FUNCTION_COMMANDS:
        if engine is None or engine.functions is None:
            return None
        function = engine.functions.functions.get(argv[1].lower())
        return None if function is None else function.flags
    by_sha = command.name.startswith("EVALSHA")
    if by_sha and len(argv[1]) != 40:
        return None
    entry = None
    if engine is not None:
        entry = engine.scripts.get(argv[1].lower() if by_sha
                                   else sha1(argv[1]).hexdigest().encode())
    if entry is not None:
        return entry[2]
    if by_sha:
        return None
    try:
        return shebang_flags(argv[1])[0]
    except CommandError:
        return None


def client_pause(node: Node, argv: list[bytes]) -> bytes:
    """CLIENT PAUSE timeout [WRITE|ALL]."""
    kind = PAUSE_ALL
    if len(argv) == 4:
        mode = upper(argv[3])
        if mode == "WRITE":
            kind = PAUSE_WRITE
        elif mode != "ALL":
            raise CommandError("ERR CLIENT PAUSE mode must be WRITE or ALL")
    timeout = to_int(argv[2], "ERR timeout is not an integer or out of range")
    if timeout < 0:
        raise CommandError("ERR timeout is negative")
    end_ms = node.now_ms() + timeout if timeout > 0 else 0
    node.client_pause.pause(end_ms, kind)
    return resp.OK


def client_unpause(node: Node) -> bytes:
    node.client_pause.unpause()
    return resp.OK
