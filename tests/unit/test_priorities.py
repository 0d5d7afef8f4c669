"""Priority levels on a lone node (docs/lifecycle.md): GETJOB serves the
highest level first, ctime order within a level; QCONFIG defaults; the
level travels in the job's record; a plain queue stays a plain FIFO."""

import random

import pytest

from tests.unit.conftest import is_error
from trisque.core.jobs import policy as policy_codec
from trisque.core.jobs.job import deserialize, serialize
from trisque.core.jobs.queue import JobList, Levels


def add(core, *opts, queue="q", body="x"):
    return core("ADDJOB", queue, body, 0, *opts)


def take(core, queue="q", count=1):
    reply = core("GETJOB", "NOHANG", "COUNT", count, "FROM", queue)
    return [] if reply is None else [item[1] for item in reply]


def test_highest_level_first_fifo_within_a_level(core):
    low = add(core, "PRIORITY", 1)
    plain1 = add(core)
    high1 = add(core, "PRIORITY", 9)
    plain2 = add(core, "PRIORITY", 5)  # the default, said out loud
    high2 = add(core, "PRIORITY", 9)
    mid = add(core, "PRIORITY", 7)
    assert core("QLEN", "q") == 6
    peek = [item[1] for item in core("QPEEK", "q", 10)]
    assert peek == [high1, high2, mid, plain1, plain2, low]
    assert [item[1] for item in core("QPEEK", "q", -2)] == [low, plain2]
    assert take(core, count=3) == [high1, high2, mid]
    assert take(core, count=10) == [plain1, plain2, low]
    # empty again: the queue is back to a plain FIFO
    assert core.node.queues[b"q"].jobs._sorted is None


def test_plain_jobs_carry_nothing_and_show_15_fields(core):
    plain = add(core, "PRIORITY", 5)
    assert core.job(plain)._rare is None
    assert len(core.show(plain)) == 15
    urgent = add(core, "PRIORITY", 8)
    info = core.show(urgent)
    assert info["priority"] == 8 and len(info) == 16
    stat = dict(zip(*[iter(core("QSTAT", "q"))] * 2))
    assert stat[b"priority-levels"] == [8, 1, 5, 1]


def test_plain_queue_qstat_unchanged(core):
    add(core)
    assert len(core("QSTAT", "q")) == 20  # Disque's ten fields


def test_nack_keeps_the_level(core):
    low = add(core, "PRIORITY", 2, "RETRY", 60)
    high = add(core, "PRIORITY", 9, "RETRY", 60)
    assert take(core) == [high]
    assert core("NACK", high) == 1
    assert take(core) == [high]  # back in its level, ahead of the low one
    assert take(core) == [low]


def test_dequeue_and_ack_from_the_middle(core):
    ids = [add(core, "PRIORITY", 1 + i % 9) for i in range(30)]
    assert core("DEQUEUE", ids[4]) == 1
    assert core("ACKJOB", ids[13]) == 1
    assert core("DELJOB", ids[22]) == 1
    left = set(ids) - {ids[4], ids[13], ids[22]}
    got = take(core, count=100)
    assert set(got) == left
    levels = [core.show(i)["priority"] if "priority" in core.show(i) else 5 for i in got]
    assert levels == sorted(levels, reverse=True)


def test_qconfig_default_priority_and_override(core):
    assert core("QCONFIG", "q", "SET", "PRIORITY", 8) == b"OK"
    assert core("QCONFIG", "q", "GET") == [b"max-deliveries", 0, b"dead-letter", b"",
                                           b"backoff", b"none", b"priority", 8]
    default = add(core)
    said_5 = add(core, "PRIORITY", 5)
    assert core.show(default)["priority"] == 8
    assert "priority" not in core.show(said_5)
    assert take(core) == [default]


def test_bad_priorities(core):
    for bad in ("0", "10", "-1", "x", ""):
        assert is_error(add(core, "PRIORITY", bad), "ERR PRIORITY must be between 1 and 9")
    assert is_error(core("QCONFIG", "q", "SET", "PRIORITY", 11), "ERR PRIORITY")
    assert core("QLEN", "q") == 0


def test_level_travels_in_the_record(core):
    job_id = add(core, "PRIORITY", 3, "IDEMPOTENCY", "k")
    job = core.job(job_id)
    copy, _ = deserialize(serialize(job, job.etime_ms))
    assert (copy.policy.priority, copy.policy.idempotency_key) == (3, b"k")
    raw = policy_codec.encode(copy.policy)
    with pytest.raises(ValueError):
        policy_codec.decode(raw[:-1] + b"\x0a")  # level 10


def test_levels_read_like_one_sorted_list():
    """Levels against a model: the jobs sorted by (-level, ctime)."""
    rng = random.Random(7)
    from trisque.core.jobs.job import Job
    jobs = []
    for n in range(300):
        job = Job(b"%040d" % n, b"q", b"", 2, 1, 10**15 + rng.randrange(10**6), 10**13, 0, 1)
        level = rng.choice((1, 5, 5, 5, 9, 3))
        if level != 5:
            job.policy = policy_codec.Policy()
            job.policy.priority = level
        jobs.append((level, job))
    plain = JobList()
    for level, job in jobs:
        if job._rare is None:
            plain.add(job)
        else:
            plain.add_any(job)
    model = [job for _l, job in sorted(jobs, key=lambda p: (-p[0], p[1]._ctime))]
    assert isinstance(plain._sorted, Levels)
    assert list(plain) == model and len(plain) == len(model)
    assert list(reversed(plain)) == model[::-1]
    for a, b in ((0, 10), (5, 17), (-7, None), (290, 300), (-300, -250), (3, 3)):
        assert plain[a:b] == model[a:b]
    assert plain[0] is model[0] and plain[-1] is model[-1] and plain[150] is model[150]
    for victim in rng.sample(model, 50):
        plain.remove(victim)
        model.remove(victim)
    assert list(plain) == model
    assert plain.pop(0) is model.pop(0)
    assert plain.pop(-1) is model.pop(-1)
    while model:
        assert plain.pop(0) is model.pop(0)
    assert plain._sorted is None and len(plain) == 0
