"""GETJOB's reply of a job, against the RESP it must be byte for byte: the
head kept per Common and the body's header from a table must not change it."""

import pytest

from trisque.core.jobs.job import ACTIVE, CTIME_EPOCH, Job
from trisque.core.jobs.job_reply import job_reply


def make(queue, body, name=b"D-aaaaaaaa-" + b"x" * 24 + b"-0001"):
    return Job(name, queue, body, ACTIVE, 1, CTIME_EPOCH + 1, 0, 0, 60)


def expected(job, first=b""):
    parts = [job.queue, job.id, job.body]
    return first + b"*3\r\n" + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


@pytest.mark.parametrize("size", (0, 1, 9, 10, 1023, 1024, 5000))
def test_job_reply_is_the_resp_array(size):
    for queue in (b"q", b"a queue" * 40):
        job = make(queue, b"b" * size)
        assert job_reply(job) == expected(job)
        assert job_reply(job, False, b"*1\r\n") == expected(job, b"*1\r\n")
        assert job_reply(job) == expected(job)  # (the head kept, read again)


def test_job_reply_follows_the_job_to_another_queue():
    job, other = make(b"q", b"body"), make(b"q", b"other")
    assert job_reply(job) == expected(job) and job_reply(other) == expected(other)
    job.move_to_queue(b"dead-letters")
    assert job_reply(job) == expected(job)
    assert job_reply(job).startswith(b"*3\r\n$12\r\ndead-letters\r\n")
    assert job_reply(other) == expected(other)


def test_job_reply_with_counters():
    job = make(b"q", b"body")
    job.nacks, job.deliveries = 2, 3
    reply = job_reply(job, True, b"*1\r\n")
    assert reply == (b"*1\r\n*7\r\n$1\r\nq\r\n$40\r\n" + job.id + b"\r\n$4\r\nbody\r\n"
                     b"$5\r\nnacks\r\n:2\r\n$21\r\nadditional-deliveries\r\n:3\r\n")
