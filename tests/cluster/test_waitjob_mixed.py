"""WAITJOB in a mixed cluster (docs/lifecycle.md, "WAITJOB"): only a peer
whose frames carry F_WAITJOB is asked; with an older peer in the cluster,
"nobody holds it" cannot be concluded, so the wait goes on to its
timeout; a peer that answers with the flag ends it.  The real Cluster and
outbox, a transport that keeps the frames, the clock moved by hand."""

from trisque.cluster.cluster import Cluster
from trisque.cluster.membership import ClusterNode
from trisque.cluster.outbox import Transport
from trisque.core.admin.config import Config
from trisque.core.jobs.waits import UNKNOWN
from trisque.core.node import Node
from trisque.core.table import COMMANDS
from trisque.protocol import bus

OLD, NEW = "0" * 40, "1" * 40
JOB_ID = b"D-01234567-0123456789abcdefghijklmn-05a1"


class Recorder(Transport):
    def __init__(self) -> None:
        self.frames: list[tuple[str, bus.Message]] = []

    def send(self, node_id: str, frame: bytes) -> None:
        self.frames.append((node_id, bus.decode(frame)))


def make_cluster(old_peer: bool):
    now = [1_700_000_000.0]
    node = Node(Config(), "f" * 40, clock=lambda: now[0], table=COMMANDS)
    transport = Recorder()
    cluster = Cluster(node, transport, "127.0.0.1", 7711, 17711)
    peers = (OLD, NEW) if old_peer else (NEW,)
    for node_id in peers:
        cluster.membership.nodes[node_id] = ClusterNode(node_id, "127.0.0.1", 7712, 17712, 0)
    cluster.membership.nodes[NEW].waitjob = True
    cluster.membership.update_reachable()
    return node, cluster, transport, now


def waitjob_frames(transport):
    return [(peer, msg.body) for peer, msg in transport.frames if msg.type == bus.WAITJOB]


def test_only_peers_with_f_waitjob_are_asked_and_an_old_one_keeps_the_wait_open():
    node, cluster, transport, now = make_cluster(old_peer=True)
    client = node.add_client()
    node.execute(client, [b"WAITJOB", JOB_ID, b"TIMEOUT", b"5000"])
    cluster.outbox.encode()
    assert client.blocked is not None and client.out == []
    assert waitjob_frames(transport) == [(NEW, [(JOB_ID, 1)])]
    # the new peer holds no copy; the old one cannot say: still waiting
    cluster.waitjobs.on_jobstate(cluster.membership.nodes[NEW], [(JOB_ID, UNKNOWN)])
    assert client.blocked is not None
    # asked again a second later, the new peer only
    now[0] += 1.1
    node.cron()
    cluster.outbox.encode()
    assert [peer for peer, _ in waitjob_frames(transport)] == [NEW, NEW]
    now[0] += 4
    node.run_timers()
    assert client.out == [b"$-1\r\n"]  # the timeout: no copy known
    cluster.outbox.encode()
    assert waitjob_frames(transport)[-1] == (NEW, [(JOB_ID, 0)])  # forget my wait


def test_every_peer_with_the_flag_saying_no_copy_ends_the_wait():
    node, cluster, transport, _ = make_cluster(old_peer=False)
    client = node.add_client()
    node.execute(client, [b"WAITJOB", JOB_ID])
    assert client.blocked is not None
    cluster.waitjobs.on_jobstate(cluster.membership.nodes[NEW], [(JOB_ID, UNKNOWN)])
    assert client.out == [b"$-1\r\n"] and client.blocked is None
    assert not node.waited


def test_a_peer_holding_the_job_keeps_a_watch_and_tells_the_ack():
    node, cluster, transport, _ = make_cluster(old_peer=False)
    client = node.add_client()
    job_id = node.table[b"ADDJOB"].handler(node, client, [b"ADDJOB", b"q", b"x", b"0",
                                                         b"REPLICATE", b"1"])[1:-2]
    asker = cluster.membership.nodes[NEW]
    cluster.waitjobs.on_waitjob(asker, [(job_id, 1)])
    cluster.outbox.encode()
    assert transport.frames[-1][1].type == bus.JOBSTATE
    assert transport.frames[-1][1].body == [(job_id, 2)]  # queued
    assert node.waits.watches() == 1
    node.execute(client, [b"ACKJOB", job_id])
    cluster.outbox.encode()
    assert transport.frames[-1][1].type == bus.JOBSTATE
    assert transport.frames[-1][1].body == [(job_id, 3)]  # acked
    assert node.waits.watches() == 0 and not node.waited
