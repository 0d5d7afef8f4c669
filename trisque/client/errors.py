"""What can go wrong in a call, as exceptions a caller can catch by kind.

Three families, all under ``TrisqueError``:

- ``NodeError``: a node could not be reached, or did not answer in time
  (``NodeTimeoutError``); ``NoNodeAvailableError`` when every node of the
  client failed in one call (each failure is in ``.errors``).
- ``AuthenticationError``: a node refused the password (or wants one).
- ``ReplyError``: the node answered with an error reply; its first word
  (``NOREPL``, ``OOM``, ``PAUSED``...) picks the subclass, and ``code`` and
  ``message`` keep the reply's text.
"""

from typing import Final, Sequence


class TrisqueError(Exception):
    """Every error the client raises."""


class NodeError(TrisqueError):
    """A node could not be reached, or its connection broke."""

    address: str

    def __init__(self, address: str, message: str) -> None:
        super().__init__(f"{address}: {message}")
        self.address = address


class NodeTimeoutError(NodeError):
    """A node did not connect or answer within the client's deadline."""


class NoNodeAvailableError(NodeError):
    """Every node the call could go to failed; ``errors`` says how."""

    errors: list[TrisqueError]

    def __init__(self, errors: Sequence[TrisqueError]) -> None:
        TrisqueError.__init__(self, "no node could serve the call: "
                              + "; ".join(str(e) for e in errors))
        self.address = ""
        self.errors = list(errors)


class AuthenticationError(TrisqueError):
    """The node refused the password, or requires one and none was given."""


class ProtocolError(TrisqueError):
    """The node sent bytes that are not RESP (not a trisque node?)."""


class ReplyError(TrisqueError):
    """An error reply.  ``code`` is its first word (``ERR`` when it has
    none of its own), ``message`` the whole text."""

    code: str
    message: str

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        first = message.split(" ", 1)[0]
        self.code = first if first.isupper() else "ERR"


class NoReplicationError(ReplyError):
    """-NOREPL: the job could not reach its replication level (too few
    reachable nodes, or the ADDJOB timeout passed first)."""


class OutOfMemoryError(ReplyError):
    """-OOM: the node is over its maxmemory."""


class QueuePausedError(ReplyError):
    """-PAUSED: the queue is paused in that direction (PAUSE q in)."""


class QueueFullError(ReplyError):
    """-MAXLEN: the queue already holds the job's MAXLEN jobs."""


class LoadingError(ReplyError):
    """-LOADING: the node is still loading its AOF (the client tries the
    next node first)."""


class LeavingError(ReplyError):
    """-LEAVING: the node is leaving the cluster (the client tries the
    next node first)."""


class NoJobError(ReplyError):
    """-NOJOB: the node does not know the job (WORKING)."""


class TooLateError(ReplyError):
    """-TOOLATE: WORKING after half of the job's TTL."""


class BadJobIdError(ReplyError):
    """-BADID: not a job ID."""


class PersistenceError(ReplyError):
    """-MISCONF: the node cannot write its AOF and refuses writes."""


_BY_CODE: Final[dict[str, type[ReplyError]]] = {
    "NOREPL": NoReplicationError,
    "OOM": OutOfMemoryError,
    "PAUSED": QueuePausedError,
    "MAXLEN": QueueFullError,
    "LOADING": LoadingError,
    "LEAVING": LeavingError,
    "NOJOB": NoJobError,
    "TOOLATE": TooLateError,
    "BADID": BadJobIdError,
    "MISCONF": PersistenceError,
}

# A refused password: Redis's AUTH (ERR invalid password), HELLO ... AUTH
# (WRONGPASS), or any command before AUTH (NOAUTH).
_AUTH_REFUSALS: Final = ("WRONGPASS", "NOAUTH", "ERR invalid password",
                         "ERR AUTH <password> called without any password")

# Replies that say "this node cannot serve now, another may": the client
# moves on to the next node instead of raising at once.
RETRY_ELSEWHERE: Final = (LoadingError, LeavingError)


def reply_error(message: str) -> TrisqueError:
    """The exception for an error reply's text."""
    if message.startswith(_AUTH_REFUSALS):
        return AuthenticationError(message)
    error = ReplyError(message)
    kind = _BY_CODE.get(error.code)
    return kind(message) if kind is not None else error
