"""The outbox keeps each peer's batches from turn to turn (PeerOut), but
not for a node the membership no longer knows: a cluster whose nodes
restart with new IDs would otherwise keep one for every ID it ever saw."""

import random

from trisque.cluster.cluster import Cluster
from trisque.cluster.membership import ClusterNode
from trisque.cluster.outbox import Transport
from trisque.core.admin.config import Config
from trisque.core.node import Node
from trisque.core.table import COMMANDS
from trisque.protocol import bus

JOB_ID = b"D-0123abcd-" + b"A" * 24 + b"-0a0b"


class Recorder(Transport):
    def __init__(self) -> None:
        self.frames: list[tuple[str, bytes]] = []

    def send(self, node_id: str, frame: bytes) -> None:
        self.frames.append((node_id, frame))


def test_a_forgotten_peer_keeps_no_batches():
    now = 1_700_000_000.0
    node = Node(Config(), "a" * 40, clock=lambda: now, table=COMMANDS, rng=random.Random(1))
    transport = Recorder()
    cluster = Cluster(node, transport, "127.0.0.1", 7711, 17711)
    peer = ClusterNode("b" * 40, "127.0.0.1", 7712, 17712, node.now_ms())
    peer.link_ok = True
    cluster.membership.add(peer)
    outbox = cluster.outbox

    outbox.send_jobid(peer.id, bus.DELJOB, JOB_ID)
    outbox.encode()
    assert [to for to, _ in transport.frames] == [peer.id]
    assert peer.id in outbox.peers  # known: kept for its next turn

    cluster.membership.forget(peer, node.now_ms())
    outbox.send_jobid(peer.id, bus.DELJOB, JOB_ID)
    outbox.encode()
    assert len(transport.frames) == 2  # handed to the transport, which drops it
    assert peer.id not in outbox.peers
    assert not outbox.pending

    # the same ID back (a meet after the ban): a new PeerOut, frames as before
    cluster.membership.add(peer)
    outbox.send_jobid(peer.id, bus.DELJOB, JOB_ID)
    outbox.encode()
    assert transport.frames[2] == transport.frames[0]
    assert peer.id in outbox.peers
