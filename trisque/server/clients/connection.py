"""Client connections: the listeners and one event loop for every client.

The hot path has no task switch.  One trio task owns an epoll set holding
every client socket and waits on it with a single ``trio.lowlevel``
wait; each time it wakes, it takes every ready client in turn: read what
the kernel has (one ``recv``), parse every complete request, run them all
against the core; then it sends each client's replies with one ``send``,
all the sends of the turn together, after the running.  Sockets are plain
non-blocking stdlib sockets.  A trio task per client paid a task switch
per request batch, about half of an unpipelined PING's server CPU; here
one wait serves all the clients that are ready (bench/README.md, "The
client loop").

A client is looked at again outside its turn when something else changed
its state (``Connection.wake``): it was unblocked or killed, it has output
another task could not send, or the AOF now allows its replies to go.

The cluster bus's links are in the same epoll set (a ``SocketOwner``,
cluster/tcp/transport.py): a turn reads the links that are ready first,
sends what their frames finished (a job replicated, a waiter served), and
sends the bus frames it produced before the clients' replies.  An
unpipelined replicated ADDJOB so sends its copies from the turn that read
it, and the GOTJOBs' turn sends the reply, without a second task woken in
between (bench/README.md, "Cluster: replicated ADDJOB").
"""

import select
import socket
from typing import Any, Final

import trio

from ...protocol.resp import ProtocolError, RequestParser, error
from ...core.admin import output_limit, protected_mode
from ...core.client import Client, ClientWaker
from ...core.admin.stats import Stats
from ...core.node import Node
from ...core.admin.output_limit import OutputLimit

from ...shell import fdio, log
from .busy_script import BusyServer
from ...shell.listening import accept_forever, open_listener
from ...shell.socket_set import SocketOwner, SocketSet
from ...shell.ticks import perf_counter
from ...shell.timers import Timers
from ...shell.tls import ClientTls, enforce_deadlines

RECV_SIZE: Final = 16 * 1024
# Without fdio.c, a plain client whose last read was short reads this much
# first: os.read allocates its whole room and shrinks it to what came; 16 KB
# was a malloc, a realloc and a free of the C heap (~850 instructions a
# read), this fits Python's small-object allocator.  A read that fills it
# reads the rest at once (the two RECV_SIZE together: a large request is
# read in the same chunks as before), and the next ones read RECV_SIZE.
# (fdio.c's read makes bytes of just what came: RECV_SIZE at once.)
SMALL_RECV: Final = 448
# A plain client's socket is read and written by its fd: a call of a
# builtin bound once, where sock.recv and sock.send were a method look-up
# and an argument-tuple parse each (bench/README.md, "The origin's job"),
# fdio.c's where built (the GIL kept around the system call).
_OS_READ: Final = fdio.read
_OS_WRITE: Final = fdio.write
_EXACT: Final = fdio.EXACT
OUTPUT_HIGH_WATER: Final = 1024 * 1024  # stop reading a client with this much unsent
_NO_CAP: Final = 1 << 62  # client-output-buffer-limit's hard limit off
# Pipelined requests of one client run PIPELINE_BATCH at a time: when
# another client is waiting by then, the rest wait for the next turn (and
# nothing more is read meanwhile), so one client pipelining cheap requests
# cannot hold up the others; a lone client's deep pipelines do not yield.
# 16: fair to the others, yet whole -P 16 pipelines (bench/README.md,
# "The client loop").
PIPELINE_BATCH: Final = 16

_IN: Final = int(select.EPOLLIN)
_OUT: Final = int(select.EPOLLOUT)
_HUP: Final = int(select.EPOLLHUP | select.EPOLLERR)
_READ: Final = int(select.EPOLLIN | _HUP)


class Connection:
    """The shell's half of a client: socket, parser, unsent bytes."""

    __slots__ = ("server", "sock", "fd", "plain", "client", "parser", "pending", "pending_at",
                 "outbuf", "closed", "mark", "events", "held", "queued", "closing",
                 "pending_bytes", "soft_since_ms", "out_counted", "out_bytes", "marked",
                 "recv_size")
    server: "ClientServer"
    sock: Any  # socket.socket, or tls.TlsSocket on the TLS port
    fd: int
    plain: bool  # a socket.socket: read and written by its fd
    client: Client  # set by ClientServer._add, right after
    parser: RequestParser
    pending: list[list[bytes]]
    pending_at: int
    outbuf: bytes
    closed: bool
    mark: int
    events: int
    held: bool
    queued: bool
    closing: bool
    pending_bytes: int
    soft_since_ms: int | None
    out_counted: int
    out_bytes: int
    marked: bool
    recv_size: int  # a plain socket's next read: SMALL_RECV or RECV_SIZE

    def __init__(self, server: "ClientServer", sock: Any, max_bulk_len: int) -> None:
        self.server = server
        self.sock = sock
        self.fd = sock.fileno()
        self.plain = type(sock) is socket.socket
        self.parser = RequestParser(max_bulk_len)
        # Requests read: pending[pending_at:] have not run yet.  Empty once
        # all have, so ``if conn.pending`` asks whether any waits.  (A list
        # and an index: a deque's extend and popleft are method calls,
        # dear compiled.)
        self.pending = []
        self.pending_at = 0
        self.outbuf = b""
        self.closed = False
        # The AOF must be durable up to here before our output may go
        # (node.log.end when output was produced; matters for appendfsync always).
        self.mark = 0
        self.events = 0  # what the epoll set watches this socket for
        self.held = False  # replies wait for the AOF: read and run nothing
        self.queued = False  # in the event loop's list to look at again
        self.closing = False  # a protocol error: close once the error is sent
        # input read while requests wait (behind a blocked command): counts
        # toward client-query-buffer-limit with what the parser holds
        self.pending_bytes = 0
        self.soft_since_ms = None  # unsent output at or over the soft limit since
        # client.out[:out_counted] holds out_bytes: the backlog of a client
        # whose socket is full, counted as it grows (ClientServer._backlog)
        self.out_counted = 0
        self.out_bytes = 0
        self.marked = False  # in ClientServer.dirty already
        self.recv_size = SMALL_RECV

    def wake(self) -> None:
        """Have the event loop look at this client again."""
        self.server.wake(self)

    def flush(self, stats: Stats) -> None:
        """Send as much output as the kernel takes without waiting."""
        if self.closed:
            return  # (its fd number may be another socket's by now)
        client = self.client
        out = client.out
        if out:
            data = out[0] if len(out) == 1 else b"".join(out)
            # (most turns have none left: no copy; compiled, a bytes' length
            # is read natively where its truth is a generic call)
            if len(self.outbuf):
                data = self.outbuf + data
            out.clear()
            self.out_counted = self.out_bytes = 0
        else:
            data = self.outbuf
            if not len(data):
                return
        sent: int  # (typed: native compares and adds below)
        try:
            # (two statements: the conditional expression of the two calls
            # is of type Any, the count boxed again to join them)
            if self.plain:
                sent = _OS_WRITE(self.fd, data)
            else:
                sent = self.sock.send(data)
        except BlockingIOError:
            sent = 0
        except OSError:
            self.closed = True
            self.outbuf = b""
            return
        stats.net_out += sent
        self.outbuf = data[sent:] if sent < len(data) else b""


class _DirtyMarker(ClientWaker):
    """The node's hook (Node.on_wake): ClientServer.mark_dirty, natively."""

    def __init__(self, server: "ClientServer") -> None:
        self.server = server

    def wake(self, client: Client) -> None:
        self.server.mark_dirty(client)


class ClientServer:
    """Accepts clients on the configured addresses and serves them."""

    node: Node
    dirty: list[Connection]
    listeners: list[socket.socket]
    tls: ClientTls | None
    tls_listeners: list[socket.socket]
    epoll: SocketSet
    conns: dict[int, Connection]
    ready: list[Connection]
    replying: list[Connection]
    released: trio.Event | None
    paused: list[Connection]
    bus: SocketOwner | None
    output_limit: OutputLimit
    output_cap: int  # output_limit's hard limit, or _NO_CAP (read every batch)
    pubsub_limit: OutputLimit  # for subscribed clients (Redis's pubsub class)
    pubsub_cap: int
    over_soft: dict[Connection, None]
    soft_watch: trio.Event  # set once over_soft has a client
    timers: Timers  # the node's deadlines and cron, run in the loop's turns

    def __init__(self, node: Node) -> None:
        self.node = node
        self.dirty = []  # connections with output produced by others
        node.on_wake = _DirtyMarker(self)
        node.on_busy = BusyServer(self)  # a script past its time limit: -BUSY, SCRIPT KILL
        node.on_log = log.at_level
        self.listeners = []
        self.tls = None  # ClientTls while tls-port serves
        self.tls_listeners = []
        self.epoll = SocketSet()
        self.conns = {}  # fd -> Connection
        self.ready = []  # connections to look at again on the next turn
        self.replying = []  # connections that ran requests this turn
        self.released = None  # a trio.Event while hold() keeps requests waiting
        self.paused = []  # clients not watched while held (see hold())
        self.bus = None  # the cluster bus, served in the same turns
        self.timers = Timers(node, self.epoll.wake)  # (started by main.py)
        config = node.config
        self._set_output_limit(config.client_output_buffer_limit)
        config.on_change["client-output-buffer-limit"] = self._set_output_limit
        self.over_soft = {}  # Connection -> None: over the soft output limit
        self.soft_watch = trio.Event()

    # ----------------------------------------------------------- output

    def _set_output_limit(self, words: list[str]) -> None:
        self.output_limit = output_limit.normal(words)
        self.output_cap = self.output_limit.hard_bytes or _NO_CAP
        self.pubsub_limit = output_limit.pubsub(words)
        self.pubsub_cap = self.pubsub_limit.hard_bytes or _NO_CAP

    def _limit_of(self, conn: Connection) -> OutputLimit:
        """Redis's client classes: a subscribed client is pubsub's."""
        return self.output_limit if conn.client.pubsub is None else self.pubsub_limit

    def _output_over_limit(self, conn: Connection, unsent: int) -> bool:
        """``unsent`` bytes reach a limit: start the soft clock, or close
        the client now (True) past the hard limit or the soft one's time."""
        now_ms = self.node.now_ms()
        limit = self._limit_of(conn)
        if limit.soft_bytes and unsent >= limit.soft_bytes:
            if conn.soft_since_ms is None:
                conn.soft_since_ms = now_ms
                self.over_soft[conn] = None
                self.soft_watch.set()  # (_soft_limit_cron)
        elif conn.soft_since_ms is not None:
            self._below_soft(conn)
        why = output_limit.verdict(limit, unsent, conn.soft_since_ms, now_ms)
        if why is None:
            return False
        node = self.node
        node.stats.output_limit_kills += 1
        log.warning(f"Client id={conn.client.id} addr={conn.client.addr} closed for "
                    f"overcoming of output buffer limits ({why}: {unsent} bytes unsent, "
                    f"client-output-buffer-limit "
                    f"{'normal' if conn.client.pubsub is None else 'pubsub'} {limit.hard_bytes} "
                    f"{limit.soft_bytes} {limit.soft_s})")
        self._close(conn)
        return True

    def _below_soft(self, conn: Connection) -> None:
        conn.soft_since_ms = None
        self.over_soft.pop(conn, None)

    async def _soft_limit_cron(self) -> None:
        """A client may sit over the soft limit without any output event
        (it reads nothing, we send nothing): look at those 4 times a second.
        (Asleep while there are none: a wake-up is a pass through trio,
        shell/ticks.py.)"""
        while True:
            if not self.over_soft:
                self.soft_watch = trio.Event()
                await self.soft_watch.wait()
            await trio.sleep(0.25)
            for conn in list(self.over_soft):
                if conn.closed:
                    self.over_soft.pop(conn, None)
                    continue
                unsent = len(conn.outbuf) + sum(len(r) for r in conn.client.out)
                self._output_over_limit(conn, unsent)

    def mark_dirty(self, client: Client) -> None:
        # (typed: compiled, ``marked`` is then a native read and write, not
        # two generic attribute calls)
        conn: Connection | None = client.transport
        # once per turn: a subscriber sent 800 messages in a turn (50
        # publishers pipelining 16) is looked at once, not 800 times
        if conn is not None and not conn.marked:
            conn.marked = True
            self.dirty.append(conn)

    def flush_dirty(self) -> None:
        if not self.dirty:
            return
        dirty, self.dirty = self.dirty, []
        node = self.node
        # No log: its end stands still where durable is (_stop), no mark to
        # move (and no generic read of the interpreted AOF's end)
        end: int = node.log.end if node.log_active else 0
        for conn in dirty:
            conn.marked = False
            if not conn.closed:
                # Output made outside the client's own turn (an ADDJOB
                # answered once replicated, a blocked GETJOB served) may
                # confirm anything logged so far: with appendfsync always
                # it goes once the AOF has fsynced that.
                if end > conn.mark:
                    conn.mark = end
                self._resume(conn)

    def _resume(self, conn: Connection) -> None:
        if conn.closed:
            return
        mark = conn.mark
        if mark:  # (0: nothing logged for it, no look at the AOF's durable)
            aof = self.node.log
            if mark > aof.durable:
                aof.hold(mark, self._resume, conn)
                return
        conn.held = False
        client = conn.client
        if (len(conn.outbuf) > 0 and conn.events & _OUT and not client.killed
                and not client.close_after_reply and not conn.closing):
            # The kernel took no more last time: output waits for EPOLLOUT
            # rather than the backlog being copied per message published to
            # a subscriber that does not read; its limit is kept meanwhile.
            # (A client killed or closing is woken below: EPOLLOUT may never come.)
            self._backlog(conn)
            return
        conn.flush(self.node.stats)
        if (len(conn.outbuf) > 0 or client.killed or conn.pending or client.close_after_reply
                or conn.closing or conn.closed or not conn.events & _IN):
            conn.wake()

    def _backlog(self, conn: Connection) -> None:
        """Count what was added to a full client's output, and close it at
        its output limit."""
        out = conn.client.out
        counted = conn.out_counted
        total = conn.out_bytes
        while counted < len(out):
            total += len(out[counted])
            counted += 1
        conn.out_counted = counted
        conn.out_bytes = total
        unsent = len(conn.outbuf) + total
        limit = self._limit_of(conn)
        if ((limit.hard_bytes and unsent >= limit.hard_bytes)
                or (limit.soft_bytes and unsent >= limit.soft_bytes)):
            self._output_over_limit(conn, unsent)

    def hold(self) -> None:
        """Leave every request waiting (read nor run) until release().  The
        bus goes on: a client that sends meanwhile is not watched until
        then (the set is level-triggered: it would wake every turn)."""
        self.released = trio.Event()
        self.epoll.wake()

    def release(self) -> None:
        released, self.released = self.released, None
        if released is not None:
            released.set()
        paused, self.paused = self.paused, []
        for conn in paused:
            if not conn.closed:
                self.epoll.modify(conn.fd, conn.events)
        self.epoll.wake()

    def _pause(self, conn: Connection) -> None:
        if conn not in self.paused:
            self.paused.append(conn)
        self.epoll.modify(conn.fd, 0)

    def wake(self, conn: Connection) -> None:
        if not conn.queued:
            conn.queued = True
            self.ready.append(conn)
        self.epoll.wake()

    # --------------------------------------------------------- listening

    def bind(self, addresses: list[str], port: int, backlog: int) -> None:
        """Open the listening sockets now, so a bind error stops start-up."""
        for address in addresses:
            self.listeners.append(open_listener(address, port, backlog))

    def bind_tls(self, addresses: list[str], port: int, backlog: int,
                 tls: ClientTls) -> None:
        """Open the TLS port's listening sockets (tls-port) now."""
        self.tls = tls
        for address in addresses:
            self.tls_listeners.append(open_listener(address, port, backlog))

    async def serve(self, nursery: trio.Nursery) -> None:
        for sock in self.listeners:
            nursery.start_soon(accept_forever, sock, "client connection", self._accepted)
        for sock in self.tls_listeners:
            nursery.start_soon(accept_forever, sock, "TLS client connection",
                               self._accepted_tls)
        if self.tls is not None:
            nursery.start_soon(enforce_deadlines, self.tls.deadlines)
        nursery.start_soon(self._event_loop)
        nursery.start_soon(self._soft_limit_cron)

    def _accepted_tls(self, sock: socket.socket, addr: object) -> None:
        self._accepted(sock, addr, tls=True)

    def _accepted(self, sock: Any, addr: Any, tls: bool = False) -> None:
        node = self.node
        # (a refusal on the TLS port is a close: the client expects a
        # handshake, not plaintext)
        if len(node.clients) >= node.config.maxclients:
            node.stats.rejected += 1
            log.verbose(f"Connection from {_addr(addr)} refused: maxclients "
                        f"({node.config.maxclients}) reached")
            _refuse(sock, b"" if tls else b"-ERR max number of clients reached\r\n")
            return
        peer_ip = addr[0] if isinstance(addr, tuple) else None
        config = node.config
        if protected_mode.denied(config.protected_mode, config.requirepass, peer_ip):
            node.stats.denied += 1
            log.verbose(f"Connection from {_addr(addr)} refused: protected mode")
            _refuse(sock, b"" if tls else protected_mode.DENIED)
            return
        if tls:
            # The handshake runs in the event loop's turns, inside recv and
            # send (tls.TlsSocket); one that takes too long closes the client.
            def too_slow() -> None:
                conn = self.conns.get(sock.fileno())
                if conn is not None and conn.sock is sock:
                    self._close(conn)
            assert self.tls is not None
            sock = self.tls.wrap(sock, _addr(addr), too_slow)
        try:
            self._add(sock, addr)
        except OSError:
            sock.close()

    def _add(self, sock: Any, addr: Any) -> None:
        node = self.node
        sock.setblocking(False)
        if sock.family != socket.AF_UNIX:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if node.config.tcp_keepalive:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        conn = Connection(self, sock, node.config.proto_max_bulk_len)
        conn.client = node.add_client(_addr(addr), _addr(sock.getsockname()), conn)
        self.conns[conn.fd] = conn
        self.epoll.register(conn.fd, _IN)
        conn.events = _IN

    def _close(self, conn: Connection) -> None:
        conn.closed = True
        if conn.soft_since_ms is not None:
            self._below_soft(conn)
        if self.conns.get(conn.fd) is not conn:
            return  # closed before
        del self.conns[conn.fd]
        try:
            self.epoll.unregister(conn.fd)
        except OSError:
            pass
        self.node.remove_client(conn.client)
        conn.sock.close()
        # The client and its connection refer to each other: unlinked, they
        # and their buffers go now, not at a collection (a garbage sender's
        # large parser buffer may wait a long time for one: collector.py)
        conn.client.transport = None
        conn.pending = []
        conn.pending_at = 0
        conn.outbuf = b""

    # ------------------------------------------------------ the clients

    async def _event_loop(self) -> None:
        epoll = self.epoll
        conns = self.conns
        # (self._service(...) and node.execute(...) are direct C calls
        # compiled; through a bound method local each went through the
        # generic call and argument parsing)
        replying = self.replying
        bus = self.bus
        timers = self.timers
        node = self.node
        try:
            while True:
                node.end_turn()  # (while it waits, other tasks read the clock)
                if bus is None and self.released is not None:
                    await self.released.wait()
                    epoll.yielded()
                # clients to look at again: others run once a turn, too
                busy = bool(self.ready) and self.released is None
                if bus is not None and bus.busy():
                    busy = True
                # (the direct wait a plain call; a coroutine only through trio)
                ready_now = epoll.ready_now(busy, timers.due_s)
                if ready_now is not None:
                    ready_fds = ready_now
                    due = epoll.due  # (no clock read: the wait knows)
                else:
                    if epoll.trio_fd >= 0:
                        ready_fds = await epoll.through_trio(busy, timers.due_s)
                    else:
                        ready_fds = await epoll.wait(busy, timers.due_s)
                    due = perf_counter() >= timers.due_s
                node.begin_turn()  # the clock read once for the turn (Node.now_ms)
                if due:
                    # (first: a blocked GETJOB's timeout replies this turn)
                    timers.run()
                if bus is not None:
                    # The links first, and what their frames finished (an
                    # ADDJOB replicated, a GETJOB served) out at once: a job
                    # that waited for its GOTJOBs does not also wait for the
                    # requests read beside them to run (bench/README.md,
                    # "Hop by hop, thirty-second session").  (The bus is
                    # handed the whole list and skips the clients': no list
                    # of its own pairs made, filled and emptied a turn.)
                    bus.serve_ready(ready_fds)
                    if self.dirty:
                        self.flush_dirty()
                for fd, events in ready_fds:
                    conn = conns.get(fd)
                    if conn is None:
                        continue  # a link's, served above
                    if self.released is None:
                        self._service(conn, events)
                    else:
                        self._pause(conn)
                if self.released is not None:
                    if bus is not None:
                        bus.end_turn()
                        bus.after_replies()
                        if self.dirty:
                            self.flush_dirty()
                    continue
                if self.ready:
                    if replying:
                        # The replies to the requests just read go out
                        # before pipelines carried over from the last turn
                        # go on (PIPELINE_BATCH): one client's batch does
                        # not hold up another's round trip.
                        self._output_replies()
                    ready, self.ready = self.ready, []
                    for conn in ready:
                        conn.queued = False
                        if not conn.closed:
                            self._service(conn, 0)
                if bus is not None:
                    # The bus frames the turn produced (the copies of the
                    # ADDJOBs just run, the GOTJOBs for the copies just
                    # stored) leave first: the peers work while we reply.
                    bus.end_turn()
                if replying:
                    # Every reply of the turn goes out together, after all
                    # the reading and running (Redis does it before it
                    # sleeps): the first send wakes a sleeping client
                    # process, the next ones find it awake.  Interleaved
                    # with the reads, each send paid that wake-up (an IPI
                    # on a VM; bench/README.md, "What was changed").
                    self._output_replies()
                # (the bus's work kept for after the replies: cluster.py's held acks)
                if bus is not None and bus.after_replies() and replying:
                    self._output_replies()
                if self.dirty:
                    self.flush_dirty()
        finally:
            node.end_turn()
            for conn in list(conns.values()):
                self._close(conn)
            if bus is not None:
                bus.close_all()

    def _output_replies(self) -> None:
        """Send the replies of every client in ``replying``."""
        replying = self.replying
        for conn in replying:
            self._output(conn)
        replying.clear()

    def _service(self, conn: Connection, events: int) -> None:
        """One turn of a client: read, run, reply."""
        if conn.held:
            if events & _HUP:
                self._close(conn)  # gone: nobody to wait for
            return  # _resume goes on once the AOF allows the replies
        client = conn.client
        node = self.node
        received = 0
        if events & _READ and not conn.closing and (
                not conn.pending or client.blocked is not None):
            try:
                if conn.plain and _EXACT:
                    data = _OS_READ(conn.fd, RECV_SIZE)
                elif conn.plain:
                    size = conn.recv_size
                    data = _OS_READ(conn.fd, size)
                    if len(data) == size and size == SMALL_RECV:
                        data += _read_rest(conn.fd)
                    conn.recv_size = RECV_SIZE if len(data) >= SMALL_RECV else SMALL_RECV
                else:
                    data = conn.sock.recv(RECV_SIZE)
            except BlockingIOError:
                data = None
            except OSError:
                self._close(conn)
                return
            if data is not None:
                if not len(data):
                    self._close(conn)
                    return
                received = len(data)
                node.stats.net_in += received
                try:
                    requests = conn.parser.feed(data)
                except ProtocolError as exc:
                    self._protocol_error(conn, exc)
                    return
                if requests:
                    if conn.pending:
                        conn.pending.extend(requests)  # behind those waiting
                    else:
                        conn.pending = requests
        pending = conn.pending
        if pending and _free(client):
            # run what we can: stop at a blocking command
            client.last_ms = node.now_ms()
            aof = node.log
            logging = node.log_active  # (no log: nothing to defer, no attributes to touch)
            logged = 0
            if logging:
                logged = aof.end
                aof.deferring = True  # the batch's AOF records: one write
            # A pipeline's replies are counted as they come and the client
            # is closed once they reach the hard output limit, not after the
            # batch (bench/README.md, "Hostile clients").
            out = client.out
            counted = len(out)
            produced = len(conn.outbuf)
            cap = self.output_cap if client.pubsub is None else self.pubsub_cap
            budget = PIPELINE_BATCH
            at = conn.pending_at
            chain = 0.0  # the last command's end: the next one's start (Node.chain_s)
            try:
                while at < len(pending) and _free(client):
                    argv = pending[at]
                    at += 1
                    node.chain_s = chain
                    node.execute(client, argv)
                    chain = node.last_end_s
                    if client.close_after_reply or client.killed:
                        at = len(pending)  # the rest is dropped
                        break
                    if at < len(pending):
                        while counted < len(out):
                            produced += len(out[counted])
                            counted += 1
                        if produced >= cap:
                            break
                        budget -= 1
                        # (a client holding much output gets no turns of its
                        # own: they would copy its growing output each time)
                        if not budget and produced <= OUTPUT_HIGH_WATER:
                            if self._others_waiting(conn):
                                break  # the rest: see _output
                            budget = PIPELINE_BATCH
                            chain = 0.0  # (its poll is no command's time)
            finally:
                if conn.pending is pending:  # (not closed meanwhile)
                    if at < len(pending):
                        conn.pending_at = at
                    else:
                        conn.pending = []
                        conn.pending_at = 0
                if logging:
                    aof.deferring = False
                    if aof.end != logged:
                        aof.end_batch()  # written before any reply goes out
                        conn.mark = aof.end
                elif node.log_active:  # the log came on in the batch (CONFIG SET)
                    conn.mark = aof.end
            if produced >= cap and self._output_over_limit(conn, produced):
                return  # closed as Redis does once its replies reach the limit
        if received:
            if conn.pending and client.blocked is not None:
                conn.pending_bytes += received  # waits behind a blocked command
            elif conn.pending_bytes:
                conn.pending_bytes = 0
            buffered = conn.pending_bytes + conn.parser.buffered()
            if buffered > node.config.client_query_buffer_limit:
                self._query_over_limit(conn, buffered)
                return
        self.replying.append(conn)

    def _others_waiting(self, conn: Connection) -> bool:
        """Whether another client waits for us now: its replies go out at
        the end of this turn, it is due a turn, or it has sent something (a
        peek: the epoll set is level-triggered, nothing is taken from it)."""
        if self.replying or self.ready or self.dirty:
            return True
        for fd, _events in self.epoll.poll(0, 2):
            if fd != conn.fd:
                return True
        return False

    def _query_over_limit(self, conn: Connection, buffered: int) -> None:
        """Redis's client-query-buffer-limit: closed, without a reply."""
        node = self.node
        node.stats.query_limit_kills += 1
        log.warning(f"Closing client that reached max query buffer length: "
                    f"id={conn.client.id} addr={conn.client.addr} ({buffered} bytes "
                    f"buffered, client-query-buffer-limit "
                    f"{node.config.client_query_buffer_limit})")
        self._close(conn)

    def _output(self, conn: Connection) -> None:
        aof = self.node.log
        if conn.mark and conn.mark > aof.durable:  # (mark 0: nothing was logged)
            # appendfsync always: replies wait for the fsync of the records
            # they confirm (in a worker thread); this client reads and runs
            # nothing meanwhile, the others go on.
            conn.held = True
            self._watch(conn, 0)
            aof.hold(conn.mark, self._resume, conn)
            return
        conn.flush(self.node.stats)
        client = conn.client
        if client.killed or conn.closed:
            self._close(conn)
            return
        unsent = len(conn.outbuf)  # (its length: native, where its truth is not)
        if unsent:
            limit = self._limit_of(conn)
            if ((limit.hard_bytes and unsent >= limit.hard_bytes)
                    or (limit.soft_bytes and unsent >= limit.soft_bytes)):
                if self._output_over_limit(conn, unsent):
                    return
            elif conn.soft_since_ms is not None:
                self._below_soft(conn)
        elif conn.soft_since_ms is not None:
            self._below_soft(conn)
        if (client.close_after_reply or conn.closing) and not unsent:
            self._close(conn)
            return
        if conn.pending and _free(client):
            # a batch stopped at PIPELINE_BATCH: the rest (read already, as
            # in one batch before) runs next turn, toward the output limit
            conn.wake()
            events = _OUT if unsent else 0
        elif not unsent:
            events = 0 if (client.close_after_reply or conn.closing) else _IN
        elif unsent > OUTPUT_HIGH_WATER or client.close_after_reply or conn.closing:
            events = _OUT  # no more input until the client reads
        else:
            events = _IN | _OUT
        if events != conn.events:
            self._watch(conn, events)

    def _watch(self, conn: Connection, events: int) -> None:
        if events != conn.events:
            self.epoll.modify(conn.fd, events)
            conn.events = events

    def _protocol_error(self, conn: Connection, exc: ProtocolError) -> None:
        """Run what came before the bad bytes, then say why and close."""
        client = conn.client
        node = self.node
        pending = conn.pending[conn.pending_at:] + getattr(exc, "requests", [])
        conn.pending = []
        conn.pending_at = 0
        out = client.out
        produced = len(conn.outbuf) + sum(map(len, out))
        cap = self.output_cap if client.pubsub is None else self.pubsub_cap
        for argv in pending:
            if not _free(client) or produced >= cap:
                break
            counted = len(out)
            node.execute(client, argv)
            produced += sum(map(len, out[counted:]))
        if produced >= cap and self._output_over_limit(conn, produced):
            return
        client.out.append(error(f"ERR {exc}"))  # (a byte quoted in it may be CR or LF)
        log.verbose(f"Protocol error from client {client.addr}: {exc}")
        conn.closing = True
        if node.log.end > conn.mark:
            conn.mark = node.log.end
        self._output(conn)


def _free(client: Client) -> bool:
    """Not blocked.  (A function, not the test inline: the compiler would
    take client.blocked to stay None after such a test, but a request run
    in between may block the client.)"""
    return client.blocked is None


def _read_rest(fd: int) -> bytes:
    """What waits after a small read that filled its room, or b"": an
    end of file or error is met again by the next turn's read (the set is
    level-triggered), once the bytes read so far have run."""
    try:
        return _OS_READ(fd, RECV_SIZE - SMALL_RECV)
    except OSError:  # (BlockingIOError: nothing more yet)
        return b""


def _refuse(sock: socket.socket, message: bytes) -> None:
    """Say why (what the kernel takes at once) and close; input already
    there is read first, so the close is a FIN rather than a reset that
    could discard the message."""
    try:
        sock.setblocking(False)
        sock.send(message)
        sock.shutdown(socket.SHUT_WR)
        sock.recv(RECV_SIZE)
    except OSError:
        pass
    finally:
        sock.close()


def _addr(addr: Any) -> str:
    if isinstance(addr, tuple):
        host, port = addr[0], addr[1]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return str(addr)
