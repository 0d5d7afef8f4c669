"""A job's messages go to each of its holders in the same order, and the
outbox sends the next peer the frame it just encoded for the last one when
that peer's batch holds the same messages: each frame must still be the
bytes its own batch encodes to, whatever the peers' batches share."""

import random

from trisque.cluster.cluster import Cluster
from trisque.cluster.membership import ClusterNode
from trisque.cluster.outbox import Transport
from trisque.core.admin.config import Config
from trisque.core.jobs.job import ACTIVE, Job, serialize
from trisque.core.jobs.policy import Policy
from trisque.core.node import Node
from trisque.core.table import COMMANDS
from trisque.protocol import bus, jobcodec


def job_id(n: int) -> bytes:
    return b"D-0123abcd-" + b"%024d" % n + b"-0a0b"


class Recorder(Transport):
    def __init__(self) -> None:
        self.frames: list[tuple[str, bytes]] = []

    def send(self, node_id: str, frame: bytes) -> None:
        self.frames.append((node_id, frame))


def cluster_of_three(policies: tuple[bool, bool] = (True, True)):
    now = 1_700_000_000.0
    node = Node(Config(), "a" * 40, clock=lambda: now, table=COMMANDS, rng=random.Random(1))
    transport = Recorder()
    cluster = Cluster(node, transport, "127.0.0.1", 7711, 17711)
    peers = []
    for i, (letter, policy) in enumerate(zip("bc", policies)):
        peer = ClusterNode(letter * 40, "127.0.0.1", 7712 + i, 17712 + i, node.now_ms())
        peer.link_ok = True
        peer.policies = policy
        cluster.membership.add(peer)
        peers.append(peer)
    return node, cluster, transport, peers


def frames_to(transport: Recorder, node_id: str) -> list[bytes]:
    return [frame for to, frame in transport.frames if to == node_id]


def test_each_peer_gets_its_own_batches_bytes():
    node, cluster, transport, (b, c) = cluster_of_three()
    outbox = cluster.outbox
    header = cluster.membership.header()
    job = Job(job_id(1), b"q", b"body", ACTIVE, 3, 1, 2_000_000_000_000, 0, 0)
    job.nodes_delivered = (node.id, b.id, c.id)
    record = serialize(job, 60_000)

    # the same messages to both, then batches that differ only in their items,
    # their aux, their type, or their count
    outbox.send_to_holders(job, bus.WORKING, lazy=True)
    outbox.send_setacks(job, {node.id})
    outbox.send_jobid(b.id, bus.DELJOB, job_id(2), lazy=True)
    outbox.send_jobid(c.id, bus.DELJOB, job_id(3), lazy=True)
    outbox.send_jobid(b.id, bus.GOTACK, job_id(4), 1, lazy=True)
    outbox.send_jobid(c.id, bus.GOTACK, job_id(4), 0, lazy=True)
    outbox.send_jobid(b.id, bus.QUEUED, job_id(5), lazy=True)
    outbox.send_jobid(c.id, bus.WILLQUEUE, job_id(5), lazy=True)
    outbox.send_jobids(b.id, bus.GOTJOB, [job_id(6)])
    outbox.send_jobids(c.id, bus.GOTJOB, [job_id(6), job_id(7)])
    outbox.send_jobids(b.id, bus.SETACK, [(job_id(6), 2), (job_id(7), 2)])
    outbox.send_jobids(c.id, bus.SETACK, [(job_id(6), 2), (job_id(7), 2)])
    outbox.send_jobids(b.id, bus.DELJOB, [job_id(6), job_id(7)])
    outbox.send_jobids(c.id, bus.DELJOB, [job_id(6), job_id(8)])
    outbox.send_to_all([b.id, c.id], bus.REPLJOB, 0, record)
    outbox.encode()

    assert frames_to(transport, b.id) == [
        bus.jobids(header, bus.WORKING, [job.id]),
        bus.jobids(header, bus.SETACK, [(job.id, 3)]),
        bus.jobids(header, bus.DELJOB, [job_id(2)]),
        bus.jobids(header, bus.GOTACK, [(job_id(4), 1)]),
        bus.jobids(header, bus.QUEUED, [job_id(5)]),
        bus.jobids(header, bus.GOTJOB, [job_id(6)]),
        bus.jobids(header, bus.SETACK, [(job_id(6), 2), (job_id(7), 2)]),
        bus.jobids(header, bus.DELJOB, [job_id(6), job_id(7)]),
        bus.jobs(header, bus.REPLJOB, [record]),
    ]
    assert frames_to(transport, c.id) == [
        bus.jobids(header, bus.WORKING, [job.id]),
        bus.jobids(header, bus.SETACK, [(job.id, 3)]),
        bus.jobids(header, bus.DELJOB, [job_id(3)]),
        bus.jobids(header, bus.GOTACK, [job_id(4)]),
        bus.jobids(header, bus.WILLQUEUE, [job_id(5)]),
        bus.jobids(header, bus.GOTJOB, [job_id(6), job_id(7)]),
        bus.jobids(header, bus.SETACK, [(job_id(6), 2), (job_id(7), 2)]),
        bus.jobids(header, bus.DELJOB, [job_id(6), job_id(8)]),
        bus.jobs(header, bus.REPLJOB, [record]),
    ]
    # every batch emptied and its frame let go once encoded
    for out in outbox.peers.values():
        assert out.used == 0
        assert all(not batch.items and batch.frame == b"" for batch in out.batches)

    # next turn: fewer batches to the first peer than to the second
    transport.frames.clear()
    outbox.send_jobid(b.id, bus.DELJOB, job_id(8))
    outbox.send_jobid(c.id, bus.DELJOB, job_id(8))
    outbox.send_jobid(c.id, bus.GOTACK, job_id(8), 1)
    outbox.encode()
    assert frames_to(transport, b.id) == [bus.jobids(header, bus.DELJOB, [job_id(8)])]
    assert frames_to(transport, c.id) == [bus.jobids(header, bus.DELJOB, [job_id(8)]),
                                          bus.jobids(header, bus.GOTACK, [(job_id(8), 1)])]


def test_a_peer_without_policies_is_not_sent_anothers_records():
    node, cluster, transport, (b, c) = cluster_of_three(policies=(True, False))
    outbox = cluster.outbox
    header = cluster.membership.header()
    job = Job(job_id(1), b"q", b"body", ACTIVE, 3, 1, 2_000_000_000_000, 0, 0)
    job.nodes_delivered = (node.id, b.id, c.id)
    job.policy = Policy(max_deliveries=3)
    record = serialize(job, 60_000)
    assert jobcodec.without_policy(record) != record
    outbox.send_to_all([b.id, c.id], bus.REPLJOB, 0, record)
    outbox.encode()
    assert frames_to(transport, b.id) == [bus.jobs(header, bus.REPLJOB, [record])]
    assert frames_to(transport, c.id) == [
        bus.jobs(header, bus.REPLJOB, [jobcodec.without_policy(record)])]
