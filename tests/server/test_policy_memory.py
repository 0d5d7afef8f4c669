"""A job's own policy data counts in used_memory (docs/lifecycle.md): a
NACK ... REASON text, an IDEMPOTENCY key, a DEADLETTER queue's name, for
as long as the job holds them, and given back when it drops them; so
maxmemory sees them too.  Each test warms its queues first (an empty
queue stays for 300 s), so that used_memory comes back exactly to where
it started once the jobs are gone."""

import redis

from tests.harness import wait_for

N = 100
REASON = "e" * 1000
OOM = "OOM command not allowed when used memory > 'maxmemory'."


def used(c):
    return c.info("memory")["used_memory"]


def warm(c, *queues):
    for queue in queues:
        job_id = c.execute_command("ADDJOB", queue, "w", 0)
        assert c.execute_command("DELJOB", job_id) == 1


def add_and_take(c, n, *opts):
    ids = [c.execute_command("ADDJOB", "q", "x", 0, "RETRY", 60, *opts) for _ in range(n)]
    assert taken(c, n) == set(ids)
    return ids


def taken(c, n, queue="q"):
    got = c.execute_command("GETJOB", "NOHANG", "COUNT", n, "FROM", queue) or []
    return {job[1] for job in got}


def ack_all(c, ids):
    pipe = c.pipeline(transaction=False)
    for job_id in ids:
        pipe.execute_command("ACKJOB", job_id)
    assert pipe.execute() == [1] * len(ids)


def test_nack_reasons_count_while_jobs_hold_them(c):
    warm(c, "q")
    start = used(c)
    ids = add_and_take(c, N)
    held = used(c)
    for job_id in ids:
        assert c.execute_command("NACK", job_id, "REASON", REASON) == 1
    grown = used(c) - held
    assert grown >= N * 1000, "each job's 1000-byte last error is counted"
    # a shorter last error replaces it: the difference is given back
    assert taken(c, N) == set(ids)
    for job_id in ids:
        assert c.execute_command("NACK", job_id, "REASON", "short") == 1
    assert used(c) - held <= grown - N * 990
    assert c.execute_command("SHOW", ids[0])[-1] == b"short"
    ack_all(c, ids)
    assert used(c) == start, "every byte given back once the jobs are acked"


def test_dead_letter_and_revive_keep_the_count(c):
    warm(c, "q", "q:dead")
    start = used(c)
    ids = add_and_take(c, N)
    held = used(c)
    for job_id in ids:
        assert c.execute_command("NACK", job_id, "DEAD", "REASON", REASON) == 1
    assert c.execute_command("QLEN", "q:dead") == N
    dead = used(c)
    assert dead - held >= N * 1000
    for job_id in ids:
        assert c.execute_command("REVIVE", job_id) == 1
    assert c.execute_command("QLEN", "q") == N
    assert used(c) - held >= N * 1000, "a revived job keeps its last error"
    # half acked, half deleted: nothing left over either way
    assert taken(c, N) == set(ids)
    ack_all(c, ids[:N // 2])
    assert sum(c.execute_command("DELJOB", job_id) for job_id in ids[N // 2:]) == N - N // 2
    assert used(c) == start


def plain_cost(c):
    """used_memory before, and what N plain jobs held take (given back)."""
    warm(c, "q")
    start = used(c)
    plain = add_and_take(c, N)
    plain_bytes = used(c) - start
    ack_all(c, plain)
    assert used(c) == start
    return start, plain_bytes


def test_idempotency_keys_count_while_jobs_hold_them(c):
    start, plain_bytes = plain_cost(c)
    keyed = [c.execute_command("ADDJOB", "q", "x", 0, "TTL", 3, "IDEMPOTENCY", f"{i:01000}")
             for i in range(N)]
    assert taken(c, N) == set(keyed)
    keyed_bytes = used(c) - start
    # the key, its entry in the node's index, and the job's own policy
    assert keyed_bytes - plain_bytes >= N * (1000 + 200 + 300)
    ack_all(c, keyed[:N // 2])
    assert sum(c.execute_command("DELJOB", job_id) for job_id in keyed[N // 2:]) == N - N // 2
    # the jobs are gone; their keys' tombstones stay until the TTL ends
    tombstones = used(c) - start
    assert N * 1000 <= tombstones <= keyed_bytes - plain_bytes - N * 300
    wait_for(lambda: used(c) == start, 10, message="tombstones expired")


def test_a_dead_letter_queue_name_counts_per_job(c):
    start, plain_bytes = plain_cost(c)
    named = [c.execute_command("ADDJOB", "q", "x", 0, "RETRY", 60, "DEADLETTER",
                               f"{i:01000}") for i in range(N)]
    assert taken(c, N) == set(named)
    assert used(c) - start - plain_bytes >= N * 1000
    ack_all(c, named)
    assert used(c) == start


def test_nack_reasons_reach_maxmemory(c):
    """Past maxmemory NACK is refused (-OOM): last errors fill the node."""
    warm(c, "q")
    ids = add_and_take(c, 300)
    c.config_set("maxmemory", used(c) + 100_000)
    accepted = refused = 0
    try:
        for job_id in ids:
            try:
                assert c.execute_command("NACK", job_id, "REASON", REASON) == 1
                accepted += 1
            except redis.exceptions.OutOfMemoryError as exc:
                assert str(exc) == OOM.split(" ", 1)[1]
                refused += 1
    finally:
        c.config_set("maxmemory", "1gb")
    assert refused > 0, "100 KB of room does not hold 300 KB of last errors"
    assert 30 <= accepted <= 100
