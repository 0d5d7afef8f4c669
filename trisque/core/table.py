"""The command table of the node core: every command of its modules, by name.

Each command module lists its commands (its ``COMMANDS``, a
``command.Commands``); this module names those lists and builds the table
from them.  The node is given a table (``Node(..., table=COMMANDS)``) and
knows no command module; the node process adds the cluster's CLUSTER to
this one (server/commands.py).
"""

from .command import Command, Commands, table_of
from .admin import commands_server
from .jobs import commands_jobs, commands_policies, commands_queues, commands_waitjob
from .jobs import commands_schedules
from .keyspace import commands_db, commands_hashes, commands_keys, commands_lists
from .keyspace import commands_sets, commands_strings, commands_transactions
from .keyspace import commands_zsets, commands_zsets_blocking, functions, scripting
from .keyspace import commands_bits, commands_hyperloglog
from .keyspace import commands_copy, commands_dump, commands_lcs, commands_memory, commands_sort
from .keyspace import commands_zsets_algebra
from .keyspace import commands_stream_groups, commands_stream_read, commands_streams
from .pubsub import commands_pubsub

__all__ = ["COMMANDS", "KEYSPACE", "KEYSPACE_RECORDS", "LISTS"]

KEYSPACE: tuple[Commands, ...] = (
    commands_db.COMMANDS, commands_keys.COMMANDS, commands_strings.COMMANDS,
    commands_lists.COMMANDS, commands_hashes.COMMANDS, commands_sets.COMMANDS,
    commands_zsets.COMMANDS, commands_zsets_blocking.COMMANDS,
    commands_transactions.COMMANDS, scripting.COMMANDS, functions.COMMANDS,
    commands_bits.COMMANDS, commands_hyperloglog.COMMANDS,
    commands_copy.COMMANDS, commands_dump.COMMANDS, commands_lcs.COMMANDS, commands_memory.COMMANDS,
    commands_sort.COMMANDS, commands_zsets_algebra.COMMANDS,
    commands_streams.COMMANDS, commands_stream_groups.COMMANDS, commands_stream_read.COMMANDS)

LISTS: tuple[Commands, ...] = (
    commands_jobs.COMMANDS, commands_queues.COMMANDS, commands_policies.COMMANDS,
    commands_waitjob.COMMANDS,
    commands_schedules.COMMANDS,
    commands_server.COMMANDS, commands_pubsub.COMMANDS, *KEYSPACE)

COMMANDS: dict[bytes, Command] = table_of(*LISTS)

# The records the AOF loader hands to Keyspace.replay (server/aof/keys.py):
# every keyspace write command (each logs a record of its own name or of
# another of these), SELECT, which says which db the next records are about,
# and FUNCTION (its LOAD, DELETE, FLUSH, RESTORE: the libraries).
KEYSPACE_RECORDS: frozenset[bytes] = frozenset(
    [b"SELECT", b"FUNCTION"] + [c.name.encode() for commands in KEYSPACE for c in commands.commands
                   if "write" in c.flags])
