"""Who is in the cluster, and who is alive: MEET, gossip, failure detection.

Rules (after Disque's cluster.c, in our words):

- CLUSTER MEET ip port adds a *handshake* node with a made-up ID and sends
  it MEET.  A node receiving MEET from a stranger adds it.  Any PING or
  MEET is answered with PONG on the same link; the PONG carries the real ID,
  which replaces the made-up one.
- Every PING/PONG/MEET carries a few gossip entries about other nodes
  (max(3, n/10), PFAIL/FAIL nodes first).  A node learns strangers from
  gossip of known nodes, so a chain of MEETs becomes a full mesh.
- A node whose PING went unanswered for node-timeout is PFAIL.  Gossip
  entries flagging it PFAIL/FAIL are failure reports (valid 2 x timeout);
  PFAIL plus reports from a majority (myself included) makes it FAIL, which
  is broadcast.  Any PONG from it clears both.
- Reachable nodes (for replication) are the others not in handshake,
  PFAIL, FAIL or leaving.
- The node ID and the known peers persist in ``cluster-config-file`` so a
  restarted node comes back as itself, knowing its peers.
- Addresses move (Redis's rules): a node comes back with a new address
  (a container's new IP, even all of the cluster at once), and is found
  there when its PING or MEET arrives from it, when it answers our MEET
  there, or when a peer that reaches it gossips that address while we
  cannot reach it.  A node bound to every interface learns its own address
  from the local end of its bus connections.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol import bus
from ..core.node import Node

if TYPE_CHECKING:  # (outbox.py imports this module)
    from .outbox import Transport

HANDSHAKE_MIN_MS = 1000
FORGET_BAN_MS = 60000
FAIL_REPORT_VALIDITY_MULT = 2


class ClusterNode:
    __slots__ = ("id", "ip", "port", "bus_port", "myself", "handshake",
                 "pfail", "fail", "leaving", "noaddr", "ping_sent_ms",
                 "pong_received_ms", "ctime_ms", "fail_reports", "link_ok",
                 "meet_pending", "link_since_ms", "ping_received_ms", "reads_publish",
                 "policies", "waitjob", "schedules")
    id: str
    ip: str
    port: int
    bus_port: int
    myself: bool
    handshake: bool
    pfail: bool
    fail: bool
    leaving: bool
    noaddr: bool
    ping_sent_ms: int
    pong_received_ms: int
    ctime_ms: int
    fail_reports: dict[str, int]
    link_ok: bool
    meet_pending: bool
    link_since_ms: int
    ping_received_ms: int
    reads_publish: bool
    policies: bool
    waitjob: bool
    schedules: bool

    def __init__(self, node_id: str, ip: str, port: int, bus_port: int, now_ms: int) -> None:
        self.id = node_id
        self.ip = ip
        self.port = port
        self.bus_port = bus_port
        self.myself = False
        self.handshake = False
        self.pfail = False
        self.fail = False
        self.leaving = False
        self.noaddr = False
        self.ping_sent_ms = 0  # 0: no PING waiting for its PONG
        self.pong_received_ms = 0
        self.ctime_ms = now_ms
        self.fail_reports = {}  # reporter id -> ms of the report
        self.link_ok = False  # our outgoing link to it is connected
        # Its frames say F_POLICIES (bus.py); until its first frame, taken to
        # (after a restart, copies sent before it spoke lost their limit;
        # an older node drops the link once, and gets them plain after).
        self.policies = True
        self.waitjob = False  # its frames say F_WAITJOB: it answers WAITJOB
        self.schedules = False  # its frames say F_SCHEDULES: it gets schedules
        self.meet_pending = False  # send MEET, not PING, on the next link
        self.link_since_ms = 0
        self.ping_received_ms = 0  # its last PING or MEET to us
        # its frames carry F_PUBSUB: it may be sent PUBLISH (an older node
        # would drop the link on a type it does not know)
        self.reads_publish = False

    def flag_names(self) -> str:
        names = []
        if self.myself:
            names.append("myself")
        if self.pfail:
            names.append("fail?")
        if self.fail:
            names.append("fail")
        if self.handshake:
            names.append("handshake")
        if self.noaddr:
            names.append("noaddr")
        if self.leaving:
            names.append("leaving")
        return ",".join(names) or "noflags"

    def wire_flags(self) -> int:
        return ((bus.F_LEAVING if self.leaving else 0) | (bus.F_PFAIL if self.pfail else 0)
                | (bus.F_FAIL if self.fail else 0) | (bus.F_NOADDR if self.noaddr else 0))

    def reachable(self) -> bool:
        return not (self.myself or self.handshake or self.pfail or self.fail
                    or self.leaving or self.noaddr)

    def address(self) -> str:
        addr = f"{self.ip}:{self.port}"
        if self.bus_port != self.port + 10000:
            addr += f"@{self.bus_port}"
        return addr


class Membership:
    """The node table and the gossip/failure-detection rules."""

    def __init__(self, node: Node, transport: "Transport", ip: str, port: int,
                 bus_port: int) -> None:
        self.node = node
        self.transport = transport
        self.local_ip = ip  # the bus's address; the transport learns it when bound to any
        myself_id = node.id
        me = ClusterNode(myself_id, ip, port, bus_port, node.now_ms())
        me.myself = True
        me.link_ok = True
        self.myself = me
        self.nodes = {myself_id: me}
        self.banned: dict[str, int] = {}  # forgotten node id -> ms until it may come back
        self.cron_runs = 0
        self.reachable: list[ClusterNode] = []  # cached list of reachable other nodes
        # Counts the node table's changes: what caches a look-up in it
        # (outbox.PeerOut, Cluster._job_sender) looks again when it moves.
        self.version = 0
        self._size = 1
        self.messages_sent = 0
        self.messages_received = 0
        self._dirty = False
        self._header: bus.Header | None = None
        self._header_id = ""  # the myself ID _header was made for
        self.on_dirty: Callable[[], object] | None = None  # shell hook: save nodes.conf soon

    @property
    def dirty(self) -> bool:
        """nodes.conf no longer matches the node table."""
        return self._dirty

    @dirty.setter
    def dirty(self, value: bool) -> None:
        self._dirty = value
        if value and self.on_dirty is not None:
            self.on_dirty()

    # --------------------------------------------------------- queries

    def header(self) -> bus.Header:
        """Every frame's header: who I am and my flags, as of now."""
        me = self.myself
        # (in headers only, not gossip)
        flags = (me.wire_flags() | bus.F_PUBSUB | bus.F_POLICIES | bus.F_WAITJOB
                 | bus.F_SCHEDULES)
        header = self._header
        # (the ID compared by identity: its str is replaced when it changes,
        # and encoding it to compare made and freed a bytes each frame)
        if header is None or header.flags != flags or me.id is not self._header_id:
            header = self._header = bus.Header(me.id, me.port, me.bus_port, flags)
            self._header_id = me.id
        return header

    def size(self) -> int:
        """Known nodes but handshakes, myself and failed ones included."""
        return self._size

    def update_reachable(self) -> None:
        """Recompute what depends on the node table; every change to it
        (add, delete, rename, flags) ends here."""
        self.version += 1
        self.reachable = [n for n in self.nodes.values() if n.reachable()]
        self._size = sum(1 for n in self.nodes.values() if not n.handshake)
        node = self.node  # what the core's hot paths read
        node.cluster_size = self._size
        node.leaving = self.myself.leaving

    def others(self) -> list[ClusterNode]:
        return [n for n in self.nodes.values() if not n.myself]

    def priority(self, node: ClusterNode) -> int:
        """HELLO's priority: 1 ok, 5 no link, 10 PFAIL, 100 FAIL or leaving."""
        if node.fail or node.leaving:
            return 100
        if node.pfail:
            return 10
        if not node.myself and not node.link_ok:
            return 5
        return 1

    # --------------------------------------------------------- changes

    def add(self, node: ClusterNode) -> None:
        self.nodes[node.id] = node
        self.dirty = True
        self.update_reachable()

    def delete(self, node: ClusterNode) -> None:
        if self.nodes.get(node.id) is node:
            del self.nodes[node.id]
        self.transport.drop_link(node.id)
        for other in self.nodes.values():
            other.fail_reports.pop(node.id, None)
        self.dirty = True
        self.update_reachable()

    def rename(self, node: ClusterNode, new_id: str) -> None:
        """A handshake node told us its real ID."""
        self.transport.rename_link(node.id, new_id)
        del self.nodes[node.id]
        node.id = new_id
        node.handshake = False
        self.nodes[new_id] = node
        self.dirty = True
        self.update_reachable()

    def meet(self, ip: str, port: int, bus_port: int, now_ms: int) -> None:
        """CLUSTER MEET: start a handshake with ip:port."""
        for node in self.nodes.values():
            if node.handshake and node.ip == ip and node.bus_port == bus_port:
                return  # already meeting it
        made_up_id = self.node.random_bytes(20).hex()
        node = ClusterNode(made_up_id, ip, port, bus_port, now_ms)
        node.handshake = True
        node.meet_pending = True
        self.add(node)

    def forget(self, node: ClusterNode, now_ms: int) -> None:
        self.banned[node.id] = now_ms + FORGET_BAN_MS
        self.delete(node)

    def reset(self, new_id: str | None = None) -> None:
        for node in self.others():
            self.delete(node)
        self.banned.clear()
        if new_id is not None:
            me = self.myself
            del self.nodes[me.id]
            me.id = new_id
            self.nodes[new_id] = me
        self.dirty = True
        self.update_reachable()

    # --------------------------------------------------------- messages

    def gossip_entries(self, receiver_id: str) -> list[bus.GossipEntry]:
        """A few nodes to tell ``receiver_id`` about, failing ones first."""
        candidates = [n for n in self.nodes.values()
                      if not n.myself and not n.handshake and n.id != receiver_id]
        wanted = max(3, len(self.nodes) // 10)
        wanted = min(wanted, len(candidates))
        rng = self.node.random
        failing = [n for n in candidates if n.pfail or n.fail]
        rest = [n for n in candidates if not (n.pfail or n.fail)]
        rng.shuffle(rest)
        chosen = (failing + rest)[:wanted]
        now_ms = self.node.now_ms()
        me = self.myself
        entries: list[bus.GossipEntry] = [
            (me.id, me.wire_flags(), me.ip, me.port, me.bus_port, 0)]
        for n in chosen:
            age = (now_ms - n.pong_received_ms) // 1000 if n.pong_received_ms else 0xFFFFFFFF
            entries.append((n.id, n.wire_flags(), n.ip, n.port, n.bus_port, age))
        return entries

    def send_ping(self, node: ClusterNode, type_: int = bus.PING) -> None:
        now_ms = self.node.now_ms()
        if type_ == bus.PING or type_ == bus.MEET:
            if node.ping_sent_ms == 0:
                node.ping_sent_ms = now_ms
        frame = bus.gossip(self.header(), type_, self.gossip_entries(node.id))
        self.transport.send(node.id, frame)
        self.messages_sent += 1

    def on_gossip_message(self, msg: bus.Message, link: Any) -> None:
        """PING, PONG or MEET arrived on ``link`` (which can answer with
        ``link.send(frame)``; ``link.peer_ip`` is where it came from, and
        ``link.node_id`` the node an outgoing link was opened to)."""
        peer_ip = link.peer_ip
        now_ms = self.node.now_ms()
        sender = self.nodes.get(msg.sender)
        self.messages_received += 1
        if msg.sender == self.myself.id:
            return
        if msg.type == bus.MEET and sender is None and msg.sender not in self.banned:
            # Rule: a MEET from a stranger adds it.
            ip = _sender_ip(msg, peer_ip)
            sender = ClusterNode(msg.sender, ip, msg.port, msg.bus_port, now_ms)
            self.add(sender)
            if self.myself.ip in ("", "0.0.0.0") and peer_ip:
                self.myself.ip = self.local_ip or self.myself.ip
        if msg.type in (bus.PING, bus.MEET):
            # Rule: answer any PING or MEET with PONG on the same link.
            link.send(bus.gossip(self.header(), bus.PONG, self.gossip_entries(msg.sender)))
            self.messages_sent += 1
            if sender is not None:
                sender.ping_received_ms = now_ms
        if msg.type == bus.PONG:
            link_node = self.nodes.get(link.node_id) if link.node_id else None
            if link_node is not None and link_node.handshake:
                existing = self.nodes.get(msg.sender)
                if existing is not None and existing is not link_node:
                    self.delete(link_node)  # we knew it under its real ID
                    sender = existing
                    if (existing.ip, existing.port) != (link_node.ip, link_node.port):
                        # Rule: it answered where we met it: it lives there now
                        # (restarted elsewhere, as all of a cluster may be).
                        existing.ip, existing.port = link_node.ip, link_node.port
                        existing.bus_port = link_node.bus_port
                        self.transport.drop_link(existing.id)
                        self.dirty = True
                else:
                    self.rename(link_node, msg.sender)
                    sender = link_node
            if sender is not None:
                sender.pong_received_ms = now_ms
                sender.ping_sent_ms = 0
                if sender.pfail or sender.fail:
                    sender.pfail = sender.fail = False
                    sender.fail_reports.clear()
                    self.dirty = True
                    self.update_reachable()
        if sender is None:
            return
        if not sender.link_ok and not sender.handshake:
            # It talks to us but our link to it is down (it restarted, say):
            # reconnect now rather than at the next cron tick, so the PONG
            # that clears its PFAIL/FAIL comes as soon as possible.
            self.transport.ensure_link(sender)
        # The sender's header tells us about the sender itself.
        sender.reads_publish = bool(msg.sender_flags & bus.F_PUBSUB)
        sender.waitjob = bool(msg.sender_flags & bus.F_WAITJOB)
        leaving = bool(msg.sender_flags & bus.F_LEAVING)
        if sender.leaving != leaving:
            sender.leaving = leaving
            self.dirty = True
            self.update_reachable()
        # Rule: a PING or MEET comes on a link its sender opened, from where
        # it is now: a node restarted elsewhere (a container's new IP, a
        # new port) is found there, and our link to its old address dropped.
        moved_ip = (msg.type != bus.PONG and peer_ip and not link.node_id
                    and sender.ip != peer_ip)
        if moved_ip or (msg.port and (sender.port != msg.port
                                      or sender.bus_port != msg.bus_port)):
            if msg.port:
                sender.port, sender.bus_port = msg.port, msg.bus_port
            if peer_ip:
                sender.ip = peer_ip
            self.transport.drop_link(sender.id)
            self.dirty = True
        self._process_gossip(sender, msg.body, now_ms)

    def _process_gossip(self, sender: ClusterNode, entries: list[bus.GossipEntry],
                        now_ms: int) -> None:
        for node_id, flags, ip, port, bus_port, _age in entries:
            if node_id == sender.id:
                continue
            node = self.nodes.get(node_id)
            if node is not None:
                if node.myself:
                    continue
                # Rule: a gossip entry flagging a node failing is a report.
                if flags & (bus.F_PFAIL | bus.F_FAIL):
                    node.fail_reports[sender.id] = now_ms
                    self.maybe_mark_failed(node, now_ms)
                else:
                    node.fail_reports.pop(sender.id, None)
                    # Rule (as Redis): we cannot reach it, the sender can,
                    # at another address: it moved there (all of a cluster
                    # restarted with new addresses, say).
                    if (ip and port and not node.link_ok and not node.handshake
                            and (node.ip, node.port) != (ip, port)):
                        node.ip, node.port, node.bus_port = ip, port, bus_port
                        self.transport.drop_link(node.id)
                        self.dirty = True
                continue
            if node_id in self.banned or flags & bus.F_NOADDR or not port:
                continue
            # Rule: learn strangers from the gossip of known nodes.
            node = ClusterNode(node_id, ip or sender.ip, port, bus_port, now_ms)
            node.leaving = bool(flags & bus.F_LEAVING)
            self.add(node)

    def link_up(self, node: ClusterNode, now_ms: int) -> None:
        """Our link to ``node`` connected: greet it at once."""
        node.link_ok = True
        node.link_since_ms = now_ms
        if node.meet_pending:
            node.meet_pending = False
            self.send_ping(node, bus.MEET)
        else:
            self.send_ping(node)

    def link_down(self, node: ClusterNode) -> None:
        node.link_ok = False
        node.reads_publish = False  # (it may come back as an older version)

    def on_fail(self, msg: bus.Message) -> None:
        node = self.nodes.get(msg.body)
        if node is None or node.myself or node.fail:
            return
        if self.nodes.get(msg.sender) is None:
            return
        node.pfail = False  # FAIL replaces the suspicion, as in Disque
        node.fail = True
        self.dirty = True
        self.update_reachable()

    # ------------------------------------------------------------- cron

    def cron(self, now_ms: int) -> None:
        """Every 100 ms: links, pings, failure detection, handshake expiry."""
        transport = self.transport
        timeout = self.node.config.cluster_node_timeout
        self.cron_runs += 1
        if self.banned:  # (the list copy only when there is one)
            for ban_id, until in list(self.banned.items()):
                if until <= now_ms:
                    del self.banned[ban_id]
        others = self.others()
        deleted = False
        for node in others:
            if node.handshake and now_ms - node.ctime_ms > max(timeout, HANDSHAKE_MIN_MS):
                self.delete(node)
                deleted = True
                continue
            transport.ensure_link(node)
        if deleted:
            others = self.others()
        # Every 10th run, ping the stalest of five random nodes.
        if self.cron_runs % 10 == 0:
            candidates = [n for n in others
                          if n.link_ok and not n.handshake and n.ping_sent_ms == 0]
            if candidates:
                # (five or fewer are all sampled: Random.sample, interpreted,
                # cost the pinging tick ~12k instructions to shuffle them)
                if len(candidates) > 5:
                    candidates = self.node.random.sample(candidates, 5)
                stalest = candidates[0]
                for n in candidates:
                    if n.pong_received_ms < stalest.pong_received_ms:
                        stalest = n
                self.send_ping(stalest)
        changed = False
        for node in others:
            if node.handshake:
                continue
            if (node.link_ok and node.ping_sent_ms == 0
                    and now_ms - node.pong_received_ms > timeout // 2):
                self.send_ping(node)
            waited = now_ms - node.ping_sent_ms if node.ping_sent_ms else 0
            if (node.ping_sent_ms and waited > timeout // 2
                    and node.link_ok and now_ms - node.link_since_ms > timeout):
                transport.drop_link(node.id)  # maybe a stuck link: reconnect
                node.link_ok = False
            if not node.link_ok and node.ping_sent_ms == 0:
                node.ping_sent_ms = now_ms  # waiting for a link counts too
            if (node.ping_sent_ms and waited > timeout
                    and not node.pfail and not node.fail):
                node.pfail = True
                changed = True
            if node.pfail:
                self.maybe_mark_failed(node, now_ms)
        if changed:
            self.update_reachable()

    def maybe_mark_failed(self, node: ClusterNode, now_ms: int) -> None:
        """Rule: PFAIL (as seen by me) + a majority of reports => FAIL."""
        if not node.pfail or node.fail:
            return
        validity = self.node.config.cluster_node_timeout * FAIL_REPORT_VALIDITY_MULT
        for reporter, at in list(node.fail_reports.items()):
            if now_ms - at > validity or reporter not in self.nodes:
                del node.fail_reports[reporter]
        needed = self.size() // 2 + 1
        if len(node.fail_reports) + 1 >= needed:
            node.pfail = False  # CLUSTER NODES shows "fail", not "fail?,fail"
            node.fail = True
            self.dirty = True
            self.update_reachable()
            frame = bus.fail(self.header(), node.id)
            for other in self.others():
                if other.link_ok and not other.handshake:
                    self.transport.send(other.id, frame)

    # --------------------------------------------------------- describe

    def nodes_lines(self, for_config: bool = False) -> list[str]:
        lines = []
        for node in self.nodes.values():
            if for_config and node.handshake:
                continue
            link = "connected" if node.myself or node.link_ok else "disconnected"
            lines.append(f"{node.id} {node.address()} {node.flag_names()} "
                         f"{node.ping_sent_ms} {node.pong_received_ms} {link}")
        return lines

    def config_text(self) -> str:
        return "\n".join(self.nodes_lines(for_config=True)) + "\n"

    def load_config_text(self, text: str, now_ms: int) -> str | None:
        """Restore myself and the peers from nodes.conf."""
        me = None
        for line in text.splitlines():
            parts = line.split()
            if len(parts) < 3 or len(parts[0]) != 40:
                continue
            node_id, addr, flags = parts[0], parts[1], parts[2].split(",")
            ip, _, ports = addr.rpartition(":")
            port_text, _, bus_text = ports.partition("@")
            try:
                port = int(port_text)
            except ValueError:
                continue
            bus_port = int(bus_text) if bus_text else port + 10000
            if "myself" in flags:
                me = node_id
                # CLUSTER LEAVING yes survives a restart, as in Disque.
                self.myself.leaving = "leaving" in flags
                continue
            if "handshake" in flags:
                continue
            node = ClusterNode(node_id, ip, port, bus_port, now_ms)
            node.leaving = "leaving" in flags
            node.fail = "fail" in flags
            self.nodes[node_id] = node
        if me is not None:
            old = self.myself.id
            del self.nodes[old]
            self.myself.id = me
            self.nodes[me] = self.myself
        self.update_reachable()
        return me


def _sender_ip(msg: bus.Message, peer_ip: str) -> str:
    return peer_ip or "127.0.0.1"
