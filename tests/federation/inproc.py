"""Several node cores with their cluster rules in one process, on a fake
clock, joined by an in-memory bus that records every frame.

No sockets and no gossip: peers are entered in each membership directly,
links up.  ``net.deliver()`` flushes every outbox and hands each frame to
its receiver until nothing moves (as the event loop would, turn by turn);
``net.cron()`` runs the federation's 100 ms cron on every node (and sends
the lazy messages the outbox held, as the cluster's cron does).  Used for
the exact federation rules (backoffs, counts, who answers); the real
processes are in test_federation.py.
"""

import random

import hiredis

from trisque.cluster.cluster import Cluster
from trisque.cluster.outbox import Transport
from trisque.cluster.membership import ClusterNode
from trisque.protocol import bus
from trisque.core.admin.config import Config
from trisque.core.node import Node
from trisque.core.table import COMMANDS

START = 1_700_000_000.0


class WireTransport(Transport):
    """Links always up (nothing to connect); frames go on the net's wire."""

    def __init__(self, net, index):
        self.net = net
        self.index = index
        self.cluster = None

    def send(self, node_id, frame):
        self.net.wire.append((self.index, node_id, frame))

    def flush_soon(self):
        self.net.flush_needed.add(self.index)


class Net:
    def __init__(self, n, seed=1):
        self.now = START
        self.wire = []  # (from index, to id, frame) not yet delivered
        self.log = []  # (ms since START, from index, to index, type, body)
        self.flush_needed = set()
        self.held = {}  # index -> frames kept from a frozen node (hold())
        self.nodes = []
        self.clusters = []
        rng = random.Random(seed)
        ids = ["%040x" % rng.getrandbits(160) for _ in range(n)]
        self.index_of = {node_id: i for i, node_id in enumerate(ids)}
        for i, node_id in enumerate(ids):
            node = self.make_node(i, node_id, seed)
            transport = WireTransport(self, i)
            cluster = Cluster(node, transport, "127.0.0.1", 7711 + i, 17711 + i)
            transport.cluster = cluster
            for j, peer_id in enumerate(ids):
                if j != i:
                    peer = ClusterNode(peer_id, "127.0.0.1", 7711 + j, 17711 + j,
                                       node.now_ms())
                    peer.link_ok = True
                    cluster.membership.add(peer)
            self.nodes.append(node)
            self.clusters.append(cluster)
        self.clients = [node.add_client("127.0.0.1:1") for node in self.nodes]
        for c in self.clients:
            c.proto = 2

    def make_node(self, i, node_id, seed):
        """Node ``i``'s core, on the net's clock, with an RNG of its own."""
        return Node(Config(), node_id, clock=lambda: self.now, table=COMMANDS,
                    rng=random.Random(seed + i))

    # ------------------------------------------------------------ time

    def ms(self):
        return round((self.now - START) * 1000)

    def advance(self, ms, cron=True, running=None):
        """Move time in 100 ms cron ticks (and the rest), running timers,
        the federation cron and the bus.  Only the nodes whose indexes are
        in ``running`` (default: all) run their timers."""
        while ms > 0:
            step = min(100, ms)
            self.now += step / 1000
            ms -= step
            for i, node in enumerate(self.nodes):
                if running is None or i in running:
                    node.run_timers()
            if cron and step == 100:
                self.cron()
            self.deliver()

    def cron(self):
        for cluster in self.clusters:
            cluster.federation.cron(cluster.node.now_ms())
            cluster.replication.cron()
            cluster.outbox.flush_held()  # (the cron's: lazy messages, outbox.py)
        self.deliver()

    # ------------------------------------------------------------- bus

    def deliver(self, drop=False):
        while True:
            for i in sorted(self.flush_needed):
                self.flush_needed.discard(i)
                self.clusters[i].flush()
            if not self.wire:
                if not self.flush_needed:
                    return
                continue
            wire, self.wire = self.wire, []
            for src, dst_id, frame in wire:
                dst = self.index_of[dst_id]
                self.carried(src, dst, frame)
                if dst in self.held:
                    self.held[dst].append(frame)
                elif not drop:
                    self.clusters[dst].receive(frame, None)

    def hold(self, i):
        """Node ``i`` receives nothing until release(i): the frames for it
        collect in the list returned, for the test to hand over."""
        return self.held.setdefault(i, [])

    def release(self, i):
        self.held.pop(i, None)

    def carried(self, src, dst, frame):
        """Every frame on its way, before its receiver gets it: logged."""
        msg = bus.decode(frame)
        self.log.append((self.ms(), src, dst, bus.NAMES[msg.type], msg.body))

    def sent(self, type_name, src=None, dst=None, since=0):
        return [e for e in self.log if e[3] == type_name and e[0] >= since
                and (src is None or e[1] == src) and (dst is None or e[2] == dst)]

    # ---------------------------------------------------------- clients

    def run(self, i, *args, client=None):
        """One command on node i; returns its decoded reply, or None if it
        blocked."""
        client = client or self.clients[i]
        client.out.clear()
        self.nodes[i].execute(client, [a if isinstance(a, bytes) else str(a).encode()
                                       for a in args])
        reply = self.take(client)
        self.deliver()
        return reply

    @staticmethod
    def take(client):
        if not client.out:
            return None
        reader = hiredis.Reader()
        reader.feed(b"".join(client.out))
        client.out.clear()
        return reader.gets()

    @staticmethod
    def take_all(client):
        """Every reply ``client`` was sent so far, decoded (and taken)."""
        reader = hiredis.Reader()
        reader.feed(b"".join(client.out))
        client.out.clear()
        replies = []
        while (reply := reader.gets()) is not False:
            replies.append(reply)
        return replies

    def new_client(self, i):
        client = self.nodes[i].add_client("127.0.0.1:2")
        client.proto = 2
        return client

    def qstat(self, i, queue):
        return self._fields(self.run(i, "QSTAT", queue))

    def show(self, i, job_id):
        return self._fields(self.run(i, "SHOW", job_id))

    @staticmethod
    def _fields(reply):
        """A name/value array as a dict (None for a nil reply)."""
        return None if reply is None else {
            k.decode(): v for k, v in zip(reply[::2], reply[1::2])}

    def check(self):
        for node in self.nodes:
            node.check_invariants()
