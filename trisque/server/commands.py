"""The node process's command table: the core's commands and the cluster's
CLUSTER, which the process wires in (main.py).  COMMAND, COMMAND DOCS and
docs/commands.md (command_reference.py) show this table."""

from ..cluster import commands as cluster_commands
from ..core.command import Command, Commands, table_of
from ..core.table import LISTS as CORE_LISTS

LISTS: tuple[Commands, ...] = (*CORE_LISTS, cluster_commands.COMMANDS)
COMMANDS: dict[bytes, Command] = table_of(*LISTS)
