"""Client connections: the listener and one trio task per client.

The hot path has no task switch: read what the kernel has, parse every
complete request, run them all against the core, send every reply with one
``send``.  Sockets are plain non-blocking stdlib sockets driven through
``trio.lowlevel``: we try the syscall first and only wait for readiness
when it would block, as the design notes measured.
"""

import collections
import errno
import socket

import trio

from ...protocol.resp import ProtocolError, RequestParser

from . import log

RECV_SIZE = 16 * 1024
OUTPUT_HIGH_WATER = 1024 * 1024  # stop reading a client with this much unsent


class Connection:
    """The shell's half of a client: socket, parser, unsent bytes."""

    __slots__ = ("sock", "client", "parser", "pending", "outbuf", "waiting",
                 "closed", "mark")

    def __init__(self, sock, max_bulk_len):
        self.sock = sock
        self.client = None
        self.parser = RequestParser(max_bulk_len)
        self.pending = collections.deque()  # requests not yet run
        self.outbuf = b""
        self.waiting = False  # parked in wait_readable/wait_writable
        self.closed = False
        # The AOF must be durable up to here before our output may go
        # (node.log.end when output was produced; matters for appendfsync always).
        self.mark = 0

    def wake(self):
        """Interrupt the task's wait so it re-examines its state.

        Wakes are rare (a blocked client served, a kill, output another task
        could not send), so instead of a cancel scope around every wait
        (~8 us each, measured) the waiting task gets ClosedResourceError
        from trio.lowlevel.notify_closing and goes on with its loop.
        """
        if self.waiting:
            self.waiting = False
            trio.lowlevel.notify_closing(self.sock)

    def flush(self, stats):
        """Send as much output as the kernel takes without waiting."""
        client = self.client
        out = client.out
        if out:
            data = self.outbuf + (out[0] if len(out) == 1 else b"".join(out))
            out.clear()
        else:
            data = self.outbuf
            if not data:
                return
        try:
            sent = self.sock.send(data)
        except BlockingIOError:
            sent = 0
        except OSError:
            self.closed = True
            self.outbuf = b""
            return
        stats.net_out += sent
        self.outbuf = data[sent:] if sent < len(data) else b""


class ClientServer:
    """Accepts clients on the configured addresses and serves them."""

    def __init__(self, node):
        self.node = node
        self.dirty = []  # connections with output produced by others
        node.on_wake = self.mark_dirty
        self.listeners = []

    # ----------------------------------------------------------- output

    def mark_dirty(self, client):
        conn = client.transport
        if conn is not None:
            self.dirty.append(conn)

    def flush_dirty(self):
        if not self.dirty:
            return
        dirty, self.dirty = self.dirty, []
        aof = self.node.log
        end = aof.end
        for conn in dirty:
            if not conn.closed:
                # Output made outside the client's own task (an ADDJOB
                # answered once replicated, a blocked GETJOB served) may
                # confirm anything logged so far: with appendfsync always
                # it goes once the AOF has fsynced that.
                if end > conn.mark:
                    conn.mark = end
                self._resume(conn)

    def _resume(self, conn):
        if conn.closed:
            return
        aof = self.node.log
        if conn.mark > aof.durable:
            aof.hold(conn.mark, self._resume, conn)
            return
        conn.flush(self.node.stats)
        if (conn.outbuf or conn.client.killed or conn.pending
                or conn.client.close_after_reply):
            conn.wake()

    # --------------------------------------------------------- listening

    def bind(self, addresses, port, backlog):
        """Open the listening sockets now, so a bind error stops start-up."""
        for address in addresses:
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((address, port))
            sock.listen(backlog)
            sock.setblocking(False)
            self.listeners.append(sock)

    async def serve(self, nursery):
        for sock in self.listeners:
            nursery.start_soon(self._accept_loop, sock, nursery)

    async def _accept_loop(self, listener, nursery):
        node = self.node
        while True:
            try:
                sock, addr = listener.accept()
            except BlockingIOError:
                await trio.lowlevel.wait_readable(listener)
                continue
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    log.warning(f"Error accepting a client connection: {exc.strerror}")
                    await trio.sleep(0.1)
                    continue
                raise
            if len(node.clients) >= node.config.maxclients:
                node.stats.rejected += 1
                try:
                    sock.send(b"-ERR max number of clients reached\r\n")
                finally:
                    sock.close()
                continue
            nursery.start_soon(self._serve_client, sock, addr)

    # ------------------------------------------------------------ a client

    async def _serve_client(self, sock, addr):
        node = self.node
        sock.setblocking(False)
        if sock.family != socket.AF_UNIX:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            keepalive = node.config.tcp_keepalive
            if keepalive:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        conn = Connection(sock, node.config.proto_max_bulk_len)
        client = node.add_client(_addr(addr), _addr(sock.getsockname()), conn)
        conn.client = client
        try:
            await self._client_loop(conn)
        except (ConnectionError, OSError):
            pass
        finally:
            node.remove_client(client)
            conn.closed = True
            sock.close()

    async def _client_loop(self, conn):
        node = self.node
        client = conn.client
        sock = conn.sock
        stats = node.stats
        execute = node.execute
        pending = conn.pending
        checkpoint = trio.lowlevel.checkpoint
        wait_readable = trio.lowlevel.wait_readable
        aof = node.log
        fd = sock.fileno()
        more = False  # the last recv filled the buffer: the kernel may hold more
        while True:
            # 1. run what we can: stop at a blocking command
            if pending and client.blocked is None:
                client.last_ms = node.now_ms()
                logged = aof.end
                aof.deferring = True  # the batch's AOF records: one write
                try:
                    while pending and client.blocked is None:
                        execute(client, pending.popleft())
                        if client.close_after_reply or client.killed:
                            pending.clear()
                            break
                finally:
                    aof.deferring = False
                    if aof.end != logged:
                        aof.end_batch()  # written before any reply goes out
                        conn.mark = aof.end
            if conn.mark > aof.durable:
                # appendfsync always: replies wait for the fsync of the
                # records they confirm (in a worker thread; others go on).
                await aof.wait_durable(conn.mark)
            conn.flush(stats)
            if self.dirty:
                self.flush_dirty()
            if client.killed or conn.closed:
                return
            if client.close_after_reply and not conn.outbuf:
                return
            # 2. wait until the kernel takes our output, if it did not
            if conn.outbuf:
                conn.waiting = True
                try:
                    await trio.lowlevel.wait_writable(fd)
                except trio.ClosedResourceError:
                    pass  # woken: see Connection.wake
                conn.waiting = False
                if len(conn.outbuf) > OUTPUT_HIGH_WATER:
                    continue  # no more input until the client reads
            # 3. read.  Unless the last recv filled the buffer, the client is
            # waiting for the replies we just sent: wait for its next request
            # right away (a recv first would fail, costing a syscall and an
            # exception per batch).  A woken task finds nothing to read and
            # goes round the loop again.
            yielded = not more
            if yielded:
                conn.waiting = True
                try:
                    await wait_readable(fd)
                except trio.ClosedResourceError:
                    pass
                conn.waiting = False
            try:
                data = sock.recv(RECV_SIZE)
            except BlockingIOError:
                more = False
                continue
            if not data:
                return
            more = len(data) == RECV_SIZE
            stats.net_in += len(data)
            try:
                pending.extend(conn.parser.feed(data))
            except ProtocolError as exc:
                # Run what came before the bad bytes, then say why and close.
                pending.extend(getattr(exc, "requests", ()))
                while pending and client.blocked is None:
                    execute(client, pending.popleft())
                client.out.append(b"-ERR " + str(exc).encode() + b"\r\n")
                if aof.end > aof.durable:
                    await aof.wait_durable(aof.end)
                conn.flush(stats)
                log.verbose(f"Protocol error from client {client.addr}: {exc}")
                return
            if not yielded:
                await checkpoint()  # fairness: a busy client yields once a batch


def _addr(addr):
    if isinstance(addr, tuple):
        host, port = addr[0], addr[1]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return str(addr)
