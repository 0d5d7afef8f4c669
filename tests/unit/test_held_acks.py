"""Lone SETACK, GOTACK and DELJOB frames are held until the turn's
replies have gone out (cluster.py, ``hold_acks``): a REPLJOB or GOTJOB
that came after them is handled first, and any other frame after them, in
the order they came.  Off (the default, where frames are handed in one at
a time), each frame is handled as it comes.  A consumer's ACKJOB's
START-GC is held with them (Acks.hold_gcs).  (The simulator turns both
on: tests/sim/world.py.)"""

from trisque.cluster.cluster import Cluster
from trisque.core.jobs.job import ACKED, ACTIVE, Job
from trisque.protocol import bus, jobcodec

from .test_bus_lone_frames import cluster_hearing

ORIGIN = "a" * 40
FREED = b"D-0123abcd-" + b"A" * 24 + b"-0a0b"    # acked elsewhere, unknown here
OTHER = b"D-0123abcd-" + b"B" * 24 + b"-0a0b"
COPY = b"D-0123abcd-" + b"C" * 24 + b"-0a0b"     # a new job's copy


def replica(hold_acks: bool) -> Cluster:
    cluster = cluster_hearing(ORIGIN)
    cluster.hold_acks = hold_acks
    return cluster


HEADER = bus.Header(ORIGIN, 7712, 17712)


def lone(type_: int, job_id: bytes, aux: int = 0) -> bytes:
    return bus.jobids(HEADER, type_, [(job_id, aux)])


def repljob(replica: Cluster) -> bytes:
    record = jobcodec.encode(COPY, ACTIVE, 0, 2, 1, 3_600_000, 0, 10, 0, 0, b"q",
                             b"body", (ORIGIN, replica.node.id))
    return bus.jobs(HEADER, bus.REPLJOB, [record])


def test_off_each_ack_frame_is_handled_as_it_comes():
    cluster = replica(hold_acks=False)
    cluster.receive(lone(bus.DELJOB, FREED), None)  # unknown here: remembered freed
    assert FREED in cluster.tombstones and not cluster.held_acks


def test_a_copy_that_came_after_a_held_ack_is_stored_first():
    cluster = replica(hold_acks=True)
    cluster.receive(lone(bus.SETACK, FREED, 2), None)
    cluster.receive(lone(bus.DELJOB, OTHER), None)
    assert FREED not in cluster.tombstones and OTHER not in cluster.tombstones
    cluster.receive(repljob(cluster), None)
    assert cluster.node.jobs.get(COPY) is not None  # stored (its GOTJOB queued)
    assert FREED not in cluster.tombstones  # still held
    cluster.handle_held_acks()
    assert FREED in cluster.tombstones and OTHER in cluster.tombstones
    assert not cluster.held_acks


def test_any_other_frame_is_handled_after_the_held_ones():
    for later in (lone(bus.WORKING, OTHER),
                  bus.jobids(HEADER, bus.DELJOB, [(OTHER, 0), (COPY, 0)])):
        cluster = replica(hold_acks=True)
        cluster.receive(lone(bus.DELJOB, FREED), None)
        assert FREED not in cluster.tombstones
        cluster.receive(later, None)
        assert FREED in cluster.tombstones and not cluster.held_acks


def test_held_acks_keep_their_order():
    cluster = replica(hold_acks=True)
    cluster.receive(repljob(cluster), None)
    job = cluster.node.jobs.get(COPY)
    assert job is not None
    # SETACK then DELJOB of the same job, handled as they came: acked, freed
    cluster.receive(lone(bus.SETACK, COPY, 2), None)
    cluster.receive(lone(bus.DELJOB, COPY), None)
    assert cluster.node.jobs.get(COPY) is job
    cluster.handle_held_acks()
    assert cluster.node.jobs.get(COPY) is None


def acked_copy(hold_gcs: bool) -> tuple[Cluster, Job]:
    """A copy stored here (its holders: the origin and us), then acked by a
    consumer of ours."""
    cluster = replica(hold_acks=True)
    cluster.acks.hold_gcs = hold_gcs
    cluster.receive(repljob(cluster), None)
    job = cluster.node.jobs.get(COPY)
    assert job is not None
    cluster.node.ack(job)
    assert job.state == ACKED
    return cluster, job


def test_off_an_acks_gc_starts_at_once():
    cluster, job = acked_copy(hold_gcs=False)
    assert job.gc_retry == 1 and not cluster.acks.held_gcs


def test_an_acks_gc_starts_once_the_turns_replies_are_out():
    cluster, job = acked_copy(hold_gcs=True)
    assert job.gc_retry == 0 and cluster.acks.held_gcs == [job]  # no SETACK yet
    cluster.handle_held_acks()
    assert job.gc_retry == 1 and not cluster.acks.held_gcs
    assert cluster.node.jobs.get(COPY) is job  # waiting for the origin's GOTACK


def test_a_job_freed_before_its_held_gc_is_left_alone():
    cluster, job = acked_copy(hold_gcs=True)
    cluster.receive(lone(bus.DELJOB, COPY), None)  # held, handled first
    cluster.handle_held_acks()
    assert cluster.node.jobs.get(COPY) is None and job.gc_retry == 0
    assert not cluster.acks.held_gcs
