"""A refused AUTH: logged with the client's address, answered late.

No fast guessing: the client that sent a wrong password hears its error
only ``auth-failure-delay-ms`` later, and nothing else it sent runs
meanwhile (it is *blocked*, as in a GETJOB: the shell runs none of its
pipelined requests until it is unblocked, while every other client goes on;
the core never awaits).  A pipeline of guesses is therefore paid in full,
one delay each.  Inside EXEC or a script (nothing may wait there) and with
a delay of 0 the error is immediate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import CommandError

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node


class AuthDelay:
    """The blocked state of a client whose AUTH was refused."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message

    def timeout(self, node: Node, client: Client) -> None:
        node.unblock(client)
        node.reply(client, resp.error(self.message))

    def cancel(self, node: Node, client: Client) -> None:
        pass


def refuse(node: Node, client: Client, message: str) -> None:
    """Log the failure, then reply ``message`` after the delay (returns
    None: the reply comes later) or raise it now when nothing may wait."""
    node.stats.auth_failures += 1
    if node.on_log is not None:
        node.on_log("warning", f"Failed AUTH from client {client.addr} "
                    f"(id={client.id}): wrong password or user")
    delay_ms: int = node.config.auth_failure_delay_ms
    if delay_ms <= 0 or client.blocked is not None or node.blocking.deny():
        raise CommandError(message)
    node.block(client, AuthDelay(message), delay_ms)
