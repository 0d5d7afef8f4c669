"""A mixed cluster (docs/lifecycle.md): a peer whose frames do not carry
F_POLICIES gets jobs without their policy and no DEADJOB, REVIVE or
QPOLICY; a peer whose frames do gets them all.  The real Cluster and
outbox, a transport that keeps the frames."""

from trisque.cluster.cluster import Cluster
from trisque.cluster.membership import ClusterNode
from trisque.cluster.outbox import Transport
from trisque.core.admin.config import Config
from trisque.core.hooks import DEAD_LETTERED
from trisque.core.jobs import policy as policy_codec
from trisque.core.jobs.job import ACTIVE, Job, serialize
from trisque.core.node import Node
from trisque.core.table import COMMANDS
from trisque.protocol import bus

OLD, NEW = "0" * 40, "1" * 40


class Recorder(Transport):
    def __init__(self) -> None:
        self.frames: list[tuple[str, bus.Message]] = []

    def send(self, node_id: str, frame: bytes) -> None:
        self.frames.append((node_id, bus.decode(frame)))


def make_cluster():
    node = Node(Config(), "f" * 40, clock=lambda: 1_700_000_000.0, table=COMMANDS)
    transport = Recorder()
    cluster = Cluster(node, transport, "127.0.0.1", 7711, 17711)
    for node_id in (OLD, NEW):
        peer = ClusterNode(node_id, "127.0.0.1", 7712, 17712, 0)
        cluster.membership.nodes[node_id] = peer
    cluster.membership.nodes[NEW].policies = True
    cluster.membership.nodes[OLD].policies = False  # (its frames said no F_POLICIES)
    return node, cluster, transport


def test_old_peers_get_plain_records_and_no_policy_messages():
    node, cluster, transport = make_cluster()
    job = Job(b"D-01234567-0123456789abcdefghijklmn-05a1", b"q", b"body", ACTIVE, 3,
              10**15, 10**6, 0, 30)
    job.nodes_delivered = (node.id, OLD, NEW)
    plain = serialize(job, 1000)
    job.policy = policy_codec.Policy(3, b"dlq")
    record = serialize(job, 1000)
    for peer in (OLD, NEW):
        cluster.outbox.send_job(peer, bus.REPLJOB, record)
    node.requeue.tell_holders(job, DEAD_LETTERED, True)
    cluster.outbox.encode()
    node.queue_policies[b"q"] = policy_codec.QueuePolicy(policy_codec.Policy(2), 5, node.id)
    cluster.queue_policy_changed(b"q")
    sent = {peer: [(m.type, m.body) for p, m in transport.frames if p == peer]
            for peer in (OLD, NEW)}
    old_job = sent[OLD][0][1][0]
    assert sent[OLD][0][0] == bus.REPLJOB and old_job[-1] == b""
    assert old_job == bus.decode(bus.jobs(bus.Header(OLD, 1, 2), bus.REPLJOB,
                                          [plain])).body[0]
    assert [t for t, _ in sent[OLD]] == [bus.REPLJOB]
    new_job = sent[NEW][0][1][0]
    assert policy_codec.decode(new_job[-1]).max_deliveries == 3
    assert [t for t, _ in sent[NEW]] == [bus.REPLJOB, bus.DEADJOB, bus.QPOLICY]
    assert sent[NEW][1][1] == [(job.id, 1)]
    assert sent[NEW][2][1][2] == b"q"


def test_a_peer_that_says_f_policies_gets_every_queue_policy():
    node, cluster, transport = make_cluster()
    node.queue_policies[b"a"] = policy_codec.QueuePolicy(policy_codec.Policy(4), 9, node.id)
    ping = bus.gossip(bus.Header(OLD, 7712, 17712, bus.F_POLICIES), bus.PING, [])

    class Link:
        node_id = OLD
        peer_ip = "127.0.0.1"

        def send(self, frame: bytes) -> None:
            transport.send(OLD, frame)  # (the PONG)
    cluster.receive(ping, Link())
    assert cluster.membership.nodes[OLD].policies
    assert [(p, m.type, m.body[2]) for p, m in transport.frames if m.type == bus.QPOLICY] == [
        (OLD, bus.QPOLICY, b"a")]


def test_a_peer_not_heard_from_yet_gets_the_policy():
    """The simulator's seed 270 (--policies, 3 nodes, mixed faults): a node
    that restarted sent REPLJOB to a peer before any frame from it, taken
    for an older node, so that copy had no limit and was delivered past it.
    A peer is taken to read policies until its frames say otherwise."""
    node, cluster, transport = make_cluster()
    fresh = "2" * 40
    cluster.membership.nodes[fresh] = ClusterNode(fresh, "127.0.0.1", 7713, 17713, 0)
    job = Job(b"D-01234567-0123456789abcdefghijklmn-05a1", b"q", b"body", ACTIVE, 3,
              10**15, 10**6, 0, 30)
    job.nodes_delivered = (node.id, fresh)
    job.policy = policy_codec.Policy(1, b"dlq")
    cluster.outbox.send_job(fresh, bus.REPLJOB, serialize(job, 1000))
    cluster.outbox.encode()
    [(peer, message)] = transport.frames
    assert peer == fresh and message.type == bus.REPLJOB
    assert policy_codec.decode(message.body[0][-1]).max_deliveries == 1
