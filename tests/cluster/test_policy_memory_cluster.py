"""The other holders' copies count the last error and the dead-letter
history they get from the bus (LASTERROR, DEADJOB, REVIVE) in their
used_memory, and give it back when the job is acknowledged
(docs/lifecycle.md)."""

from tests.harness import wait_for

from .conftest import addjob

N = 50


def used(client):
    return client.info("memory")["used_memory"]


def test_holders_count_the_last_error_they_are_sent(make_cluster):
    c = make_cluster(2)
    for i in (0, 1):  # (the queues exist on both: no queue bytes below)
        for queue in ("q", "q:dead"):
            assert c[i].execute_command("DELJOB", addjob(c[i], queue, "w")) == 1
    start = [used(c[0]), used(c[1])]
    ids = [addjob(c[0], "q", "x", "REPLICATE", 2, "RETRY", 60) for _ in range(N)]
    got = c[0].execute_command("GETJOB", "NOHANG", "COUNT", N, "FROM", "q")
    assert {job[1].decode() for job in got} == set(ids)
    held = used(c[1])
    for job_id in ids:
        assert c[0].execute_command("NACK", job_id, "DEAD", "REASON", "e" * 1000) == 1
    wait_for(lambda: used(c[1]) - held >= N * 1000, 10,
             message="the copies' last errors counted where they are held")
    assert c[1].execute_command("SHOW", ids[0])[-1] == b"e" * 1000
    for job_id in ids:
        assert c[1].execute_command("REVIVE", job_id) == 1
    wait_for(lambda: c[0].execute_command("QLEN", "q") + c[1].execute_command("QLEN", "q") == N,
             10, message="revived")
    assert used(c[1]) - held >= N * 1000, "a revived copy keeps its last error"
    for job_id in ids:
        assert c[0].execute_command("ACKJOB", job_id) == 1
    wait_for(lambda: [used(c[0]), used(c[1])] == start, 10,
             message="every byte given back on both nodes")
