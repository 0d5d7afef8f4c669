"""appendfsync always, in one process with the real shell (listener, client
tasks, the log and its fsync thread) over real sockets, on a disk made slow:
the fsync below is delayed by 0.3 s.  Replies that confirm a logged record
wait for the fsync; everything else, and the event loop, goes on."""

import os
import time

import trio

from trisque.core.admin.config import Config
from trisque.core.node import Node
from trisque.core.table import COMMANDS
from trisque.server.aof import append_only_log as aof_module
from trisque.server.aof.append_only_log import attach_log
from trisque.server.clients.connection import ClientServer

from tests.harness import free_port

SLOW_FSYNC_S = 1.0  # long beside a loaded machine's scheduling, so the bounds below hold there


async def start_node(nursery, directory, policy="always"):
    config = Config()
    config.appendonly = True
    config.appendfsync = policy
    config.appendfilename = os.path.join(directory, "disque.aof")
    node = Node(config, os.urandom(20).hex(), time.time, table=COMMANDS)
    server = ClientServer(node)
    port = free_port()
    server.bind(["127.0.0.1"], port, 128)
    log = attach_log(node)
    await log.load()
    await server.serve(nursery)
    nursery.start_soon(log.run)
    return node, log, port


class Client:
    def __init__(self, stream):
        self.stream = stream
        self.buf = b""

    @classmethod
    async def connect(cls, port):
        return cls(await trio.open_tcp_stream("127.0.0.1", port))

    async def send(self, *args):
        data = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            data += b"$%d\r\n%s\r\n" % (len(a), a)
        await self.stream.send_all(data)

    async def line(self):
        while b"\r\n" not in self.buf:
            chunk = await self.stream.receive_some(4096)
            assert chunk, "connection closed"
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    async def call(self, *args):
        await self.send(*args)
        return await self.line()


def slow_fsync(monkeypatch):
    real = aof_module._fsync_file
    calls = []

    def fsync(fd, directory_of):
        calls.append(time.monotonic())
        time.sleep(SLOW_FSYNC_S)  # in the worker thread: a slow disk
        real(fd, directory_of)
    monkeypatch.setattr(aof_module, "_fsync_file", fsync)
    return calls


async def test_replies_wait_for_the_fsync_and_the_loop_does_not(tmp_path, monkeypatch):
    calls = slow_fsync(monkeypatch)
    async with trio.open_nursery() as nursery:
        node, log, port = await start_node(nursery, str(tmp_path))
        producer = await Client.connect(port)
        other = await Client.connect(port)
        consumer = await Client.connect(port)
        await consumer.send("GETJOB", "FROM", "q")  # blocks: the queue is empty
        await trio.sleep(0.05)

        started = time.monotonic()
        await producer.send("ADDJOB", "q", "body", 0)
        await trio.sleep(0.02)
        # The loop serves others meanwhile (PING and QLEN log nothing).
        assert await other.call("PING") == b"+PONG"
        assert await other.call("QLEN", "q") == b":0"  # the consumer got it
        assert time.monotonic() - started < SLOW_FSYNC_S - 0.1
        assert log.end > log.durable  # written, not yet fsynced
        with trio.move_on_after(0.05) as early:
            await consumer.line()  # the served GETJOB waits for the fsync too
        assert early.cancelled_caught

        reply = await producer.line()
        assert reply.startswith(b"+D-")
        assert time.monotonic() - started >= SLOW_FSYNC_S - 0.02
        assert calls, "no fsync happened"
        assert log.durable >= log.end
        # The blocked consumer's job came with the same fsync.
        lines = [await consumer.line() for _ in range(6)]
        assert lines == [b"*1", b"*3", b"$1", b"q", b"$40", reply[1:]]
        with open(os.path.join(str(tmp_path), "disque.aof"), "rb") as f:
            assert reply[1:] in f.read()

        # Group commit: 20 clients at once share a few fsyncs, not 20.
        clients = [await Client.connect(port) for _ in range(20)]
        before = len(calls)
        started = time.monotonic()
        for c in clients:
            await c.send("ADDJOB", "q2", "x", 0)
        for c in clients:
            assert (await c.line()).startswith(b"+D-")
        assert len(calls) - before <= 3
        assert time.monotonic() - started < 3 * SLOW_FSYNC_S + 0.3
        nursery.cancel_scope.cancel()


async def test_everysec_replies_do_not_wait(tmp_path, monkeypatch):
    calls = slow_fsync(monkeypatch)
    async with trio.open_nursery() as nursery:
        node, log, port = await start_node(nursery, str(tmp_path), "everysec")
        c = await Client.connect(port)
        started = time.monotonic()
        for i in range(50):
            assert (await c.call("ADDJOB", "q", "b%d" % i, 0)).startswith(b"+D-")
        assert time.monotonic() - started < SLOW_FSYNC_S
        assert log.durable == log.end  # written before each reply
        with trio.fail_after(3):
            while not calls:
                await trio.sleep(0.05)  # the once-a-second fsync, in its thread
        nursery.cancel_scope.cancel()


class IoWaits(trio.abc.Instrument):
    """Counts the event loop's waits for I/O that return at once."""

    def __init__(self):
        self.zero = 0

    def before_io_wait(self, timeout):
        if timeout == 0:
            self.zero += 1


async def test_an_idle_everysec_log_lets_the_loop_sleep(tmp_path):
    # The sync loop once slept 0 s when nothing waited for an fsync, so
    # an idle node with an AOF spun a core (thousands of waits a second).
    async with trio.open_nursery() as nursery:
        node, log, port = await start_node(nursery, str(tmp_path), "everysec")
        c = await Client.connect(port)
        assert (await c.call("ADDJOB", "q", "body", 0)).startswith(b"+D-")
        with trio.fail_after(5):
            while log.synced < log.written:
                await trio.sleep(0.05)  # the everysec fsync has happened
        waits = IoWaits()
        trio.lowlevel.add_instrument(waits)
        await trio.sleep(2.5)  # idle: the 100 ms cron and little else
        trio.lowlevel.remove_instrument(waits)
        assert waits.zero < 100, f"{waits.zero} zero-timeout I/O waits in 2.5 s idle"
        nursery.cancel_scope.cancel()
