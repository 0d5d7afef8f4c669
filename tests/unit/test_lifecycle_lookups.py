"""JobLifecycle's shortcuts on the job path: the queue found last by name
(queue_named), the requeue jitter's draws, the registry's pop."""

import random
import time

from trisque.core.jobs.lifecycle import JobLifecycle

from tests.unit.conftest import Core


def test_queue_named_answers_the_registered_queue_only():
    core = Core()
    node = core.node
    a = node.get_queue(b"a")
    b = node.get_queue(b"b")
    for _ in range(3):  # alternating names, each a new bytes object
        assert node.queue_named(bytes(bytearray(b"a"))) is a
        assert node.queue_named(bytes(bytearray(b"b"))) is b
    assert node.queue_named(b"c") is None
    node.drop_queue(b)  # the one found last
    assert node.queue_named(b"b") is None
    assert core("ADDJOB", "b", "x", 0)  # a new queue b takes the job
    new_b = node.queues[b"b"]
    assert new_b is not b and len(b.jobs) == 0
    assert core("QLEN", "b") == 1
    assert node.queue_named(b"b") is new_b
    node.drop_queue(a)  # not the one found last
    assert node.queue_named(b"a") is None
    job = core("GETJOB", "NOHANG", "FROM", "b")[0]
    assert job[1] and core("QLEN", "b") == 0 and core("ACKJOB", job[1]) == 1
    node.check_invariants()


def test_jitter_draws_are_the_seeded_generators_16_bit_numbers():
    node = JobLifecycle("a" * 40, time.time, random.Random(7), random.Random(8).randbytes)
    reference = random.Random(7)
    expected = []
    while len(expected) < 2500:  # past two refills of 1,024 draws
        pool = reference.randbytes(2048)
        for at in range(0, 2048, 2):
            draw = pool[at] << 8 | pool[at + 1]
            if draw < 65500:  # (the higher ones would favour low jitters)
                expected.append(draw % 500 - 250)
    got = [node.jitter_ms() for _ in range(2500)]
    assert got == expected[:2500]
    assert min(got) == -250 and max(got) == 249


def test_pop_finds_a_job_in_its_slot_or_its_shard():
    core = Core()
    node = core.node
    ids = [core("ADDJOB", "q", "x", 0) for _ in range(50)]
    registry = node.jobs
    for n, job_id in enumerate(ids):
        key = bytes(bytearray(job_id))  # a fresh object, as from a client
        if n % 2:
            assert registry.get(key) is not None  # now in its slot
        job = registry.pop(key)
        assert job is not None and job.id == job_id
        assert registry.pop(key) is None and registry.get(key) is None
        assert key not in registry
    assert len(registry) == 0
