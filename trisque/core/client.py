"""A client connection as the core sees it: protocol version, auth, output.

Disque never spoke RESP3, and its clients (pydisque, dwq) read every reply
as RESP2: so Disque's own commands answer in RESP2 shapes (flat field/value
arrays, INFO as a bulk) on a RESP3 connection too, unless it asked for
RESP3 types with ``CLIENT DISQUE-RESP3 ON`` (``disque_proto``).  Their
nulls are RESP3's ``_`` there all the same: RESP2's ``$-1``/``*-1`` are
not RESP3, and a RESP3 parser may not read them (redis-py's own waits for
-1 bytes).  Redis's generic commands (HELLO 3, CLIENT, CONFIG...)
answer in RESP3 types, as Redis 7 does.

The shell owns the socket; the core appends encoded replies to ``out`` and,
for replies produced outside the client's own request (a blocked GETJOB
served by another client's ADDJOB, a timeout), calls ``node.wake(client)``
so the shell flushes them.
"""

from typing import Any, Callable, Final

from mypy_extensions import mypyc_attr

from ..protocol.resp import RESP3_FLAT
from .command import Command
from .jobs.deadlines import Scheduled

class ClientWaker:
    """Node.on_wake, the shell's hook: a client has output to flush, or
    requests to run, made outside its own turn (served while blocked,
    killed, unpaused).  A class, not a Callable: compiled, its call is a
    native one where a bound method's was generic (~190 instructions, a
    few times a replicated job).  ``FunctionWaker`` wraps a function."""

    def wake(self, client: "Client") -> None:
        raise NotImplementedError


class FunctionWaker(ClientWaker):
    """A function as the hook (the simulator, tests)."""

    def __init__(self, fn: Callable[["Client"], None]) -> None:
        self.fn = fn

    def wake(self, client: "Client") -> None:
        self.fn(client)


# reply modes (CLIENT REPLY)
REPLY_ON: Final = 0
REPLY_OFF: Final = 1
REPLY_SKIP: Final = 2


class Client(Scheduled):
    __slots__ = (
        "id", "addr", "laddr", "proto", "name", "lib_name", "lib_ver",
        "authenticated", "ctime_ms", "last_ms", "last_cmd", "out",
        "blocked", "reply_mode", "close_after_reply", "monitor",
        "killed", "transport", "slots", "slots_head", "disque_resp3", "db",
        "multi", "watch", "pubsub", "last_name", "last_command",
        "other_name", "other_command",
    )
    id: int
    addr: str
    laddr: str
    proto: int
    name: str
    lib_name: str
    lib_ver: str
    authenticated: bool
    ctime_ms: int
    last_ms: int
    last_cmd: str
    out: list[bytes]
    blocked: Any
    reply_mode: int
    close_after_reply: bool
    monitor: bool
    killed: bool
    transport: Any
    slots: list[Any] | None
    slots_head: int
    disque_resp3: bool
    db: int
    multi: Any
    watch: Any
    pubsub: Any
    last_name: bytes
    last_command: Command | None
    other_name: bytes
    other_command: Command | None

    def __init__(self, client_id: int, addr: str = "", laddr: str = "", now_ms: int = 0,
                 transport: Any = None) -> None:
        self.id = client_id
        self.addr = addr  # "ip:port" of the peer
        self.laddr = laddr
        self.proto = 2
        self.name = ""
        self.lib_name = ""
        self.lib_ver = ""
        self.authenticated = False
        self.ctime_ms = now_ms
        self.last_ms = now_ms
        self.last_cmd = "NULL"
        self.out = []  # encoded replies not yet sent
        self.blocked = None  # a Blocked* object while waiting for an event
        self.wake_ms = None  # deadline of the blocking operation, if any
        self.reply_mode = REPLY_ON
        self.close_after_reply = False
        self.monitor = False
        self.killed = False
        self.transport = transport  # whatever the shell needs to flush
        # Replies queued behind a PendingReply (e.g. an ADDJOB waiting for
        # replication): pipelined commands keep running, replies keep order.
        # Those from ``slots_head`` on are not sent yet (a list and an index:
        # compiled, a deque's append and popleft are generic method calls).
        self.slots = None
        self.slots_head = 0
        self.disque_resp3 = False  # CLIENT DISQUE-RESP3 ON
        self.db = 0  # the keyspace database SELECTed
        self.multi = None  # transactions.Transaction between MULTI and EXEC
        self.watch = None  # transactions.Watch: the keys WATCHed
        # pubsub/channels.py's Subscriptions while subscribed to anything:
        # not None is Redis's subscribed mode (one test on the hot path)
        self.pubsub = None
        # The names of the last two commands node.execute looked up for
        # this client, and their entries (a client mostly repeats one, or
        # alternates two as a consumer's GETJOB and ACKJOB: comparing the
        # name's bytes costs less than hashing them for the table, ~400
        # instructions)
        self.last_name = self.other_name = b""
        self.last_command = self.other_command = None

    def disque_proto(self) -> int:
        """The protocol Disque's commands answer this client in (for
        protocol/resp.py's encoders): RESP2, or on a RESP3 connection
        RESP2's shapes with RESP3's null, or RESP3 after the opt-in."""
        if self.proto == 2 or self.disque_resp3:
            return self.proto
        return RESP3_FLAT


class BlockedGet:
    """A GETJOB waiting for a job on one of ``queues``."""

    __slots__ = ("queues", "withcounters")
    queues: list[bytes]
    withcounters: bool

    def __init__(self, queues: list[bytes], withcounters: bool) -> None:
        self.queues = queues
        self.withcounters = withcounters


@mypyc_attr(allow_interpreted_subclasses=True)  # cluster/replication.py's
class PendingReply(Scheduled):
    """A reply that is not known yet; later replies of the same client wait
    behind it.  ``node.resolve(pending, data)`` fills it in.  Subclasses
    that set ``wake_ms`` through ``node.deadlines`` get ``fire(node)`` called
    at that time; ``cancel(node)`` runs if the client goes away first."""

    __slots__ = ("client", "data")
    client: Client | None  # None: a timer (cluster/replication.py)
    data: bytes | None

    def __init__(self, client: Client | None) -> None:
        self.client = client
        self.data = None
        self.wake_ms = None

    def fire(self, node: Any) -> None:
        pass

    def cancel(self, node: Any) -> None:
        pass

