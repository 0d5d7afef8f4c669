"""A lazy message waits for the next message to its peer that is not
lazy, or for the cron tick's flush_held: a turn's encode sends only the
peers with a message that is not lazy, and asks the transport for one
flush a turn, at the first such message."""

import random

from trisque.cluster.cluster import Cluster
from trisque.cluster.membership import ClusterNode
from trisque.cluster.outbox import Transport
from trisque.core.admin.config import Config
from trisque.core.node import Node
from trisque.core.table import COMMANDS
from trisque.protocol import bus


def job_id(n: int) -> bytes:
    return b"D-0123abcd-" + b"%024d" % n + b"-0a0b"


class Recorder(Transport):
    def __init__(self) -> None:
        self.frames: list[tuple[str, bytes]] = []
        self.flushes_asked = 0

    def send(self, node_id: str, frame: bytes) -> None:
        self.frames.append((node_id, frame))

    def flush_soon(self) -> None:
        self.flushes_asked += 1


def cluster_of_three():
    now = 1_700_000_000.0
    node = Node(Config(), "a" * 40, clock=lambda: now, table=COMMANDS, rng=random.Random(1))
    transport = Recorder()
    cluster = Cluster(node, transport, "127.0.0.1", 7711, 17711)
    peers = []
    for i, letter in enumerate("bc"):
        peer = ClusterNode(letter * 40, "127.0.0.1", 7712 + i, 17712 + i, node.now_ms())
        peer.link_ok = True
        cluster.membership.add(peer)
        peers.append(peer)
    return cluster, transport, peers


def test_lazy_messages_wait_for_their_peers_next_one():
    cluster, transport, (b, c) = cluster_of_three()
    outbox = cluster.outbox
    header = cluster.membership.header()

    outbox.send_jobid(b.id, bus.WORKING, job_id(1), lazy=True)
    outbox.send_jobid(c.id, bus.DELJOB, job_id(2), lazy=True)
    assert transport.flushes_asked == 0  # nobody waits on these
    outbox.encode()
    assert transport.frames == []

    outbox.send_jobids(c.id, bus.GOTJOB, [job_id(3)])  # c's turn ends with both
    outbox.send_jobid(b.id, bus.SETACK, job_id(4), 3, lazy=True)
    assert transport.flushes_asked == 1
    outbox.encode()
    assert transport.frames == [
        (c.id, bus.jobids(header, bus.DELJOB, [job_id(2)])),
        (c.id, bus.jobids(header, bus.GOTJOB, [job_id(3)])),
    ]

    # b's lazy ones still held, then a message to it that is not lazy
    outbox.encode()
    assert len(transport.frames) == 2
    outbox.send_jobids(b.id, bus.GOTJOB, [job_id(5)])
    outbox.send_jobids(c.id, bus.GOTJOB, [job_id(6)])
    assert transport.flushes_asked == 2  # one a turn
    outbox.encode()
    assert transport.frames[2:] == [
        (b.id, bus.jobids(header, bus.WORKING, [job_id(1)])),
        (b.id, bus.jobids(header, bus.SETACK, [(job_id(4), 3)])),
        (b.id, bus.jobids(header, bus.GOTJOB, [job_id(5)])),
        (c.id, bus.jobids(header, bus.GOTJOB, [job_id(6)])),
    ]


def test_the_cron_tick_sends_what_is_held():
    cluster, transport, (b, c) = cluster_of_three()
    outbox = cluster.outbox
    header = cluster.membership.header()
    outbox.send_jobid(b.id, bus.WORKING, job_id(1), lazy=True)
    outbox.send_jobids(c.id, bus.GOTJOB, [job_id(2)])
    outbox.encode()
    assert [to for to, _ in transport.frames] == [c.id]
    outbox.flush_held()
    assert transport.frames[1:] == [(b.id, bus.jobids(header, bus.WORKING, [job_id(1)]))]
    outbox.flush_held()  # nothing left
    assert len(transport.frames) == 2
    # and a later turn starts afresh: its first message that is not lazy asks
    outbox.send_jobids(b.id, bus.GOTJOB, [job_id(3)])
    assert transport.flushes_asked == 2
    outbox.encode()
    assert transport.frames[2:] == [(b.id, bus.jobids(header, bus.GOTJOB, [job_id(3)]))]


def test_the_header_follows_our_id_and_flags():
    cluster, transport, (b, _c) = cluster_of_three()
    membership = cluster.membership
    first = membership.header()
    assert membership.header() is first  # kept while nothing changes
    membership.myself.leaving = True
    leaving = membership.header()
    assert leaving is not first and leaving.flags & bus.F_LEAVING
    membership.myself.leaving = False
    membership.reset("d" * 40)  # a new ID (CLUSTER RESET HARD)
    renamed = membership.header()
    assert renamed.node_id == b"d" * 40
    assert membership.header() is renamed


def test_a_peer_sent_to_last_turn_holds_its_lazy_ones_this_turn():
    cluster, transport, (b, c) = cluster_of_three()
    outbox = cluster.outbox
    header = cluster.membership.header()
    outbox.send_jobids(c.id, bus.GOTJOB, [job_id(1)])
    outbox.encode()
    outbox.send_jobid(c.id, bus.DELJOB, job_id(2), lazy=True)  # lazy alone, this time
    outbox.send_jobids(b.id, bus.GOTJOB, [job_id(3)])
    outbox.encode()
    assert transport.frames == [
        (c.id, bus.jobids(header, bus.GOTJOB, [job_id(1)])),
        (b.id, bus.jobids(header, bus.GOTJOB, [job_id(3)])),
    ]
    outbox.flush_held()
    assert transport.frames[2:] == [(c.id, bus.jobids(header, bus.DELJOB, [job_id(2)]))]
