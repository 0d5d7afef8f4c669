"""trisque.client: Disque's job API on trisque nodes, sync and asyncio.

Why a RESP layer of our own rather than redis-py: hiredis, which parses
RESP2 and RESP3 alike, is already a dependency of trisque, so the client
needs nothing more than ``pip install trisque``; every call has its own
read deadline (the time a GETJOB or ADDJOB may block on purpose plus the
read timeout), which redis-py's connections do not give on every version
the suite supports; and the sync and asyncio clients share one sans-I/O
core (calls.py builds each command and reads its reply, wire.py turns
them into bytes and back) so their APIs cannot drift apart.  The price is
the transport: sockets and pools here (sync.py, aio.py), about 300 lines.

The public names are below; docs/client.md is the guide.
"""

from trisque.client.aio import AsyncClient
from trisque.client.async_worker import AsyncWorker
from trisque.client.errors import (
    AuthenticationError, BadJobIdError, LeavingError, LoadingError, NodeError,
    NodeTimeoutError, NoJobError, NoNodeAvailableError, NoReplicationError,
    OutOfMemoryError, PersistenceError, ProtocolError, QueueFullError, QueuePausedError,
    ReplyError, TooLateError, TrisqueError,
)
from trisque.client.replies import Hello, HelloNode, Job, JobState, QueueStats
from trisque.client.sync import Client
from trisque.client.worker import Worker

__all__ = [
    "AsyncClient", "AsyncWorker", "AuthenticationError", "BadJobIdError", "Client", "Hello", "HelloNode", "Job", "JobState",
    "LeavingError", "LoadingError", "NoJobError", "NoNodeAvailableError", "NoReplicationError",
    "NodeError", "NodeTimeoutError", "OutOfMemoryError", "PersistenceError", "ProtocolError",
    "QueueFullError", "QueuePausedError", "QueueStats", "ReplyError", "TooLateError",
    "TrisqueError", "Worker",
]
