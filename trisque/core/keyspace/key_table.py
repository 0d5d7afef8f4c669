"""How keyspace commands join the node's one command table.

``key_command`` registers a handler exactly as ``command.command`` does (so
COMMAND, arity errors, OOM and loading refusals come from the table) and
also remembers the names of the keyspace's write commands: those are the
records the AOF replays through the same handlers (``Keyspace.replay``).
"""

from __future__ import annotations

from typing import Callable, TypeVar

from ..command import command

Handler = TypeVar("Handler", bound=Callable[..., object])

# Records the AOF loader hands to Keyspace.replay: every keyspace write
# command (each logs a record of its own name or of another of these)
# and SELECT, which says which db the next records are about.
AOF_RECORDS: set[bytes] = {b"SELECT"}


def key_command(name: str, arity: int, flags: str = "",
                keys: tuple[int, int, int] = (1, 1, 1)) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        command(name, arity, flags, keys)(handler)
        if "write" in flags.split():
            AOF_RECORDS.add(name.encode())
        return handler
    return register
