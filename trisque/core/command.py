"""A command's entry in the table: its name, arity, flags and handler, as
Redis and Disque keep theirs, and its help (group, summary, syntax) for
COMMAND DOCS and docs/commands.md.  Arity checks, COMMAND output and
flag-driven refusals (OOM, loading) come from here, not from each handler.

Arity is Redis's: N means exactly N arguments including the name, -N at
least N.  Flags: write, readonly, denyoom, admin, loading (allowed while
loading), fast, noauth (allowed before AUTH).

A command module lists its own commands in a ``Commands`` (its
``COMMANDS``), filled by the decorator ``COMMANDS.command`` as the module
is defined; nothing global is touched.  ``table_of`` makes a node's table
from such lists: core/table.py the core's, server/commands.py the node
process's (with the cluster's).  This module imports nothing of the core.
"""

from typing import Any, Callable, Final, TypeVar

from mypy_extensions import i64

Handler = Callable[..., Any]
H = TypeVar("H", bound=Callable[..., Any])

# Redis's container commands: their subcommands are named "client|list" in
# errors and timed apart (LATENCY HISTOGRAM).
CONTAINERS: Final = frozenset((
    "ACL", "CLIENT", "CLUSTER", "COMMAND", "CONFIG", "FUNCTION", "LATENCY", "MEMORY",
    "MODULE", "OBJECT", "PUBSUB", "SCRIPT", "SLOWLOG", "XGROUP", "XINFO"))
# Most subcommands timed apart per container (only calls answered without
# an error are counted: a bound all the same against made-up names).
MAX_TIMED_SUBCOMMANDS: Final = 64


class Command:
    __slots__ = ("name", "lname", "arity", "flags", "handler", "deny_oom", "write",
                 "ok_loading", "container", "subcommands", "calls", "ns", "hist", "hist_slot", "hist_run", "rejected", "failed", "first_key", "last_key", "key_step",
                 "group", "summary", "syntax")
    name: str
    lname: str
    arity: int
    flags: tuple[str, ...]
    handler: Handler
    deny_oom: bool
    write: bool
    ok_loading: bool
    container: bool
    subcommands: "dict[str, Command] | None"
    calls: int
    ns: int
    hist: list[int]
    hist_slot: i64
    hist_run: i64
    rejected: int
    failed: int
    first_key: int
    last_key: int
    key_step: int
    group: str
    summary: str
    syntax: str

    def __init__(self, name: str, arity: int, flags: tuple[str, ...], handler: Handler,
                 keys: tuple[int, int, int] = (0, 0, 0), group: str = "generic",
                 summary: str = "", syntax: str = "") -> None:
        self.name = name
        self.lname = name.lower()
        self.arity = arity
        self.flags = flags
        self.handler = handler
        self.deny_oom = "denyoom" in flags
        self.write = "write" in flags  # (a script's redis.call asks on every call)
        self.ok_loading = "loading" in flags
        self.container = name.upper() in CONTAINERS
        self.subcommands = None  # a container's, timed: "config|get" -> its entry
        self.calls = 0
        self.ns = 0  # time spent running it (INFO commandstats)
        # calls by the bit length of their time in ns: hist[k] counts the
        # calls that took 2**(k-1) to 2**k - 1 ns (the /metrics histogram)
        self.hist = [0] * 65
        # The latest calls, all in one slot, not yet added to hist (see
        # count_time): readers take histogram().
        self.hist_slot = 0
        self.hist_run = 0
        # INFO commandstats as Redis 7: refused before running (arity, OOM,
        # NOAUTH...), and run but answering an error
        self.rejected = 0
        self.failed = 0
        self.first_key, self.last_key, self.key_step = keys
        self.group = group  # COMMAND DOCS: jobs, queues, connection, server, cluster, generic
        self.summary = summary or name  # one line
        self.syntax = syntax  # the arguments after the name, as one line; "" if none shown


    def count_time(self, elapsed_ns: int) -> None:
        """A call's time into the histogram.  Calls in the slot of the
        one before are counted natively: compiled, a list item's += makes
        an int object each call (and frees the one before)."""
        slot: i64 = elapsed_ns.bit_length()
        if slot == self.hist_slot:
            self.hist_run += 1
        else:
            self.histogram()
            self.hist_slot = slot
            self.hist_run = 1

    def histogram(self) -> list[int]:
        """``hist`` with every call counted so far."""
        if self.hist_run:
            hist = self.hist
            count: int = hist[self.hist_slot]
            hist[self.hist_slot] = count + int(self.hist_run)
            self.hist_run = 0
        return self.hist

    def reset_histogram(self) -> None:
        self.hist = [0] * 65
        self.hist_run = 0
        self.subcommands = None

    def count_subcommand(self, sub: bytes, elapsed_ns: int) -> None:
        """A container's call into its subcommand's histogram."""
        subcommands = self.subcommands
        if subcommands is None:
            subcommands = self.subcommands = {}
        name = self.lname + "|" + sub.decode("utf-8", "replace").lower()
        entry = subcommands.get(name)
        if entry is None:
            if len(subcommands) >= MAX_TIMED_SUBCOMMANDS:
                return
            entry = subcommands[name] = Command(name, self.arity, self.flags, self.handler)
        entry.calls += 1
        entry.ns += elapsed_ns
        entry.count_time(elapsed_ns)


class Commands:
    """The commands of one module, in the order it defines them.

    ``command(name, arity, flags, summary, syntax)`` is the decorator that
    adds the decorated handler ``(node, client, argv) -> reply``; ``group``
    and ``keys`` (first key, last key, step) default to the module's.
    """

    def __init__(self, group: str = "generic", keys: tuple[int, int, int] = (0, 0, 0)) -> None:
        self.group = group
        self.keys = keys
        self.commands: list[Command] = []

    def command(self, name: str, arity: int, flags: str = "", summary: str = "",
                syntax: str = "", *, group: str = "",
                keys: tuple[int, int, int] | None = None) -> Callable[[H], H]:
        def add(handler: H) -> H:
            self.commands.append(Command(name, arity, tuple(flags.split()), handler,
                                         self.keys if keys is None else keys,
                                         group or self.group, summary, syntax))
            return handler
        return add


def table_of(*lists: Commands) -> dict[bytes, Command]:
    """A node's table: each command under its upper and lower case name."""
    table: dict[bytes, Command] = {}
    for commands in lists:
        for entry in commands.commands:
            name = entry.name.encode()
            if name in table:
                raise ValueError(f"command {entry.name} defined twice")
            table[name] = entry
            table[entry.lname.encode()] = entry
    return table


def unique_commands(table: dict[bytes, "Command"]) -> list["Command"]:
    """Each command of ``table`` once (it holds upper and lower case names)."""
    seen: dict[str, Command] = {}
    for entry in table.values():
        seen[entry.name] = entry
    return [seen[name] for name in sorted(seen)]
