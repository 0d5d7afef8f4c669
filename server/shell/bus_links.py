"""The cluster bus over TCP: one outgoing link per peer, any number of
incoming ones, frames coalesced per event-loop turn.

Frames produced while the core handles one event are only queued; a link's
writer task runs after the current task yields, so everything a turn
produced for a peer leaves in one ``send``.
"""

import os
import traceback

import trio

from ...cluster.cluster import Cluster
from ...cluster import commands as _cluster_commands  # noqa: F401 (registers CLUSTER)
from ...protocol import bus
from . import log

RECV_SIZE = 64 * 1024
CONNECT_RETRY_MS = 20  # at most one connection attempt per peer this often
MAX_LINK_BUFFER = 256 * 1024 * 1024  # drop a link whose peer stopped reading
SAVE_WARNING_PERIOD_MS = 10000  # nodes.conf cannot be written: log this often
STARTUP_GREETING_MS = 1000  # at most this long to greet the peers at start
SAVE_MIN_PERIOD_S = 0.01  # nodes.conf is saved at most this often
SAVE_RETRY_PERIOD_S = 0.1  # nodes.conf could not be saved: try again this often


class Link:
    """One TCP connection of the bus, inbound or outbound."""

    def __init__(self, node_id=None, peer_ip=""):
        self.node_id = node_id  # set for our outbound links
        self.peer_ip = peer_ip
        self.stream = None
        self.out = []
        self.out_bytes = 0
        self.has_output = trio.Event()
        self.closed = False
        self.cancel_scope = None  # the link's reader and writer, once running

    def send(self, frame):
        if self.closed:
            return
        self.out.append(frame)
        self.out_bytes += len(frame)
        if self.out_bytes > MAX_LINK_BUFFER:
            self.close()
            return
        self.has_output.set()

    def close(self):
        """Stop the link now, even if its writer is blocked in a send to a
        peer that stopped reading (a stuck writer would otherwise keep the
        socket and its buffer for as long as the peer stays stopped)."""
        self.closed = True
        self.out.clear()
        self.out_bytes = 0
        self.has_output.set()
        if self.cancel_scope is not None:
            self.cancel_scope.cancel()


class TcpTransport:
    """Implements the transport interface cluster/cluster.py expects."""

    def __init__(self, nursery, after_event):
        self.nursery = nursery
        self.after_event = after_event  # flush client replies the bus caused
        self.cluster = None
        self.out_links = {}  # node id -> Link (connecting or connected)
        self.next_attempt_ms = {}
        self.flush_needed = trio.Event()
        self.frames_dropped = 0

    # --------------------------------------------- interface for Cluster

    def send(self, node_id, frame):
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
        # A link still connecting keeps the frame and writes it once up (a
        # GOTJOB a restarting node owes is not lost); if the connection
        # fails, the frames go with the link.
        link.send(frame)

    def ensure_link(self, node):
        if node.id in self.out_links:
            return
        now_ms = self.cluster.node.now_ms()
        if self.next_attempt_ms.get(node.id, 0) > now_ms:
            return
        self.next_attempt_ms[node.id] = now_ms + CONNECT_RETRY_MS
        link = Link(node.id)
        self.out_links[node.id] = link
        self.nursery.start_soon(self._outbound, link, node.ip, node.bus_port)

    def drop_link(self, node_id):
        link = self.out_links.pop(node_id, None)
        if link is not None:
            link.close()

    def rename_link(self, old_id, new_id):
        link = self.out_links.pop(old_id, None)
        if link is not None:
            link.node_id = new_id
            stale = self.out_links.pop(new_id, None)
            if stale is not None:
                stale.close()
            self.out_links[new_id] = link

    def flush_soon(self):
        self.flush_needed.set()

    # ----------------------------------------------------------- tasks

    async def flusher(self):
        while True:
            await self.flush_needed.wait()
            self.flush_needed = trio.Event()
            self.cluster.flush()

    async def _outbound(self, link, ip, port):
        timeout_s = self.cluster.node.config.cluster_node_timeout / 1000
        stream = None
        try:
            with trio.move_on_after(max(1.0, timeout_s)):
                stream = await trio.open_tcp_stream(ip, port)
        except OSError:
            stream = None
        if stream is None or link.closed or self.out_links.get(link.node_id) is not link:
            if stream is not None:
                await stream.aclose()
            if self.out_links.get(link.node_id) is link:
                del self.out_links[link.node_id]
            return
        link.stream = stream
        log.verbose(f"Cluster bus link to {link.node_id[:8]} ({ip}:{port}) connected")
        self.cluster.link_up(link.node_id)
        self.after_event()
        await self._run_link(link)
        log.verbose(f"Cluster bus link to {link.node_id[:8]} closed")
        if self.out_links.get(link.node_id) is link:
            del self.out_links[link.node_id]
            self.cluster.link_down(link.node_id)

    async def serve_inbound(self, addresses, port, task_status=trio.TASK_STATUS_IGNORED):
        listeners = []
        for address in addresses:
            listeners.extend(await trio.open_tcp_listeners(port, host=address))
        task_status.started()
        await trio.serve_listeners(self._inbound, listeners)

    async def _inbound(self, stream):
        try:
            peer_ip = stream.socket.getpeername()[0]
            local_ip = stream.socket.getsockname()[0]
        except OSError:
            return
        if self.cluster.local_ip in ("", "0.0.0.0", "::"):
            self.cluster.local_ip = local_ip
            me = self.cluster.membership.myself
            if me.ip in ("", "0.0.0.0", "::"):
                me.ip = local_ip
        link = Link(None, peer_ip)
        link.stream = stream
        await self._run_link(link)

    async def _run_link(self, link):
        async with trio.open_nursery() as nursery:
            link.cancel_scope = nursery.cancel_scope
            if link.closed:
                nursery.cancel_scope.cancel()
            nursery.start_soon(self._writer, link, nursery.cancel_scope)
            try:
                await self._reader(link)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
            except bus.BusError as exc:
                log.warning(f"Bad cluster bus frame from {link.peer_ip or link.node_id}: {exc}")
            except Exception:
                # A frame that passed the codec but tripped a rule: a bug,
                # logged loudly; the link goes, the node stays up.
                log.warning(f"Error handling a cluster bus frame from "
                            f"{link.peer_ip or link.node_id}, link dropped:\n"
                            + traceback.format_exc())
            nursery.cancel_scope.cancel()
        link.closed = True
        with trio.CancelScope(shield=True):
            await link.stream.aclose()

    async def _reader(self, link):
        cluster = self.cluster
        buf = bytearray()
        stream = link.stream
        while not link.closed:
            data = await stream.receive_some(RECV_SIZE)
            if not data:
                return
            buf += data
            pos = 0
            while True:
                length = bus.frame_length(buf, pos)
                if length is None or len(buf) - pos < length:
                    break
                cluster.receive(bytes(buf[pos:pos + length]), link)
                pos += length
            if pos:
                del buf[:pos]
            self.after_event()

    async def _writer(self, link, cancel_scope):
        try:
            while True:
                await link.has_output.wait()
                link.has_output = trio.Event()
                if link.closed:
                    break
                data = b"".join(link.out)
                link.out.clear()
                link.out_bytes = 0
                # A GOTJOB promises the peer a copy: with appendfsync always
                # that copy must be on disk (fsynced) before we say so.
                log = self.cluster.node.log
                mark = log.end
                if log.durable < mark:
                    await log.wait_durable(mark)
                await link.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        link.closed = True
        cancel_scope.cancel()


class ClusterService:
    """What server/main.py starts: the bus, nodes.conf, cluster-join."""

    def __init__(self, node, transport, cluster, config_path):
        self.node = node
        self.transport = transport
        self.cluster = cluster
        self.config_path = config_path
        cluster.save_config = self.save

    async def start(self, nursery):
        config = self.node.config
        try:
            await nursery.start(self.transport.serve_inbound, config.bind, config.bus_port())
        except OSError as exc:
            from ..core.config import ConfigError
            raise ConfigError(f"Could not bind the cluster bus port {config.bus_port()}: "
                              f"{exc.strerror}") from None
        nursery.start_soon(self.transport.flusher)
        await self._greet_peers()
        nursery.start_soon(self._save_loop)
        if config.cluster_join:
            nursery.start_soon(self._join_loop, list(config.cluster_join))

    async def _greet_peers(self):
        """Before we serve clients, let the peers of nodes.conf know we are
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
        most every SAVE_MIN_PERIOD_S, and retry while saving fails."""
        membership = self.cluster.membership
        changed = trio.Event()
        membership.on_dirty = changed.set
        warned_ms = None
        while True:
            with trio.move_on_after(SAVE_RETRY_PERIOD_S):
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


def attach_cluster(node, nursery, after_event):
    """Give ``node`` its cluster: identity from nodes.conf, TCP transport."""
    config = node.config
    transport = TcpTransport(nursery, after_event)
    ip = config.bind_address()
    if ip in ("0.0.0.0", "::"):
        ip = ""
    cluster = Cluster(node, transport, ip, config.port, config.bus_port())
    transport.cluster = cluster
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
            from ..core.config import ConfigError
            raise ConfigError(f"Unrecoverable error: corrupted cluster config file {path}")
        cluster.set_node_id(my_id)
        log.notice(f"Node configuration loaded, I'm {my_id}")
    else:
        log.notice(f"No cluster configuration found, I'm {node.id}")
    try:
        service.save()
    except OSError as exc:
        from ..core.config import ConfigError
        raise ConfigError(f"Could not write the cluster config file {path}: "
                          f"{exc.strerror or exc}") from None
    return service
