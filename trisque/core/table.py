"""The command table: every command of the node core, by name.

Each command module registers its handlers with ``command.command`` as it
is imported; importing them all here makes the table whole.  The node is
given this table (``Node(..., table=COMMANDS)``) and knows no command
module; the cluster adds CLUSTER to it the same way (cluster/commands.py).
"""

from .command import COMMANDS, Command, command, unique_commands

__all__ = ["COMMANDS", "Command", "command", "unique_commands"]

# Registering happens on import; the keyspace's commands join the same table.
from .jobs import commands_jobs, commands_queues  # noqa: E402,F401
from .admin import commands_server  # noqa: E402,F401
from .keyspace import commands_db, commands_keys, commands_strings  # noqa: E402,F401
from .keyspace import commands_hashes, commands_sets, commands_zsets  # noqa: E402,F401
from .keyspace import commands_lists  # noqa: E402,F401
from .keyspace import commands_zsets_blocking  # noqa: E402,F401
from .keyspace import commands_transactions  # noqa: E402,F401
from .keyspace import scripting  # noqa: E402,F401
