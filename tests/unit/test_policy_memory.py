"""Job.memory() counts the job's own policy (its last error, key, where it
died) and its dead-letter queue's name, and the node's used_memory follows
every change of them on a registered job (Node.set_policy)."""

from trisque.core.jobs import policy as policy_codec
from trisque.core.jobs.job import ACTIVE, Job
from trisque.core.jobs.policy import Policy, shared


def plain_job():
    return Job(b"D-" + b"0" * 38, b"q", b"body", ACTIVE, 1, 1577836800000 * 1000000, 0, 0, 30)


def test_job_memory_counts_its_own_policy_strings():
    job = plain_job()
    base = job.memory()
    own = Policy()
    own.last_error = b"e" * 1000
    own.idempotency_key = b"k" * 10
    job.policy = own
    assert job.memory() == base + policy_codec.own_memory(own)
    assert policy_codec.own_memory(own) == policy_codec.OWN_POLICY_OVERHEAD + 1010
    job.policy = None
    assert job.memory() == base


def test_an_interned_policy_counts_its_dead_letter_name_only():
    job = plain_job()
    base = job.memory()
    job.policy = shared(3, b"d" * 500, policy_codec.BACKOFF_NONE, 0, 0, 0)
    assert job.memory() == base + 500
    job.policy = shared(3, b"", policy_codec.BACKOFF_NONE, 0, 0, 0)
    assert job.memory() == base
    job.nodes_delivered = ("x" * 40,)  # another Common: the same names
    assert job.memory() == base


def add(core, *opts):
    return core("ADDJOB", "q", "x", 0, "RETRY", 60, *opts)


def take(core, queue="q"):
    reply = core("GETJOB", "NOHANG", "FROM", queue)
    return None if reply is None else reply[0][1]


def test_used_memory_follows_reason_dead_letter_and_revive(core):
    node = core.node
    for queue in ("q", "q:dead"):  # (the queues exist: no queue bytes below)
        assert core("DELJOB", core("ADDJOB", queue, "w", 0)) == 1
    start = node.used_memory
    job_id = add(core, "MAXDELIVERIES", 5)
    job = core.job(job_id)
    registered = node.used_memory
    assert registered - start == job.memory()
    assert take(core) == job_id
    assert core("NACK", job_id, "REASON", "x" * 2000) == 1
    assert job.policy.last_error == b"x" * 1024  # (cut at MAX_REASON_BYTES)
    assert node.used_memory - start == job.memory()
    assert node.used_memory - registered >= 1024 + policy_codec.OWN_POLICY_OVERHEAD
    assert take(core) == job_id
    assert core("NACK", job_id, "DEAD") == 1
    assert job.queue == b"q:dead" and job.policy.dead_from == b"q"
    assert node.used_memory - start == job.memory()
    assert core("REVIVE", job_id) == 1
    assert job.queue == b"q" and job.policy.dead_from == b""
    assert node.used_memory - start == job.memory()
    assert take(core) == job_id
    assert core("ACKJOB", job_id) == 1
    assert node.used_memory == start
