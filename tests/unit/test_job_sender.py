"""A node acts on a job's frames only from a peer its node table knows
(and not in handshake): Cluster keeps the last senders it found, which must
not outlive the table's changes (a peer forgotten, met again, or in
handshake) nor mix up senders that take turns."""

import random

from trisque.cluster.cluster import Cluster
from trisque.cluster.membership import ClusterNode
from trisque.cluster.outbox import Transport
from trisque.core.admin.config import Config
from trisque.core.node import Node
from trisque.core.table import COMMANDS
from trisque.protocol import bus

JOB_ID = b"D-0123abcd-" + b"A" * 24 + b"-0a0b"
NOW = 1_700_000_000.0


def make_cluster(letter: str) -> Cluster:
    node = Node(Config(), letter * 40, clock=lambda: NOW, table=COMMANDS,
                rng=random.Random(1))
    return Cluster(node, Transport(), "127.0.0.1", 7711, 17711)


def peer_of(cluster: Cluster, node_id: str) -> ClusterNode:
    peer = ClusterNode(node_id, "127.0.0.1", 7712, 17712, cluster.node.now_ms())
    peer.link_ok = True
    return peer


def working_from(sender: Cluster) -> bytes:
    """A WORKING frame about JOB_ID, as ``sender`` sends it."""
    return bus.jobids(sender.membership.header(), bus.WORKING, [JOB_ID])


def counted(cluster: Cluster, frame: bytes) -> int:
    """How many job frames ``cluster`` took from a known peer for ``frame``."""
    before = cluster.membership.messages_received
    cluster.receive(frame, None)
    return cluster.membership.messages_received - before


def test_senders_in_turn_each_found():
    a = make_cluster("a")
    senders = [make_cluster(letter) for letter in "bcd"]
    for s in senders:
        a.membership.add(peer_of(a, s.node.id))
    frames = [working_from(s) for s in senders]
    # two in turn (the cached pair), then a third that pushes one out
    for frame in frames[:2] * 3 + frames + frames[::-1]:
        assert counted(a, frame) == 1


def test_a_forgotten_sender_is_not_heard_then_is_again_once_met():
    a, b, c = make_cluster("a"), make_cluster("b"), make_cluster("c")
    peer_b = peer_of(a, b.node.id)
    a.membership.add(peer_b)
    a.membership.add(peer_of(a, c.node.id))
    from_b, from_c = working_from(b), working_from(c)
    assert counted(a, from_b) == 1 and counted(a, from_c) == 1

    a.membership.forget(peer_b, a.node.now_ms())
    assert counted(a, from_b) == 0
    assert counted(a, from_c) == 1

    peer_b2 = peer_of(a, b.node.id)  # met again: a new entry under the same ID
    a.membership.add(peer_b2)
    assert counted(a, from_b) == 1
    peer_b2.handshake = True  # read as it is now, not as when cached
    assert counted(a, from_b) == 0


def test_myself_and_strangers_are_not_heard():
    a, b = make_cluster("a"), make_cluster("b")
    assert counted(a, working_from(b)) == 0  # not in the table
    assert counted(a, working_from(a)) == 0  # our own ID
    a.membership.add(peer_of(a, b.node.id))
    assert counted(a, working_from(b)) == 1
    assert counted(a, working_from(a)) == 0
