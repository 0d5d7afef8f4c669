"""The cluster bus over TCP: one outgoing link per peer, any number of
incoming ones, every link served by the client loop's turns.

Every connected bus socket (a plain non-blocking stdlib socket) is in the
client loop's epoll set (server/clients/connection.py), and the transport
is that loop's ``SocketOwner``: each turn reads what every ready link has
(one ``recv`` each) and handles every complete frame, then, before the
clients' replies go, encodes what the turn produced (``Cluster.flush``)
and writes every link with output (one ``send`` each).  Frames produced
elsewhere (the cron, a peer's link coming up) are queued and wake the
loop, which sends them on its next turn: everything a turn of the node
produced for a peer leaves in one ``send``, and the sends of a turn leave
together.

Why one loop: a task per link, or a bus loop of its own, cost every frame
or every unpipelined job a pass of trio's scheduler (the designs measured
are in bench/README.md, "Cluster: replicated ADDJOB").
"""

import errno
import io
import ipaddress
import mmap
import os
import select
import socket
import traceback
from typing import Any, Callable, Final

import trio
from mypy_extensions import i64

from ..cluster import Cluster
from ..membership import ClusterNode
from ..outbox import JOBS_FRAME_BYTES, Transport
from .. import bus_guard
from ...protocol import bus
from ...shell import fdio, log
from .link_auth import LinkAuth
from ...shell.listening import accept_forever, open_listener
from ...shell.socket_set import SocketOwner, SocketSet
from ...shell.tls import TlsSocket, enforce_deadlines

RECV_SIZE: Final = 64 * 1024
# A plain link whose last read was short reads this much by os.read first:
# bytes of Python's small-object allocator, where the mmap's read and slice
# (below) cost ~470 instructions more a read; one that fills it reads the
# rest into the mmap at once, and its next reads go there until one is short
# (bench/README.md, "The loop's and the bus's turn, twenty-eighth session").
SMALL_READ: Final = 448
# fdio.c's read where built: the GIL kept, bytes of just what came (no
# small read first, no mmap); else os.read.
_READ: Final = fdio.read
_EXACT: Final = fdio.EXACT
# A plain link's socket is written by its fd: a call of a builtin bound
# once, where sock.send was a method look-up and an argument-tuple parse
# (bench/README.md, "A replica's lone job"); fdio.c's where built.
_WRITE: Final = fdio.write
_ANY = ("", "0.0.0.0", "::", "*")  # no address of its own: every interface
CONNECT_RETRY_MS = 20  # at most one connection attempt per peer this often
SAVE_WARNING_PERIOD_MS = 10000  # nodes.conf cannot be written: log this often
STARTUP_GREETING_MS = 1000  # at most this long to greet the peers at start
SAVE_MIN_PERIOD_S = 0.01  # nodes.conf is saved at most this often
SAVE_RETRY_PERIOD_S = 0.1  # nodes.conf could not be saved: try again this often
LISTEN_BACKLOG = 511

# (Final: constants to the compiled turn, where a module global is a
# dictionary look-up at each use)
_IN: Final = select.EPOLLIN
_OUT: Final = select.EPOLLOUT
_HUP: Final = select.EPOLLHUP | select.EPOLLERR


class Link:
    """One TCP connection of the bus, inbound or outbound."""

    __slots__ = ("transport", "node_id", "peer_ip", "sock", "fd", "plain", "out",
                 "out_bytes", "outbuf", "inbuf", "closed", "connected", "readinto",
                 "events", "queued", "connect_scope", "auth", "small")
    # (typed: the turn's reads and writes are compiled, setup.py)
    transport: "TcpTransport"
    node_id: Any  # str for our outbound links, else None
    peer_ip: str
    sock: Any  # socket.socket, or TlsSocket; None until connected
    fd: int
    plain: bool
    readinto: Any  # a plain link's: its fd's FileIO.readinto (see _read)
    out: list[bytes]
    out_bytes: int
    outbuf: bytes | memoryview
    inbuf: bytearray | None
    closed: bool
    connected: bool
    events: int
    queued: bool
    connect_scope: trio.CancelScope | None
    auth: LinkAuth | None
    small: bool  # a plain link's last read was short: SMALL_READ by os.read next

    def __init__(self, transport: "TcpTransport", node_id: str | None = None,
                 peer_ip: str = "") -> None:
        self.transport = transport
        self.node_id = node_id  # set for our outbound links
        self.peer_ip = peer_ip
        self.sock = None
        self.fd = -1
        self.plain = False  # a plain socket (no TLS): read and written by its fd
        self.readinto = None
        self.out = []  # frames not yet handed to the kernel
        self.out_bytes = 0  # bytes queued and not yet sent (out + outbuf)
        self.outbuf = b""  # the part of a send the kernel did not take
        self.inbuf = None  # bytearray: the start of a frame not complete yet
        self.closed = False
        self.connected = False  # in the event loop's epoll set
        self.events = 0
        self.queued = False  # in the transport's list of links to write
        self.connect_scope = None  # while an outbound link connects
        self.auth = None  # LinkAuth when cluster-secret is set
        self.small = True

    def send(self, frame: bytes) -> None:
        """Queue ``frame``; it leaves at the end of the loop's turn (or
        once the link is up)."""
        if self.closed:
            return
        self.out.append(frame)
        self.out_bytes += len(frame)
        # The peer stopped reading (a frame alone may pass the bound).
        if self.out_bytes > self.transport.send_queue_limit and self.out_bytes > len(frame):
            self.transport.refuse(self, bus_guard.SLOW_PEER,
                                  f"over cluster-bus-send-queue-limit: {self.out_bytes} bytes unsent")
            return
        if not self.queued:
            self.queued = True
            transport = self.transport
            transport.to_write.append(self)
            transport.wake()

    def close(self) -> None:
        """Stop the link now (its output goes with it)."""
        self.transport.close_link(self)


class TcpTransport(Transport, SocketOwner):
    """The cluster's transport (outbox.Transport) over TCP, its links
    served in the client loop's turns (a SocketOwner)."""

    nursery: trio.Nursery
    after_event: Callable[[], None]
    cluster: Cluster  # set by attach_cluster, right after
    out_links: dict[str, Link]
    next_attempt_ms: dict[str, int]
    frames_dropped: int
    sent: list[bus.FrameCount]
    hot: Link
    hot2: Link
    epoll: SocketSet
    links: dict[int, Link]
    to_write: list[Link]
    gone: list[Link]
    flush_needed: bool
    held: bool
    listeners: list[socket.socket]
    source_ip: str | None
    tls: Any  # tls.BusTls with tls-cluster yes
    secret: Any  # bus_guard.secret_key's: None without cluster-secret
    also_accepted: Any
    max_frame: int
    send_queue_limit: int
    rbuf: mmap.mmap

    def __init__(self, nursery: trio.Nursery, after_event: Callable[[], None],
                 sockets: SocketSet) -> None:
        self.nursery = nursery
        self.after_event = after_event  # flush client replies the bus caused
        self.out_links = {}  # node id -> Link (connecting or connected)
        self.next_attempt_ms = {}
        self.frames_dropped = 0
        self.sent = bus.frame_counts()  # by message type (/metrics)
        # The outbound links of the last two peers sent to (a job's frames go
        # to its two other holders in turn): an identity compare in place of
        # out_links' look-up by ID.  Only an open link is taken from here,
        # and an open outbound link is always its peer's in out_links.
        none = Link(self)
        none.closed = True
        self.hot = self.hot2 = none
        self.epoll = sockets  # the client loop's (see the module's comment)
        self.links = {}  # fd -> connected Link
        self.to_write = []  # links with frames queued since the last flush
        self.gone = []  # outbound links closed: tell the cluster at the turn's end
        self.flush_needed = False  # the cluster's outbox has frames
        self.held = False  # output waits for the AOF (appendfsync always)
        self.listeners = []
        self.source_ip = None  # outgoing links leave from here (see bind)
        self.tls = None  # tls.BusTls with tls-cluster yes: links speak TLS
        self.secret = None  # cluster-secret's HMAC key: links authenticate
        self.also_accepted = None  # cluster-secret-accept's key (rotation)
        self.max_frame = bus.MAX_FRAME  # cluster-bus-max-frame
        self.send_queue_limit = 256 * 1024 * 1024  # cluster-bus-send-queue-limit
        # Every plain link's reads land here, then leave as bytes of just
        # what arrived (a slice of an mmap is bytes: one copy), where
        # os.read allocated 64 KB and shrank it each read (bench/README.md,
        # "A replica's job, twenty-third session").
        self.rbuf = mmap.mmap(-1, RECV_SIZE)

    # --------------------------------------------- interface for Cluster

    @property
    def frames_sent(self) -> list[int]:
        """Frames sent by message type (/metrics)."""
        return [count.n for count in self.sent]

    def send(self, node_id: str, frame: bytes) -> None:
        self.sent[frame[bus.TYPE_OFFSET]].n += 1
        link = self.hot
        if link.node_id is node_id and not link.closed:
            link.send(frame)
            return
        link = self.hot2
        if link.node_id is node_id and not link.closed:
            link.send(frame)
            return
        self._send_by_id(node_id, frame)

    def _send_by_id(self, node_id: str, frame: bytes) -> None:
        link = self.out_links.get(node_id)
        if link is None:
            # A node we know but have no link to yet (just learned from
            # gossip, or restarting): connect now rather than at the next
            # cron tick, and keep the frame for when the link is up.
            node = self.cluster.membership.nodes.get(node_id)
            if node is not None and not node.myself:
                self.ensure_link(node)
                link = self.out_links.get(node_id)
        if link is None or link.closed:
            self.frames_dropped += 1
            return
        self.hot2 = self.hot
        self.hot = link
        # A link still connecting keeps the frame and writes it once up (a
        # GOTJOB a restarting node owes is not lost); if the connection
        # fails, the frames go with the link.
        link.send(frame)

    def ensure_link(self, node: ClusterNode) -> None:
        if node.id in self.out_links:
            return
        now_ms = self.cluster.node.now_ms()
        if self.next_attempt_ms.get(node.id, 0) > now_ms:
            return
        self.next_attempt_ms[node.id] = now_ms + CONNECT_RETRY_MS
        link = Link(self, node.id)
        self.out_links[node.id] = link
        self.nursery.start_soon(self._connect, link, node.ip, node.bus_port)

    def drop_link(self, node_id: str) -> None:
        link = self.out_links.pop(node_id, None)
        if link is not None:
            link.close()

    def rename_link(self, old_id: str, new_id: str) -> None:
        link = self.out_links.pop(old_id, None)
        if link is not None:
            link.node_id = new_id
            stale = self.out_links.pop(new_id, None)
            if stale is not None:
                stale.close()
            self.out_links[new_id] = link

    def flush_soon(self) -> None:
        self.flush_needed = True
        self.wake()

    def configure(self, config: Any) -> None:
        """Take the bus directives now, and again at each CONFIG SET."""
        self.max_frame = config.cluster_bus_max_frame
        self.send_queue_limit = config.cluster_bus_send_queue_limit
        self.secret = bus_guard.secret_key(config.cluster_secret)
        self.also_accepted = bus_guard.secret_key(config.cluster_secret_accept)
        config.on_change["cluster-bus-max-frame"] = lambda v: setattr(self, "max_frame", v)
        config.on_change["cluster-bus-send-queue-limit"] = (
            lambda v: setattr(self, "send_queue_limit", v))
        config.on_change["cluster-secret"] = lambda v: self._set_secrets(v, None)
        config.on_change["cluster-secret-accept"] = lambda v: self._set_secrets(None, v)
        if config.cluster_bus_max_frame < config.max_job_size + JOBS_FRAME_BYTES + 4096:
            log.warning(f"cluster-bus-max-frame {config.cluster_bus_max_frame} is below "
                        f"max-job-size {config.max_job_size} + 1mb: a peer's frame "
                        f"holding a job that large would close its link")

    def cron(self, now_ms: int) -> None:
        """(Cluster.cron, every tick.)  With cluster-secret, a link opened
        to us whose peer has not proven the secret (a tagged envelope)
        within cluster-node-timeout is closed: a connection that says
        nothing, or only hello, holds nothing for long.  (Our own links to
        a peer that went quiet are membership's: it drops them.)"""
        if self.secret is None:
            return
        deadline_ms = now_ms - self.cluster.node.config.cluster_node_timeout
        for link in list(self.links.values()):
            auth = link.auth
            if (auth is not None and link.node_id is None and auth.opened_ms < deadline_ms
                    and not auth.proven()):
                self.refuse(link, bus_guard.AUTH,
                            "no authenticated frame within cluster-node-timeout")

    def _set_secrets(self, secret: str | None, also_accepted: str | None) -> None:
        """cluster-secret or cluster-secret-accept changed (the other is
        None): every link starts again under them (a link keeps the
        secrets it opened with)."""
        key = self.secret if secret is None else bus_guard.secret_key(secret)
        also = (self.also_accepted if also_accepted is None
                else bus_guard.secret_key(also_accepted))
        if (key, also) == (self.secret, self.also_accepted):
            return
        self.secret, self.also_accepted = key, also
        log.notice("cluster-secret changed: every cluster bus link reconnects")
        for link in list(self.links.values()) + list(self.out_links.values()):
            self.close_link(link)

    # ------------------------------------------- the client loop's turns

    def wake(self) -> None:
        """Have the event loop take a turn (it may be waiting)."""
        self.epoll.wake()

    def busy(self) -> bool:
        return bool(self.flush_needed or self.gone or (self.to_write and not self.held))

    def serve_ready(self, ready: list[tuple[int, int]]) -> None:
        """Read and write the links the loop found ready."""
        logged = self._defer_log()
        try:
            self._serve_links(ready)
        finally:
            self._write_log(logged)

    def _defer_log(self) -> int:
        """The AOF records from here to _write_log: one write.  The log's
        end before them, or -1 without a log (then no attribute of the log
        is read or set: generic calls on the interpreted log)."""
        node = self.cluster.node
        if not node.log_active:
            return -1
        aof = node.log
        aof.deferring = True
        return aof.end

    def _write_log(self, logged: int) -> None:
        if logged < 0:
            return
        aof = self.cluster.node.log
        aof.deferring = False
        if aof.end != logged:
            aof.end_batch()

    def _serve_links(self, ready: list[tuple[int, int]]) -> None:
        links = self.links
        for fd, mask in ready:
            link = links.get(fd)
            if link is None:
                continue
            if mask & _OUT:
                self._write(link)
            if mask & (_IN | _HUP) and not link.closed:
                self._read(link)

    def after_replies(self) -> bool:
        """The ack frames and START-GCs held this turn (Cluster.held_acks,
        Acks.held_gcs), handled now that its replies and GOTJOBs are out;
        what they produced is sent."""
        if not self.cluster.has_held_acks():
            return False
        logged = self._defer_log()
        try:
            self._handle_held_acks()
        finally:
            self._write_log(logged)
        self.end_turn()
        return True

    def _handle_held_acks(self) -> None:
        try:
            self.cluster.handle_held_acks()
        except Exception:
            # As a frame that tripped a rule in _read: a bug, logged
            # loudly, and the node stays up (the frames' links are not
            # known here: they stay).
            log.warning("Error handling held cluster bus ack frames:\n"
                        + traceback.format_exc())

    def end_turn(self) -> None:
        if self.gone:
            self._links_gone()
        if self.flush_needed or (self.to_write and not self.held):
            self.flush()

    def close_all(self) -> None:
        for link in list(self.links.values()):
            self.close_link(link)

    def flush(self) -> None:
        """Encode the cluster's outbox and write every link with output."""
        if self.flush_needed:
            self.flush_needed = False
            self.cluster.flush()
        self.push()

    def push(self) -> None:
        """Write every link with output: at the end of a turn, and (the
        cluster calls it) in the middle of a long one that produced a lot."""
        if not self.to_write or self.held:
            return
        # A GOTJOB promises the peer a copy: with appendfsync always that
        # copy must be on disk (fsynced) before we say so.  (No log: no
        # copy to wait for, and no attribute of the interpreted log read.)
        node = self.cluster.node
        if node.log_active:
            aof = node.log
            if aof.durable < aof.end:
                self.held = True
                aof.hold(aof.end, self._durable, None)
                return
        to_write, self.to_write = self.to_write, []
        for link in to_write:
            link.queued = False
            if link.connected and not link.closed:
                self._write(link)  # (by name: a native call)

    def _durable(self, _):
        self.held = False
        self.wake()

    def _read(self, link: Link) -> None:
        data: bytes
        if link.plain and (_EXACT or link.small):
            # (fdio.c's read makes bytes of just what came: RECV_SIZE at
            # once; os.read's, a small first read, then the rest if it filled)
            try:
                data = _READ(link.fd, RECV_SIZE if _EXACT else SMALL_READ)
            except BlockingIOError:
                return
            except OSError:
                self.close_link(link)
                return
            if not len(data):
                self.close_link(link)
                return
            if not _EXACT and len(data) == SMALL_READ:
                link.small = False
                data += self._read_rest(link)
        elif link.plain:
            try:
                got = link.readinto(self.rbuf)  # (None: EAGAIN, no error raised)
            except OSError:
                self.close_link(link)
                return
            if got is None:
                return
            if not got:
                self.close_link(link)
                return
            data = self.rbuf[:got]
            if len(data) < SMALL_READ:
                link.small = True
        else:
            try:
                data = link.sock.recv(RECV_SIZE)
            except BlockingIOError:
                return
            except OSError:
                self.close_link(link)
                return
            if not data:
                self.close_link(link)
                return
        inbuf = link.inbuf
        buf: bytes | bytearray
        if inbuf is not None:
            inbuf += data  # (in place: _keep_unread knows it as link.inbuf)
            buf = inbuf
        else:
            buf = data
        auth = link.auth
        try:
            if auth is None:
                if inbuf is None:
                    pos = self._frames_of(link, data)
                else:
                    pos = self._frames(link, buf)
            else:  # cluster-secret: the peer's hello, then envelopes
                pos = auth.read(link, buf, self.max_frame, self.cluster.receive)
        # (a name per clause: compiled, a name is of one type, the first's)
        except bus.AuthError as not_proven:
            self.refuse(link, bus_guard.AUTH, str(not_proven))
            return
        except bus.FrameTooBig as too_big:
            self.refuse(link, bus_guard.TOO_BIG, str(too_big))
            return
        except bus.BusError as bad:
            log.warning(f"Bad cluster bus frame from {link.peer_ip or link.node_id}: {bad}")
            self.close_link(link)
            return
        except Exception:
            # A frame that passed the codec but tripped a rule: a bug,
            # logged loudly; the link goes, the node stays up.
            log.warning(f"Error handling a cluster bus frame from "
                        f"{link.peer_ip or link.node_id}, link dropped:\n"
                        + traceback.format_exc())
            self.close_link(link)
            return
        if auth is not None and link.out and not link.queued and not link.closed:
            link.queued = True  # frames that waited for the peer's hello
            self.to_write.append(link)
        self._keep_unread(link, buf, pos)

    def _read_rest(self, link: Link) -> bytes:
        """What waits after a small read that filled its room, or b"": an
        end of file or error is met again by the next turn's read (the set
        is level-triggered), once the frames read so far are handled."""
        try:
            got = link.readinto(self.rbuf)
        except OSError:
            return b""
        if got is None or not got:
            return b""
        return self.rbuf[:got]

    def _frames(self, link: Link, buf: bytes | bytearray) -> int:
        """Hand every whole frame in ``buf`` to the cluster; the offset of
        the first byte not consumed."""
        cluster = self.cluster
        max_frame = self.max_frame
        size = len(buf)
        pos = 0
        while pos < size and not link.closed:  # (no call for the end)
            # (bus.frame_length called by name: a native call, where a local
            # bound to it was a Python call)
            length = bus.frame_length(buf, pos, max_frame)
            if length is None or size - pos < length:
                break
            if pos == 0 and length == size:
                cluster.receive(buf, link)
            else:
                # (a slice of bytes is bytes, of a bytearray a bytearray:
                # bus.decode makes bytes of that)
                cluster.receive(buf[pos:pos + length], link)
            pos += length
        return pos

    def _frames_of(self, link: Link, buf: bytes) -> int:
        """_frames of a read's bytes alone (no frame left from the last
        read: mostly), typed bytes: the lengths read and the frames sliced
        natively."""
        cluster = self.cluster
        max_frame: i64 = self.max_frame
        size: i64 = len(buf)
        pos: i64 = 0
        while pos < size and not link.closed:
            length = bus.frame_len(buf, pos, max_frame)
            if length < 0 or size - pos < length:
                break
            if pos == 0 and length == size:
                cluster.receive(buf, link)
            else:
                cluster.receive(buf[pos:pos + length], link)
            pos += length
        return pos

    def refuse(self, link: Link, kind: str, reason: str) -> None:
        """Close ``link`` for ``reason``: counted in INFO, logged with the
        peer's address (at most LOG_LINES a second per kind)."""
        more = self.cluster.bus_guard.refused(kind, self.cluster.node.now_ms())
        if more is not None:
            log.warning(f"Cluster bus link {_describe(link)} closed: {reason}{more}")
        self.close_link(link)

    def _keep_unread(self, link: Link, buf: bytes | bytearray, pos: int) -> None:
        """Keep the bytes of ``buf`` from ``pos`` (a frame not complete
        yet) for the next read."""
        if link.closed:
            return
        size = len(buf)
        if pos == size:
            link.inbuf = None
        elif buf is link.inbuf:
            if pos:
                del buf[:pos]
        else:
            link.inbuf = bytearray(buf[pos:] if pos else buf)

    def _write(self, link: Link) -> None:
        """Send what the kernel takes now; the rest when it is writable."""
        sock = link.sock
        while True:
            data = link.outbuf
            # (lengths: compiled, a bytes' or memoryview's truth is a
            # generic call)
            if not len(data):
                out = link.out
                if not out:
                    break
                if link.auth is None:
                    data = out[0] if len(out) == 1 else b"".join(out)
                elif link.auth.ready():
                    data = link.auth.seal(out)
                    link.out_bytes += len(data) - sum(map(len, out))
                else:
                    break  # nothing leaves before the peer's hello
                out.clear()
            sent: int  # (typed: the arithmetic and compares below native)
            try:
                # (two statements: a conditional expression of the two calls
                # is of type Any, the count boxed again to join them)
                if link.plain:
                    sent = _WRITE(link.fd, data)
                else:
                    sent = sock.send(data)
            except BlockingIOError:
                sent = 0
            except OSError:
                self.close_link(link)
                return
            link.out_bytes -= sent
            if sent < len(data):
                link.outbuf = memoryview(data)[sent:]
                break
            link.outbuf = b""
        events = _IN | _OUT if len(link.outbuf) else _IN
        if events != link.events:
            self.epoll.modify(link.fd, events)
            link.events = events

    def close_link(self, link: Link) -> None:
        if link.closed:
            return
        link.closed = True
        link.out.clear()
        link.out_bytes = 0
        link.outbuf = b""
        link.inbuf = None
        if link.connect_scope is not None:
            link.connect_scope.cancel()  # _connect closes the socket
            return
        if link.connected:
            link.connected = False
            self.links.pop(link.fd, None)
            try:
                self.epoll.unregister(link.fd)
            except OSError:
                pass
            link.sock.close()
            if link.node_id is not None:
                self.gone.append(link)
                self.wake()

    def _links_gone(self):
        gone, self.gone = self.gone, []
        for link in gone:
            log.verbose(f"Cluster bus link to {link.node_id[:8]} closed")
            if self.out_links.get(link.node_id) is link:
                del self.out_links[link.node_id]
                self.cluster.link_down(link.node_id)

    def _add(self, link, sock):
        """Serve ``sock`` in the event loop (OSError: it was not added)."""
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        fd = sock.fileno()
        self.epoll.register(fd, _IN)
        link.sock = sock
        link.fd = fd
        link.plain = not isinstance(sock, TlsSocket)
        if link.plain:  # (closefd False: the socket owns and closes the fd)
            link.readinto = io.FileIO(fd, "r", closefd=False).readinto
        link.connected = True
        link.events = _IN
        self.links[fd] = link
        if self.secret is not None:
            link.auth = LinkAuth(self.secret, os.urandom(bus.NONCE_LEN), self.also_accepted,
                                 self.cluster.node.now_ms())
            link.outbuf = link.auth.hello()  # first out, before any frame
            link.out_bytes += len(link.outbuf)
        if (link.out or link.auth is not None) and not link.queued:
            link.queued = True
            self.to_write.append(link)
        self.wake()

    # ------------------------------------------------------------- tasks

    async def _connect(self, link, ip, port):
        timeout_s = max(1.0, self.cluster.node.config.cluster_node_timeout / 1000)
        sock = None
        try:
            with trio.move_on_after(timeout_s) as scope:
                link.connect_scope = scope
                if link.closed:
                    scope.cancel()
                family = socket.AF_INET6 if ":" in ip else socket.AF_INET
                sock = socket.socket(family, socket.SOCK_STREAM)
                sock.setblocking(False)
                source = self.source_ip
                if (source is not None and (":" in source) == (":" in ip)
                        and not _loopback(ip)):
                    sock.bind((source, 0))
                err = sock.connect_ex((ip, port))
                if err == errno.EINPROGRESS:
                    await trio.lowlevel.wait_writable(sock)
                    err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            link.connect_scope = None
            if scope.cancelled_caught or err:
                raise OSError(err or errno.ETIMEDOUT, "connect failed")
        except OSError:
            link.connect_scope = None
            if sock is not None:
                sock.close()
            sock = None
        if sock is None or link.closed or self.out_links.get(link.node_id) is not link:
            if sock is not None:
                sock.close()
            link.closed = True
            if self.out_links.get(link.node_id) is link:
                del self.out_links[link.node_id]
            return
        try:
            if self.tls is not None:
                sock = self._secure(sock, f"{ip}:{port}", server_side=False)
            self._add(link, sock)
        except OSError:  # reset right after connecting: the cron retries
            sock.close()
            link.closed = True
            del self.out_links[link.node_id]
            return
        log.verbose(f"Cluster bus link to {link.node_id[:8]} ({ip}:{port}) connected")
        self._learn_my_ip(sock)
        self.cluster.link_up(link.node_id)
        self.after_event()

    def bind(self, addresses, port):
        """Open the bus's listening sockets now (an error stops start-up)."""
        for address in addresses:
            self.listeners.append(open_listener(address, port, LISTEN_BACKLOG))
        # As Redis: links out leave from a bound address, so peers (which
        # take a node's address from where its PINGs come) reach it there,
        # not at another interface's address it does not listen on.  (Not
        # from a wildcard or loopback one: loopback peers need no choice.)
        for address in addresses:
            if address not in _ANY and not _loopback(address):
                self.source_ip = address
                break

    def _learn_my_ip(self, sock):
        """Bound to every address, a node knows its own only from a bus
        connection, in or out: the local end's address (a restarted
        container may have a new one, and nobody may connect in before
        it has said so)."""
        membership = self.cluster.membership
        if membership.local_ip in _ANY:
            try:
                local_ip = sock.getsockname()[0]
            except OSError:
                return
            membership.local_ip = local_ip
            me = membership.myself
            if me.ip in _ANY:
                me.ip = local_ip

    def _accepted(self, sock, addr):
        try:
            sock.setblocking(False)
            peer_ip = addr[0]
            self._learn_my_ip(sock)
        except OSError:
            sock.close()
            return
        try:
            if self.tls is not None:
                sock = self._secure(sock, _addr_text(addr), server_side=True)
            self._add(Link(self, None, peer_ip), sock)
        except OSError:
            sock.close()

    def _secure(self, sock: socket.socket, peer: str, server_side: bool) -> TlsSocket:
        """tls-cluster yes: ``sock`` as TLS (shell/tls.py); the
        handshake runs in the loop's reads and writes, and a link that has
        not finished it in time is closed."""
        fd = sock.fileno()

        def too_slow() -> None:
            link = self.links.get(fd)
            if link is not None and link.sock is secured:
                self.close_link(link)
        secured = self.tls.wrap(sock, peer, server_side, too_slow)
        return secured

    def serve(self, nursery):
        """Accept peers on the bound sockets and run the links."""
        for listener in self.listeners:
            nursery.start_soon(accept_forever, listener, "cluster bus connection",
                               self._accepted)
        if self.tls is not None:
            nursery.start_soon(enforce_deadlines, self.tls.deadlines)


class ClusterService:
    """What server/main.py starts: the bus, nodes.conf, cluster-join."""

    def __init__(self, node, transport, cluster, config_path):
        self.node = node
        self.transport = transport
        self.cluster = cluster
        self.config_path = config_path
        cluster.save_config = self.save

    def bind(self):
        """Open the bus port now, so that a bind error stops start-up."""
        config = self.node.config
        try:
            self.transport.bind(config.bind, config.bus_port())
        except OSError as exc:
            from ...core.admin.config import ConfigError
            raise ConfigError(f"Could not bind the cluster bus port {config.bus_port()}: "
                              f"{exc.strerror}") from None

    async def start(self, nursery):
        """Join the cluster: only once the AOF is loaded, because a copy
        confirmed or an ack taken while it loads would live in memory only
        (the AOF opens for appending after the load), and a second crash
        would lose a job whose ADDJOB reply promised another copy here."""
        config = self.node.config
        self.transport.serve(nursery)
        await self._greet_peers()
        nursery.start_soon(self._save_loop)
        if config.cluster_join:
            nursery.start_soon(self._join_loop, list(config.cluster_join))

    async def _greet_peers(self):
        """Before we answer clients, let the peers of nodes.conf know we are
        back: connect to each and wait (at most STARTUP_GREETING_MS) until it
        answered our PING and pinged us on its own new link, or cannot be
        reached.  A node restarting after a crash was flagged FAIL by its
        peers; their PONG exchange with it clears the flag, so once its
        clients can reach it, its peers count it in again too."""
        membership = self.cluster.membership
        transport = self.transport
        peers = [n for n in membership.others() if not n.handshake]
        if not peers:
            return
        start_ms = self.node.now_ms()
        for other in peers:
            transport.ensure_link(other)

        def greeted(n):
            if n.id not in transport.out_links:
                return True  # it refused the connection or the link broke
            return n.pong_received_ms >= start_ms and n.ping_received_ms >= start_ms
        with trio.move_on_after(STARTUP_GREETING_MS / 1000):
            while not all(greeted(n) for n in peers):
                await trio.sleep(0.005)
        answered = sum(1 for n in peers if n.pong_received_ms >= start_ms)
        report = log.verbose if all(greeted(n) for n in peers) else log.notice
        report(f"Greeted the cluster: {answered} of {len(peers)} known nodes "
               f"answered in {self.node.now_ms() - start_ms} ms")

    def save(self):
        """Write nodes.conf atomically (temp file, fsync, rename)."""
        membership = self.cluster.membership
        tmp = self.config_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(membership.config_text())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.config_path)
        membership.dirty = False

    async def _save_loop(self):
        """Save nodes.conf as soon as the node table changed (a node killed
        right after it learned a peer must know it when it restarts), at
        most every SAVE_MIN_PERIOD_S, and retry while saving fails.  (No
        wake-up otherwise: each is a pass through trio, shell/ticks.py.)"""
        membership = self.cluster.membership
        changed = trio.Event()
        membership.on_dirty = changed.set
        warned_ms = None
        while True:
            if membership.dirty:  # a save failed, or a change came meanwhile
                with trio.move_on_after(SAVE_RETRY_PERIOD_S):
                    await changed.wait()
            else:
                await changed.wait()
            changed = trio.Event()
            membership.on_dirty = changed.set
            if membership.dirty:
                try:
                    self.save()
                    warned_ms = None
                except OSError as exc:
                    now_ms = self.node.now_ms()
                    if warned_ms is None or now_ms - warned_ms >= SAVE_WARNING_PERIOD_MS:
                        warned_ms = now_ms  # retried every tick, said every 10 s
                        log.warning(f"Could not save the cluster config "
                                    f"{self.config_path}: {exc}")
            await trio.sleep(SAVE_MIN_PERIOD_S)  # changes meanwhile: one save

    async def _join_loop(self, targets):
        """cluster-join host:port: meet each until it is known (DNS names
        may not resolve yet while the other containers start)."""
        membership = self.cluster.membership
        pending = list(targets)
        while pending:
            for target in list(pending):
                host, _, port_text = target.rpartition(":")
                try:
                    port = int(port_text)
                    infos = await trio.socket.getaddrinfo(host, port, type=trio.socket.SOCK_STREAM)
                except (ValueError, OSError) as exc:
                    log.verbose(f"cluster-join {target}: {exc}")
                    continue
                ip = infos[0][4][0]
                known = any(n.ip == ip and n.port == port and not n.handshake
                            for n in membership.nodes.values())
                if known:
                    pending.remove(target)
                    log.notice(f"Joined the cluster through {target}")
                else:
                    membership.meet(ip, port, port + 10000, self.node.now_ms())
            await trio.sleep(1)


def attach_cluster(node, nursery, after_event, sockets):
    """Give ``node`` its cluster: identity from nodes.conf, TCP transport
    (its links in ``sockets``, the client loop's set)."""
    config = node.config
    transport = TcpTransport(nursery, after_event, sockets)
    transport.configure(config)
    ip = config.bind_address()
    if ip in ("0.0.0.0", "::"):
        ip = ""
    # (port 0: TLS clients only, so peers and HELLO give tls-port)
    cluster = Cluster(node, transport, ip, config.port or config.tls_port,
                      config.bus_port())
    transport.cluster = cluster
    cluster.hold_acks_for_turns()  # (the client loop calls after_replies each turn)
    path = os.path.abspath(config.cluster_config_file)
    service = ClusterService(node, transport, cluster, path)
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        text = ""
    if text.strip():
        my_id = cluster.membership.load_config_text(text, node.now_ms())
        if my_id is None:
            from ...core.admin.config import ConfigError
            raise ConfigError(f"Unrecoverable error: corrupted cluster config file {path}")
        cluster.set_node_id(my_id)
        log.notice(f"Node configuration loaded, I'm {my_id}")
    else:
        log.notice(f"No cluster configuration found, I'm {node.id}")
    try:
        service.save()
    except OSError as exc:
        from ...core.admin.config import ConfigError
        raise ConfigError(f"Could not write the cluster config file {path}: "
                          f"{exc.strerror or exc}") from None
    return service


def _describe(link: Link) -> str:
    """Where a link leads, for a log line: "from 127.0.0.1:40122" or
    "to 127.0.0.1:17712 (node 3f2a9c01)"."""
    try:
        host, port = link.sock.getpeername()[:2]
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    except (OSError, AttributeError):
        where = link.peer_ip or "?"
    if link.node_id is None:
        return f"from {where}"
    return f"to {where} (node {link.node_id[:8]})"


def _addr_text(addr: tuple[str, int]) -> str:
    return f"[{addr[0]}]:{addr[1]}" if ":" in addr[0] else f"{addr[0]}:{addr[1]}"


def _loopback(address):
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False
