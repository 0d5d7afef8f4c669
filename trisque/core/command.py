"""A command's entry in the table: name, arity, flags, handler, as Redis and
Disque keep theirs, and ``command``, the decorator a command module
registers its handlers with.  Arity checks, COMMAND output and flag-driven
refusals (OOM, loading) come from here, not from each handler.

Arity is Redis's: N means exactly N arguments including the name, -N at
least N.  Flags: write, readonly, denyoom, admin, loading (allowed while
loading), fast, noauth (allowed before AUTH).

This module imports nothing of the core: command modules import it, the
table (table.py) imports the command modules, the node is given the table.
"""

from typing import Any, Callable

Handler = Callable[..., Any]


class Command:
    __slots__ = ("name", "lname", "arity", "flags", "handler", "deny_oom",
                 "ok_loading", "calls", "ns", "hist", "first_key", "last_key", "key_step")
    name: str
    lname: str
    arity: int
    flags: tuple[str, ...]
    handler: Handler
    deny_oom: bool
    ok_loading: bool
    calls: int
    ns: int
    hist: list[int]
    first_key: int
    last_key: int
    key_step: int

    def __init__(self, name: str, arity: int, flags: tuple[str, ...], handler: Handler,
                 keys: tuple[int, int, int] = (0, 0, 0)) -> None:
        self.name = name
        self.lname = name.lower()
        self.arity = arity
        self.flags = flags
        self.handler = handler
        self.deny_oom = "denyoom" in flags
        self.ok_loading = "loading" in flags
        self.calls = 0
        self.ns = 0  # time spent running it (INFO commandstats)
        # calls by the bit length of their time in ns: hist[k] counts the
        # calls that took 2**(k-1) to 2**k - 1 ns (the /metrics histogram)
        self.hist = [0] * 65
        self.first_key, self.last_key, self.key_step = keys


COMMANDS: dict[bytes, "Command"] = {}  # filled as the command modules load


def command(name: str, arity: int, flags: str = "",
            keys: tuple[int, int, int] = (0, 0, 0)) -> Callable[[Handler], Handler]:
    """Register the decorated handler ``(node, client, argv) -> reply``."""
    def register(handler: Handler) -> Handler:
        entry = Command(name, arity, tuple(flags.split()), handler, keys)
        COMMANDS[name.encode()] = entry
        COMMANDS[name.lower().encode()] = entry
        return handler
    return register


def unique_commands(table: dict[bytes, "Command"]) -> list["Command"]:
    """Each command of ``table`` once (it holds upper and lower case names)."""
    seen: dict[str, Command] = {}
    for entry in table.values():
        seen[entry.name] = entry
    return [seen[name] for name in sorted(seen)]
