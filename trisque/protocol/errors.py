"""Error replies, with the exact texts clients of Disque and Redis expect."""


class CommandError(Exception):
    """Raised by a command handler; the message becomes ``-message``."""

    message: str

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


SYNTAX = "ERR syntax error"
NOT_INTEGER = "ERR value is not an integer or out of range"
BADID = "BADID Invalid Job ID format."
NOAUTH = "NOAUTH Authentication required."
NOJOB = "NOJOB Job not known in the context of this node."
LEAVING = ("LEAVING This node is leaving the cluster, "
           "please connect to a different one")
LOADING = "LOADING Disque is loading the dataset in memory"
OOM = "OOM command not allowed when used memory > 'maxmemory'."
NOREPLICAS = "NOREPLICAS Not enough good replicas to write."
NOREPL_NODES = "NOREPL Not enough reachable nodes for the requested replication level"
NOREPL_TIMEOUT = "NOREPL Timeout reached before replicating to the requested number of nodes"
NOREPL_REMOVED = ("NOREPL job removed (expired?) before the requested "
                  "replication level was achieved")
PAUSED_IN = "PAUSED Queue paused in input, try later"
MAXLEN = "MAXLEN Queue is already longer than the specified MAXLEN count"


def wrong_arity(name: str) -> str:
    return f"ERR wrong number of arguments for '{name}' command"


def unknown_command(name: str) -> str:
    return f"ERR unknown command '{name}'"


def unknown_subcommand(sub: str, command: str) -> str:
    return (f"ERR unknown subcommand '{sub}'. Try {command.upper()} HELP.")
