"""The asyncio client: ``AsyncClient``, the same API as ``Client`` with
``await`` (and ``async for`` for the scans).

Its connections belong to the event loop that opened them: use one client
per loop.  Tasks of that loop may share it; each call takes a connection
from its node's pool and gives it back when the reply came.
"""

import asyncio
import ssl
import time
from types import TracebackType
from typing import AsyncIterator, Optional, Sequence, TypeVar, Union, cast

from trisque.client import calls
from trisque.client.base import ClientBase, NodesSpec
from trisque.client.calls import Call
from trisque.client.errors import (
    RETRY_ELSEWHERE, LeavingError, LoadingError, NoNodeAvailableError, NodeError,
    NodeTimeoutError, TrisqueError,
)
from trisque.client.nodes import NodeAddress
from trisque.client.replies import Hello, Job, JobState, QueueStats, text
from trisque.client.wire import Arg, ReplyReader, encode_command, handshake_commands, raise_if_error

T = TypeVar("T")
RECV_BYTES = 64 * 1024


class AsyncConnection:
    """One stream to one node, after its handshake (TLS, HELLO 3, AUTH)."""

    address: NodeAddress
    _client: ClientBase
    _reader: Optional[asyncio.StreamReader]
    _writer: Optional[asyncio.StreamWriter]
    _replies: ReplyReader

    def __init__(self, address: NodeAddress, client: ClientBase) -> None:
        self.address = address
        self._client = client
        self._reader = None
        self._writer = None
        self._replies = ReplyReader()

    async def open(self) -> None:
        options = self._client.options
        name = str(self.address)
        context = self._client.ssl_context() if options.uses_tls(self.address) else None
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_connection(self.address.host, self.address.port, ssl=context,
                                        server_hostname=self.address.host if context else None),
                options.connect_timeout_s)
        except asyncio.TimeoutError:
            raise NodeTimeoutError(name, "connect timed out") from None
        except OSError as e:
            raise NodeError(name, f"cannot connect: {e}") from None
        try:
            for command in handshake_commands(options.protocol, options.password_for(self.address),
                                              options.username):
                raise_if_error(await self.call(command, 0))
        except BaseException:
            self.close()
            raise

    async def call(self, args: tuple[Arg, ...], blocks_ms: int) -> object:
        """As Connection.call: one command, its reply within ``blocks_ms``
        plus the read timeout, or the connection is closed."""
        reader, writer = self._reader, self._writer
        name = str(self.address)
        if reader is None or writer is None:
            raise NodeError(name, "connection closed")
        deadline = time.monotonic() + self._client.options.read_timeout_s + blocks_ms / 1000
        try:
            writer.write(encode_command(args))
            await asyncio.wait_for(writer.drain(), self._client.options.read_timeout_s)
            while True:
                done, reply = self._replies.next_reply()
                if done:
                    return reply
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise asyncio.TimeoutError()
                data = await asyncio.wait_for(reader.read(RECV_BYTES), remaining)
                if not data:
                    raise NodeError(name, "connection closed by the node")
                self._replies.feed(data)
        except asyncio.TimeoutError:
            self.close()
            raise NodeTimeoutError(name, "no reply in time") from None
        except OSError as e:
            self.close()
            raise NodeError(name, f"connection lost: {e}") from None
        except BaseException:  # NodeError, or cancelled mid-reply: unusable
            self.close()
            raise

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._reader = self._writer = None

    @property
    def closed(self) -> bool:
        return self._writer is None

    def looks_dead(self) -> bool:
        """An idle connection the node closed (idle timeout, restart)."""
        reader, writer = self._reader, self._writer
        return reader is None or writer is None or writer.is_closing() or reader.at_eof()


class AsyncPool:
    """Idle connections to one node, at most ``max_idle`` kept."""

    address: NodeAddress
    _client: ClientBase
    _idle: list[AsyncConnection]

    def __init__(self, address: NodeAddress, client: ClientBase) -> None:
        self.address = address
        self._client = client
        self._idle = []

    async def take(self) -> tuple[AsyncConnection, bool]:
        """A connection, and whether it was idle in the pool (reused)."""
        while self._idle:
            idle = self._idle.pop()
            if not idle.looks_dead():
                return idle, True
            idle.close()
        return await self.open(), False

    async def open(self) -> AsyncConnection:
        connection = AsyncConnection(self.address, self._client)
        await connection.open()
        return connection

    def give_back(self, connection: AsyncConnection) -> None:
        if connection.closed:
            return
        if len(self._idle) < self._client.options.max_idle_per_node:
            self._idle.append(connection)
        else:
            connection.close()

    def clear(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


class AsyncClient(ClientBase):
    """``Client``'s API for asyncio (nodes.py has the failover and routing
    rules; docs/client.md the guide)."""

    _pools: dict[NodeAddress, AsyncPool]

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

    # ------------------------------------------------------------ plumbing

    def _pool(self, address: NodeAddress) -> AsyncPool:
        pool = self._pools.get(address)
        if pool is None:
            pool = self._pools[address] = AsyncPool(address, self)
        return pool

    async def call_on(self, address: NodeAddress, call: Call[T]) -> T:
        """Run ``call`` on this node only (no failover)."""
        pool = self._pool(address)
        try:
            connection, reused = await pool.take()
            try:
                reply = await connection.call(call.args, call.blocks_ms)
            except NodeTimeoutError:
                raise
            except NodeError:
                if not reused:
                    raise
                # A pooled connection the node closed just now (idle
                # timeout, restart): once more on a new connection.
                pool.clear()
                connection = await pool.open()
                reply = await connection.call(call.args, call.blocks_ms)
        except NodeError:
            pool.clear()  # its other idle connections are likely dead too
            raise
        pool.give_back(connection)
        return call.decode(raise_if_error(reply))

    async def _run(self, call: Call[T]) -> T:
        if self.wants_refresh(cast(Call[object], call)):
            await self._refresh()
        first = self.first_node(cast(Call[object], call))
        errors: list[TrisqueError] = []
        for address in self.topology.order(first):
            try:
                result = await self.call_on(address, call)
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

    async def _refresh(self) -> None:
        for address in self.topology.order():
            try:
                self.learned(address, await self.call_on(address, calls.hello()))
                return
            except TrisqueError:
                continue

    async def close(self) -> None:
        """Close every idle connection."""
        for pool in list(self._pools.values()):
            pool.clear()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, kind: Optional[type[BaseException]],
                        error: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        await self.close()

    # ------------------------------------------------------------ producing

    async def add_job(self, queue: str, body: Union[bytes, str], *, timeout_ms: int = 5000,
                      replicate: Optional[int] = None, delay_s: Optional[int] = None,
                      retry_s: Optional[int] = None, ttl_s: Optional[int] = None,
                      maxlen: Optional[int] = None, async_: bool = False,
                      priority: Optional[int] = None,
                      dead_letter: Optional[str] = None) -> str:
        """ADDJOB (Client.add_job)."""
        return await self._run(calls.add_job(queue, body, timeout_ms=timeout_ms,
                                             replicate=replicate, delay_s=delay_s,
                                             retry_s=retry_s, ttl_s=ttl_s, maxlen=maxlen,
                                             async_=async_, priority=priority,
                                             dead_letter=dead_letter))

    # ------------------------------------------------------------ consuming

    async def get_jobs(self, queues: Union[str, Sequence[str]], *, count: int = 1,
                       timeout_ms: Optional[int] = None, nohang: bool = False,
                       withcounters: bool = False) -> list[Job]:
        """GETJOB (Client.get_jobs)."""
        names = calls.queue_names(queues)
        if timeout_ms is not None and timeout_ms < 0:
            raise ValueError("timeout_ms cannot be negative")
        if nohang or timeout_ms:
            return await self._run(calls.get_jobs(names, count=count,
                                                  timeout_ms=timeout_ms or 0, nohang=nohang,
                                                  withcounters=withcounters))
        while True:
            jobs = await self._run(calls.get_jobs(names, count=count,
                                                  timeout_ms=calls.BLOCK_SLICE_MS, nohang=False,
                                                  withcounters=withcounters))
            if jobs:
                return jobs

    async def _by_creator(self, command: str, job_ids: Sequence[str]) -> int:
        total = 0
        for ids in calls.group_by_creator(job_ids).values():
            total += await self._run(calls.by_job(command, ids))
        return total

    async def ack(self, *job_ids: str) -> int:
        """ACKJOB, each job to its creator first."""
        return await self._by_creator("ACKJOB", job_ids)

    async def fast_ack(self, *job_ids: str) -> int:
        return await self._by_creator("FASTACK", job_ids)

    async def nack(self, *job_ids: str) -> int:
        return await self._by_creator("NACK", job_ids)

    async def nack_dead(self, *job_ids: str, reason: Optional[str] = None) -> int:
        """NACK ... DEAD (Client.nack_dead)."""
        total = 0
        for ids in calls.group_by_creator(job_ids).values():
            total += await self._run(calls.nack_dead(ids, reason))
        return total

    async def working(self, job_id: str) -> int:
        return await self._run(calls.working(job_id))

    async def enqueue(self, *job_ids: str) -> int:
        return await self._run(calls.local("ENQUEUE", job_ids))

    async def dequeue(self, *job_ids: str) -> int:
        return await self._run(calls.local("DEQUEUE", job_ids))

    async def del_job(self, *job_ids: str) -> int:
        return await self._run(calls.local("DELJOB", job_ids))

    # ------------------------------------------------------------ inspecting

    async def show(self, job_id: str) -> Optional[JobState]:
        return await self._run(calls.show(job_id))

    async def qlen(self, queue: str) -> int:
        return await self._run(calls.qlen(queue))

    async def qstat(self, queue: str) -> Optional[QueueStats]:
        return await self._run(calls.qstat(queue))

    async def qpeek(self, queue: str, count: int = 1) -> list[Job]:
        return await self._run(calls.qpeek(queue, count))

    async def pause(self, queue: str, option: str) -> str:
        return await self._run(calls.pause(queue, option))

    async def hello(self) -> Hello:
        errors: list[TrisqueError] = []
        for address in self.topology.order():
            try:
                hello = await self.call_on(address, calls.hello())
            except (NodeError, LoadingError, LeavingError) as e:
                errors.append(e)
                continue
            self.learned(address, hello)
            return hello
        raise NoNodeAvailableError(errors)

    async def info(self, section: Optional[str] = None) -> dict[str, str]:
        return await self._run(calls.info(section))

    async def ping(self) -> str:
        return text(await self._run(calls.ping()))

    async def jscan(self, *, queue: Optional[str] = None, states: Sequence[str] = (),
                    count: Optional[int] = None) -> AsyncIterator[str]:
        """The IDs of the jobs of one node (the preferred one)."""
        address = self.topology.order()[0]
        cursor = 0
        while True:
            page = await self.call_on(address, calls.jscan(cursor, count=count, queue=queue,
                                                           states=states))
            for item in page.items:
                yield text(item)
            cursor = page.cursor
            if cursor == 0:
                return

    async def qscan(self, *, count: Optional[int] = None, minlen: Optional[int] = None,
                    maxlen: Optional[int] = None) -> AsyncIterator[str]:
        """The names of the queues of one node (the preferred one)."""
        address = self.topology.order()[0]
        cursor = 0
        while True:
            page = await self.call_on(address, calls.qscan(cursor, count=count, minlen=minlen,
                                                           maxlen=maxlen))
            for item in page.items:
                yield text(item)
            cursor = page.cursor
            if cursor == 0:
                return
