"""A replica's copy on WORKING: its requeue time moves a RETRY on, and its
wake-up (the WILLQUEUE before the requeue) follows, whether the deadline
was moved then (the new one earlier) or left to fire early and re-arm (the
new one later): WILLQUEUE and the requeue come at the new time, not the
old one, and never later."""

import random

from trisque.cluster.cluster import Cluster
from trisque.cluster.membership import ClusterNode
from trisque.cluster.outbox import Transport
from trisque.core.admin.config import Config
from trisque.core.jobs.job import ACTIVE, BCAST_WILLQUEUE, QUEUED
from trisque.core.jobs.lifecycle import WILLQUEUE_ADVANCE_MS
from trisque.core.node import Node
from trisque.core.table import COMMANDS
from trisque.protocol import bus, jobcodec

JOB_ID = b"D-0123abcd-" + b"A" * 24 + b"-0a0b"
RETRY_S = 10


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def replica_and_origin(seed: int) -> tuple[Cluster, Cluster, Clock]:
    clock = Clock()
    clusters = []
    for letter in "ab":
        node = Node(Config(), letter * 40, clock=clock, table=COMMANDS,
                    rng=random.Random(seed))
        clusters.append(Cluster(node, Transport(), "127.0.0.1", 7711, 17711))
    replica, origin = clusters
    peer = ClusterNode(origin.node.id, "127.0.0.1", 7712, 17712, replica.node.now_ms())
    peer.link_ok = True
    replica.membership.add(peer)
    return replica, origin, clock


def repljob(origin: Cluster, replica: Cluster) -> bytes:
    record = jobcodec.encode(JOB_ID, ACTIVE, 0, 2, 1, 3_600_000, 0, RETRY_S, 0, 0, b"q",
                             b"body", (origin.node.id, replica.node.id))
    return bus.jobs(origin.membership.header(), bus.REPLJOB, [record])


def run_to(replica: Cluster, clock: Clock, ms: int) -> None:
    clock.now = ms / 1000
    replica.node.run_timers()


def check_working_after(delay_ms: int, seed: int) -> None:
    replica, origin, clock = replica_and_origin(seed)
    replica.receive(repljob(origin, replica), None)
    job = replica.node.jobs.get(JOB_ID)
    assert job is not None and job.state == ACTIVE
    first_wake = job.wake_ms
    assert first_wake == job.qtime_ms - WILLQUEUE_ADVANCE_MS

    clock.now += delay_ms / 1000
    replica.receive(bus.jobids(origin.membership.header(), bus.WORKING, [JOB_ID]), None)
    qtime = job.qtime_ms
    assert job.flags & BCAST_WILLQUEUE
    due = qtime - WILLQUEUE_ADVANCE_MS
    assert job.wake_ms is not None and job.wake_ms <= due  # never later than due

    # Up to just before the new WILLQUEUE time: nothing goes out.
    if first_wake < due:
        run_to(replica, clock, first_wake)
    run_to(replica, clock, due - 1)
    assert job.flags & BCAST_WILLQUEUE and job.state == ACTIVE
    assert job.wake_ms == due  # re-armed at the new time
    run_to(replica, clock, due)
    assert not job.flags & BCAST_WILLQUEUE  # WILLQUEUE sent
    run_to(replica, clock, qtime - 1)
    assert job.state == ACTIVE
    run_to(replica, clock, qtime)
    assert job.state == QUEUED


def test_working_soon_after_the_copy_either_way_of_the_jitter():
    # At 1 ms, the new time falls either side of the old by the jitter.
    for seed in range(12):
        check_working_after(1, seed)


def test_working_a_while_after_the_copy():
    for seed in range(4):
        check_working_after(3_000, seed)
