"""A job's lone-item frames (GOTJOB, SETACK, GOTACK, DELJOB, WORKING) are
read by shortcuts: their header by one compare with a checked frame's
first bytes (bus.read_header), their item without a list (bus.lone_job_id,
cluster.py's dispatch).  Each reads what the full decode reads, and
refuses what it refuses."""

import random

import pytest

from trisque.cluster.cluster import Cluster
from trisque.cluster.membership import ClusterNode
from trisque.cluster.outbox import Transport
from trisque.core.admin.config import Config
from trisque.core.node import Node
from trisque.core.table import COMMANDS
from trisque.protocol import bus

JOB_ID = b"D-0123abcd-" + b"A" * 24 + b"-0a0b"
OTHER_ID = b"D-0123abcd-" + b"B" * 24 + b"-0a0b"
# Two senders in one cache slot (the same low bits in their first bytes),
# and one in another.
A = "a1" + "0" * 38
B = "a1" + "f" * 38
C = "c3" + "5" * 38


def frame(sender: str, type_: int, job_id: bytes = JOB_ID, aux: int = 0,
          mflags: int = 0) -> bytes:
    return bus.jobids(bus.Header(sender, 7711, 17711), type_, [(job_id, aux)], mflags)


def test_the_header_as_the_full_decode_reads_it_again_and_again():
    frames = [frame(s, t, aux=aux, mflags=m) for s in (A, B, C)
              for t in (bus.GOTJOB, bus.SETACK, bus.GOTACK, bus.DELJOB, bus.WORKING)
              for aux in (0, 1) for m in (0, 1)]
    for _ in range(3):  # (cached after the first pass; A and B share slots)
        for f in frames:
            assert len(f) == bus.ONE_ITEM_FRAME_LEN
            msg = bus.decode(f)
            assert bus.read_header(f) == (msg.type, msg.mflags, msg.sender)


def test_a_frame_that_differs_from_a_cached_one_is_checked_in_full():
    good = frame(A, bus.SETACK)
    assert bus.read_header(good) == (bus.SETACK, 0, A)
    for at, value in ((0, ord("X")), (3, 2), (4, 105), (20, ord("G")), (51, ord("/"))):
        bad = bytearray(good)
        bad[at] = value
        with pytest.raises(bus.BusError):
            bus.read_header(bytes(bad))
    assert bus.read_header(good) == (bus.SETACK, 0, A)


def test_lone_item_as_decode_body_reads_it():
    for aux in (0, 1, 7, 2**32 - 1):
        f = frame(C, bus.GOTACK, OTHER_ID, aux)
        assert bus.decode_body(f, bus.GOTACK) == [(bus.lone_job_id(f, bus.GOTACK),
                                                    bus.lone_aux(f))]
        assert bus.lone_job_id(f, bus.GOTACK) == OTHER_ID and bus.lone_aux(f) == aux


def test_lone_item_refuses_a_count_that_is_not_its_length():
    for count in (0, 2, 2**32 - 1):
        bad = bytearray(frame(C, bus.DELJOB))
        bad[bus.HEADER_SIZE:bus.HEADER_SIZE + 4] = count.to_bytes(4, "little")
        with pytest.raises(bus.BusError):
            bus.decode_body(bytes(bad), bus.DELJOB)
        with pytest.raises(bus.BusError):
            bus.lone_job_id(bytes(bad), bus.DELJOB)


def cluster_hearing(sender: str) -> Cluster:
    node = Node(Config(), "b" * 40, clock=lambda: 1_700_000_000.0, table=COMMANDS,
                rng=random.Random(1))
    cluster = Cluster(node, Transport(), "127.0.0.1", 7711, 17711)
    peer = ClusterNode(sender, "127.0.0.1", 7712, 17712, node.now_ms())
    peer.link_ok = True
    cluster.membership.add(peer)
    return cluster


def test_the_dispatch_hands_each_type_its_item():
    cluster = cluster_hearing(C)
    tombstones = cluster.acks.tombstones
    cluster.receive(frame(C, bus.SETACK, JOB_ID, 2), None)  # unknown here: remembered freed
    assert JOB_ID in tombstones
    cluster.receive(frame(C, bus.DELJOB, OTHER_ID), None)
    assert OTHER_ID in tombstones
    before = cluster.membership.messages_received
    cluster.receive(frame(C, bus.GOTACK, JOB_ID, 1), None)
    cluster.receive(frame(C, bus.WORKING, JOB_ID), None)
    assert cluster.membership.messages_received == before + 2


def test_the_dispatch_refuses_a_bad_count():
    cluster = cluster_hearing(C)
    for type_ in (bus.SETACK, bus.GOTACK, bus.DELJOB, bus.WORKING):
        bad = bytearray(frame(C, type_))
        bad[bus.HEADER_SIZE:bus.HEADER_SIZE + 4] = (2).to_bytes(4, "little")
        with pytest.raises(bus.BusError):
            cluster.receive(bytes(bad), None)
