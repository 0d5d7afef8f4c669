"""A mixed cluster (docs/schedules.md): a peer whose frames do not carry
F_SCHEDULES is sent no SCHEDULE or SCHEDFIRED and does not count in the
firing rank, even with the lowest ID; a peer whose frames do gets both,
and its ID ranks.  The real Cluster, a transport that keeps the frames."""

from trisque.cluster.cluster import Cluster
from trisque.cluster.membership import ClusterNode
from trisque.cluster.outbox import Transport
from trisque.core.admin.config import Config
from trisque.core.node import Node
from trisque.core.table import COMMANDS
from trisque.protocol import bus

OLD, NEW, LATE = "0" * 40, "1" * 40, "2" * 40
ME = "f" * 40


class Recorder(Transport):
    def __init__(self) -> None:
        self.frames: list[tuple[str, bus.Message]] = []

    def send(self, node_id: str, frame: bytes) -> None:
        self.frames.append((node_id, bus.decode(frame)))


class Link:
    """The link a PING came in on: the cluster answers on it."""
    peer_ip = "127.0.0.1"
    node_id = None

    def send(self, frame: bytes) -> None:
        pass


class Clock:
    now = 1_700_000_000.5


def make_cluster():
    clock = Clock()
    node = Node(Config(), ME, clock=lambda: clock.now, table=COMMANDS)
    transport = Recorder()
    cluster = Cluster(node, transport, "127.0.0.1", 7711, 17711)
    for node_id in (OLD, NEW):
        peer = ClusterNode(node_id, "127.0.0.1", 7712, 17712, 0)
        peer.link_ok = True
        cluster.membership.nodes[node_id] = peer
    cluster.membership.nodes[NEW].schedules = True
    cluster.membership.update_reachable()
    return node, cluster, transport, clock


def run(node, *argv):
    client = node.add_client("127.0.0.1:40000")
    node.execute(client, [a if isinstance(a, bytes) else str(a).encode() for a in argv])
    return b"".join(client.out)


def test_only_peers_with_the_flag_get_schedules_and_rank():
    node, cluster, transport, clock = make_cluster()
    assert cluster.membership.header().flags & bus.F_SCHEDULES
    assert run(node, "SCHEDULE", "ADD", "s", "* * * * * *", "q", "b") == b"+OK\r\n"
    sent = [(to, m.type) for to, m in transport.frames]
    assert sent == [(NEW, bus.SCHEDULE)]
    assert transport.frames[0][1].body[2] == b"s"
    # OLD has the lowest ID but knows no schedules: only NEW ranks before me
    assert cluster.schedule_rank() == 1
    transport.frames.clear()
    node.schedules.started_ms = 0  # (long up: a node just started waits 1.5 steps more)
    clock.now = 1_700_000_001.05  # 50 ms past the tick; rank 1 waits a step (125 ms)
    node.cron()
    assert node.schedules.fired == 0
    clock.now = 1_700_000_001.15
    node.cron()
    assert node.schedules.fired == 1
    fired = [(to, m.type) for to, m in transport.frames if m.type == bus.SCHEDFIRED]
    assert fired == [(NEW, bus.SCHEDFIRED)]


def test_a_peer_is_sent_schedules_when_its_frames_say_it_reads_them():
    node, cluster, transport, clock = make_cluster()
    run(node, "SCHEDULE", "ADD", "s", "0 3 * * *", "q", "b")
    late = ClusterNode(LATE, "127.0.0.1", 7713, 17713, 0)
    late.link_ok = True
    cluster.membership.nodes[LATE] = late
    cluster.membership.update_reachable()
    transport.frames.clear()
    header = bus.Header(LATE, 7713, 17713, bus.F_PUBSUB | bus.F_POLICIES)
    cluster.receive(bus.gossip(header, bus.PING, []), Link())
    assert late.schedules is False
    assert not [m for to, m in transport.frames if m.type == bus.SCHEDULE]
    header = bus.Header(LATE, 7713, 17713, bus.F_PUBSUB | bus.F_POLICIES | bus.F_SCHEDULES)
    cluster.receive(bus.gossip(header, bus.PING, []), Link())
    assert late.schedules is True
    assert [(to, m.type) for to, m in transport.frames if m.type == bus.SCHEDULE] == [
        (LATE, bus.SCHEDULE)]


def test_a_schedule_from_a_peer_and_its_ticks_are_adopted_and_older_ones_lose():
    node, cluster, transport, clock = make_cluster()
    run(node, "SCHEDULE", "ADD", "s", "0 3 * * *", "q", "b")
    mine = node.schedules.by_name[b"s"]
    newer = bus.schedule(bus.Header(NEW, 7712, 17712, bus.F_SCHEDULES), b"s",
                         mine.version_ms + 5, NEW,
                         _record(b"*/5 * * * *", mine.created_ms))
    older = bus.schedule(bus.Header(NEW, 7712, 17712, bus.F_SCHEDULES), b"s",
                         mine.version_ms - 5, NEW, _record(b"1 1 1 1 *", mine.created_ms))
    cluster.receive(newer, None)
    cluster.receive(older, None)
    assert node.schedules.by_name[b"s"].expr == b"*/5 * * * *"
    job = b"D-11111111-AAAAAAAAAAAAAAAAAAAAAAAA-05a1"
    cluster.receive(bus.schedule_fired(bus.Header(NEW, 7712, 17712, bus.F_SCHEDULES), b"s",
                                       1_700_000_100_000, NEW, job), None)
    entry = node.schedules.by_name[b"s"]
    assert (entry.fired_tick_ms, entry.fired_by, entry.fired_job) == (
        1_700_000_100_000, NEW, job)
    assert node.schedules.ticks_heard == 1


def _record(expr, created_ms):
    from trisque.core.jobs import schedule as codec
    return codec.encode(codec.Schedule(b"s", expr, b"q", b"b", [], created_ms, 0, NEW))
