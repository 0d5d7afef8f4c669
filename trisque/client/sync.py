"""The blocking client: ``Client``, its connections and their pools.

A client is safe to share between threads: each call takes a connection
from its node's pool (or opens one) and gives it back when the reply came.
A connection that failed is closed, never given back.
"""

import os
import select
import socket
import ssl
import threading
import time
from types import TracebackType
from typing import Iterator, Optional, Sequence, TypeVar, Union, cast

from trisque.client import calls
from trisque.client.base import ClientBase, NodesSpec
from trisque.client.calls import Call
from trisque.client.errors import (
    RETRY_ELSEWHERE, LeavingError, LoadingError, NoNodeAvailableError, NodeError, NodeTimeoutError, TrisqueError,
)
from trisque.client.nodes import NodeAddress
from trisque.client.replies import Hello, Job, JobState, QueueStats, text
from trisque.client.wire import Arg, ReplyReader, encode_command, handshake_commands, raise_if_error

T = TypeVar("T")
RECV_BYTES = 64 * 1024


class Connection:
    """One socket to one node, after its handshake (TLS, HELLO 3, AUTH)."""

    address: NodeAddress
    _client: ClientBase
    _sock: Optional[socket.socket]
    _reader: ReplyReader

    def __init__(self, address: NodeAddress, client: ClientBase) -> None:
        self.address = address
        self._client = client
        self._sock = None
        self._reader = ReplyReader()

    def open(self) -> None:
        options = self._client.options
        name = str(self.address)
        try:
            sock = socket.create_connection((self.address.host, self.address.port),
                                            timeout=options.connect_timeout_s)
        except socket.timeout:
            raise NodeTimeoutError(name, "connect timed out") from None
        except OSError as e:
            raise NodeError(name, f"cannot connect: {e}") from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if options.uses_tls(self.address):
                sock = self._client.ssl_context().wrap_socket(
                    sock, server_hostname=self.address.host)
        except socket.timeout:
            sock.close()
            raise NodeTimeoutError(name, "TLS handshake timed out") from None
        except OSError as e:
            sock.close()
            raise NodeError(name, f"TLS handshake failed: {e}") from None
        self._sock = sock
        try:
            for command in handshake_commands(options.protocol, options.password_for(self.address),
                                              options.username):
                raise_if_error(self.call(command, 0))
        except BaseException:
            self.close()
            raise

    def call(self, args: tuple[Arg, ...], blocks_ms: int) -> object:
        """Send one command, wait for its reply (an error reply is returned
        as its exception).  The node has ``blocks_ms`` plus the client's
        read timeout to answer; past that the connection is closed."""
        sock = self._sock
        name = str(self.address)
        if sock is None:
            raise NodeError(name, "connection closed")
        deadline = time.monotonic() + self._client.options.read_timeout_s + blocks_ms / 1000
        try:
            sock.settimeout(self._client.options.read_timeout_s)
            sock.sendall(encode_command(args))
            while True:
                done, reply = self._reader.next_reply()
                if done:
                    return reply
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise socket.timeout()
                sock.settimeout(remaining)
                data = sock.recv(RECV_BYTES)
                if not data:
                    raise NodeError(name, "connection closed by the node")
                self._reader.feed(data)
        except socket.timeout:
            self.close()
            raise NodeTimeoutError(name, "no reply in time") from None
        except OSError as e:
            self.close()
            raise NodeError(name, f"connection lost: {e}") from None
        except BaseException:  # NodeError, or interrupted mid-reply: unusable
            self.close()
            raise

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None

    @property
    def closed(self) -> bool:
        return self._sock is None

    def looks_dead(self) -> bool:
        """An idle connection with something to read was closed by the
        node (idle timeout, restart) or holds bytes nobody asked for:
        either way, not to be used."""
        sock = self._sock
        if sock is None:
            return True
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)


class Pool:
    """Idle connections to one node, at most ``max_idle`` kept.

    Fork-safe: a child process (a prefork worker) never uses the sockets
    it inherited, which its parent still reads; it opens its own."""

    address: NodeAddress
    _client: ClientBase
    _idle: list[Connection]
    _lock: threading.Lock
    _pid: int

    def __init__(self, address: NodeAddress, client: ClientBase) -> None:
        self.address = address
        self._client = client
        self._idle = []
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def take(self) -> tuple[Connection, bool]:
        """A connection, and whether it was idle in the pool (reused)."""
        if self._pid != os.getpid():
            # Forget the parent's connections without closing them (a
            # TLS close would write to the parent's stream).
            self._lock = threading.Lock()
            self._idle = []
            self._pid = os.getpid()
        while True:
            with self._lock:
                if not self._idle:
                    break
                idle = self._idle.pop()
            if not idle.looks_dead():
                return idle, True
            idle.close()
        return self.open(), False

    def open(self) -> Connection:
        connection = Connection(self.address, self._client)
        connection.open()
        return connection

    def give_back(self, connection: Connection) -> None:
        if connection.closed:
            return
        with self._lock:
            if len(self._idle) < self._client.options.max_idle_per_node:
                self._idle.append(connection)
                return
        connection.close()

    def clear(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


class Client(ClientBase):
    """Disque's job API on a list of trisque nodes (nodes.py has the
    failover and routing rules; docs/client.md the guide)."""

    _pools: dict[NodeAddress, Pool]
    _pools_lock: threading.Lock

    def __init__(self, nodes: NodesSpec = "127.0.0.1:7711", *, password: Optional[str] = None,
                 username: Optional[str] = None, protocol: int = 2, tls: bool = False,
                 ssl_context: Optional[ssl.SSLContext] = None,
                 tls_ca_file: Optional[str] = None, tls_cert_file: Optional[str] = None,
                 tls_key_file: Optional[str] = None, connect_timeout_s: float = 5.0,
                 read_timeout_s: float = 10.0, max_idle_per_node: int = 16,
                 affinity_window: int = 100, topology_refresh_s: float = 60.0) -> None:
        super().__init__(nodes, password=password, username=username, protocol=protocol,
                         tls=tls, ssl_context=ssl_context, tls_ca_file=tls_ca_file,
                         tls_cert_file=tls_cert_file, tls_key_file=tls_key_file,
                         connect_timeout_s=connect_timeout_s, read_timeout_s=read_timeout_s,
                         max_idle_per_node=max_idle_per_node,
                         affinity_window=affinity_window,
                         topology_refresh_s=topology_refresh_s)
        self._pools = {}
        self._pools_lock = threading.Lock()

    # ------------------------------------------------------------ plumbing

    def _pool(self, address: NodeAddress) -> Pool:
        with self._pools_lock:
            pool = self._pools.get(address)
            if pool is None:
                pool = self._pools[address] = Pool(address, self)
            return pool

    def call_on(self, address: NodeAddress, call: Call[T]) -> T:
        """Run ``call`` on this node only (no failover)."""
        pool = self._pool(address)
        try:
            connection, reused = pool.take()
            try:
                reply = connection.call(call.args, call.blocks_ms)
            except NodeTimeoutError:
                raise
            except NodeError:
                if not reused:
                    raise
                # A pooled connection the node closed just now (idle
                # timeout, restart): once more on a new connection.
                pool.clear()
                connection = pool.open()
                reply = connection.call(call.args, call.blocks_ms)
        except NodeError:
            pool.clear()  # its other idle connections are likely dead too
            raise
        pool.give_back(connection)
        return call.decode(raise_if_error(reply))

    def _run(self, call: Call[T]) -> T:
        if self.wants_refresh(cast(Call[object], call)):
            self._refresh()
        first = self.first_node(cast(Call[object], call))
        errors: list[TrisqueError] = []
        for address in self.topology.order(first):
            try:
                result = self.call_on(address, call)
            except NodeError as e:
                errors.append(e)
                continue
            except RETRY_ELSEWHERE as e:
                errors.append(e)
                continue
            self.answered(address, first)
            if call.consumes:
                self.consumed(address, cast(list[Job], result))
            return result
        if len(errors) == 1 and not isinstance(errors[0], NodeError):
            raise errors[0]
        raise NoNodeAvailableError(errors)

    def _refresh(self) -> None:
        """HELLO from the preferred node (or the next that answers); a
        failure here is not the caller's: its own call will report it."""
        for address in self.topology.order():
            try:
                self.learned(address, self.call_on(address, calls.hello()))
                return
            except TrisqueError:
                continue

    def close(self) -> None:
        """Close every idle connection (calls in flight finish first)."""
        with self._pools_lock:
            pools = list(self._pools.values())
        for pool in pools:
            pool.clear()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, kind: Optional[type[BaseException]], error: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    # ------------------------------------------------------------ producing

    def add_job(self, queue: str, body: Union[bytes, str], *, timeout_ms: int = 5000,
                replicate: Optional[int] = None, delay_s: Optional[int] = None,
                retry_s: Optional[int] = None, ttl_s: Optional[int] = None,
                maxlen: Optional[int] = None, async_: bool = False,
                priority: Optional[int] = None, dead_letter: Optional[str] = None) -> str:
        """ADDJOB: the new job's ID, once ``replicate`` nodes hold it (at
        once with ``async_``).  -NOREPL after ``timeout_ms`` raises
        NoReplicationError.  On a connection lost mid-call the client tries
        the next node: the job may then exist twice (at least once).
        ``priority``: 1 to 9, 9 served first; ``dead_letter``: the queue a
        job failed for good goes to (docs/lifecycle.md)."""
        return self._run(calls.add_job(queue, body, timeout_ms=timeout_ms, replicate=replicate,
                                       delay_s=delay_s, retry_s=retry_s, ttl_s=ttl_s,
                                       maxlen=maxlen, async_=async_, priority=priority,
                                       dead_letter=dead_letter))

    # ------------------------------------------------------------ consuming

    def get_jobs(self, queues: Union[str, Sequence[str]], *, count: int = 1,
                 timeout_ms: Optional[int] = None, nohang: bool = False,
                 withcounters: bool = False) -> list[Job]:
        """GETJOB: up to ``count`` jobs from ``queues`` (one from each in
        turn, as Disque).  Waits ``timeout_ms`` and answers [] when
        nothing came; None or 0 waits until a job comes (as Disque's
        TIMEOUT 0: the client sends GETJOBs of at most 5 s one after
        another, so that a dead node is noticed); ``nohang`` answers at
        once."""
        names = calls.queue_names(queues)
        if timeout_ms is not None and timeout_ms < 0:
            raise ValueError("timeout_ms cannot be negative")
        if nohang or timeout_ms:
            return self._run(calls.get_jobs(names, count=count, timeout_ms=timeout_ms or 0,
                                            nohang=nohang, withcounters=withcounters))
        while True:
            jobs = self._run(calls.get_jobs(names, count=count, timeout_ms=calls.BLOCK_SLICE_MS,
                                            nohang=False, withcounters=withcounters))
            if jobs:
                return jobs

    def ack(self, *job_ids: str) -> int:
        """ACKJOB, each job to its creator first: the count the nodes knew."""
        return sum(self._run(calls.by_job("ACKJOB", ids))
                   for ids in calls.group_by_creator(job_ids).values())

    def fast_ack(self, *job_ids: str) -> int:
        """FASTACK: best-effort delete (fewer messages than ACKJOB)."""
        return sum(self._run(calls.by_job("FASTACK", ids))
                   for ids in calls.group_by_creator(job_ids).values())

    def nack(self, *job_ids: str) -> int:
        """NACK: queue the jobs again now, counting a nack each."""
        return sum(self._run(calls.by_job("NACK", ids))
                   for ids in calls.group_by_creator(job_ids).values())

    def nack_dead(self, *job_ids: str, reason: Optional[str] = None) -> int:
        """NACK ... DEAD: the jobs failed for good, to their dead-letter
        queue now (with ``reason`` as their last error): how many moved."""
        return sum(self._run(calls.nack_dead(ids, reason))
                   for ids in calls.group_by_creator(job_ids).values())

    def working(self, job_id: str) -> int:
        """WORKING: postpone the job's next requeue; the seconds bought
        (its RETRY).  NoJobError, TooLateError (half its TTL passed)."""
        return self._run(calls.working(job_id))

    def enqueue(self, *job_ids: str) -> int:
        return self._run(calls.local("ENQUEUE", job_ids))

    def dequeue(self, *job_ids: str) -> int:
        return self._run(calls.local("DEQUEUE", job_ids))

    def del_job(self, *job_ids: str) -> int:
        """DELJOB: evict the copies of the node asked (no cluster ack)."""
        return self._run(calls.local("DELJOB", job_ids))

    # ------------------------------------------------------------ inspecting

    def show(self, job_id: str) -> Optional[JobState]:
        """SHOW, asked of the job's creator first; None if unknown there."""
        return self._run(calls.show(job_id))

    def qlen(self, queue: str) -> int:
        return self._run(calls.qlen(queue))

    def qstat(self, queue: str) -> Optional[QueueStats]:
        return self._run(calls.qstat(queue))

    def qpeek(self, queue: str, count: int = 1) -> list[Job]:
        return self._run(calls.qpeek(queue, count))

    def pause(self, queue: str, option: str) -> str:
        """PAUSE queue none|in|out|all|state: the queue's pause after."""
        return self._run(calls.pause(queue, option))

    def hello(self) -> Hello:
        """HELLO of the preferred node (and the client learns from it)."""
        errors: list[TrisqueError] = []
        for address in self.topology.order():
            try:
                hello = self.call_on(address, calls.hello())
            except (NodeError, LoadingError, LeavingError) as e:
                errors.append(e)
                continue
            self.learned(address, hello)
            return hello
        raise NoNodeAvailableError(errors)

    def info(self, section: Optional[str] = None) -> dict[str, str]:
        return self._run(calls.info(section))

    def ping(self) -> str:
        return text(self._run(calls.ping()))

    def jscan(self, *, queue: Optional[str] = None, states: Sequence[str] = (),
              count: Optional[int] = None) -> Iterator[str]:
        """The IDs of the jobs of one node (the preferred one): JSCAN
        until its cursor comes back to 0."""
        address = self.topology.order()[0]
        cursor = 0
        while True:
            page = self.call_on(address, calls.jscan(cursor, count=count, queue=queue,
                                                     states=states))
            yield from (text(item) for item in page.items)
            cursor = page.cursor
            if cursor == 0:
                return

    def qscan(self, *, count: Optional[int] = None, minlen: Optional[int] = None,
              maxlen: Optional[int] = None) -> Iterator[str]:
        """The names of the queues of one node (the preferred one)."""
        address = self.topology.order()[0]
        cursor = 0
        while True:
            page = self.call_on(address, calls.qscan(cursor, count=count, minlen=minlen,
                                                     maxlen=maxlen))
            yield from (text(item) for item in page.items)
            cursor = page.cursor
            if cursor == 0:
                return

