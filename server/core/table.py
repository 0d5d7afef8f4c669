"""The command table: name, arity, flags, handler, as Redis and Disque
keep theirs.  Arity checks, COMMAND output and flag-driven refusals (OOM,
loading) come from here, not from each handler.

Arity is Redis's: N means exactly N arguments including the name, -N at
least N.  Flags: write, readonly, denyoom, admin, loading (allowed while
loading), fast, noauth (allowed before AUTH).
"""


class Command:
    __slots__ = ("name", "lname", "arity", "flags", "handler", "deny_oom",
                 "ok_loading", "calls", "ns", "hist", "first_key", "last_key", "key_step")

    def __init__(self, name, arity, flags, handler, keys=(0, 0, 0)):
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


COMMANDS = {}


def command(name, arity, flags="", keys=(0, 0, 0)):
    """Register the decorated handler ``(node, client, argv) -> reply``."""
    def register(handler):
        entry = Command(name, arity, tuple(flags.split()), handler, keys)
        COMMANDS[name.encode()] = entry
        COMMANDS[name.lower().encode()] = entry
        return handler
    return register


def unique_commands():
    seen = {}
    for entry in COMMANDS.values():
        seen[entry.name] = entry
    return [seen[name] for name in sorted(seen)]


# Registering happens on import; the keyspace's commands join the same table.
from . import commands_jobs, commands_queues, commands_server  # noqa: E402,F401
from .keyspace import commands_db, commands_keys, commands_strings  # noqa: E402,F401
from .keyspace import commands_hashes, commands_sets, commands_zsets  # noqa: E402,F401
from .keyspace import commands_lists  # noqa: E402,F401
from .keyspace import commands_zsets_blocking  # noqa: E402,F401
from .keyspace import commands_transactions  # noqa: E402,F401
from .keyspace import scripting  # noqa: E402,F401
