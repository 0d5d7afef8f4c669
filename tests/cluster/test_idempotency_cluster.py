"""Idempotent adds across real nodes (docs/lifecycle.md, "In a cluster"):
a key is refused by every node that holds (or held, within the TTL) a copy
of the first job; a node that never held one creates a second job."""

import threading
import time

import pytest
import redis

from tests.harness import wait_for

from .conftest import addjob


def _add(client, key, *args, timeout=5000):
    return addjob(client, "q", "x", "TTL", 600, "IDEMPOTENCY", key, *args, timeout=timeout)


def _total_jobs(c, queue="q"):
    return sum(c[i].execute_command("QLEN", queue) for i in c.alive())


def test_replicate_3_every_node_holds_it_so_every_node_dedups(cluster3):
    c = cluster3
    first = _add(c[0], "k3", "REPLICATE", 3)
    wait_for(lambda: len(c.job_holders(first)) == 3, 5, message="3 copies")
    assert _add(c[1], "k3", "REPLICATE", 3) == first
    assert _add(c[2], "k3", "REPLICATE", 1) == first
    assert _add(c[0], "k3") == first
    assert _total_jobs(c) == 1
    # acked: every holder keeps a tombstone, a retry anywhere still dedups
    got = c[1].execute_command("GETJOB", "TIMEOUT", 5000, "FROM", "q")
    assert got[0][1].decode() == first
    assert c[1].execute_command("ACKJOB", first) == 1
    wait_for(lambda: not c.job_holders(first), 10, message="the ack garbage-collected")
    for i in c.alive():
        assert _add(c[i], "k3") == first
    assert _total_jobs(c) == 0


def test_replicate_1_only_its_holder_dedups(cluster3):
    c = cluster3
    first = _add(c[0], "k1", "REPLICATE", 1)
    assert _add(c[0], "k1", "REPLICATE", 1) == first
    # node 1 never held a copy: the guarantee does not reach it
    second = _add(c[1], "k1", "REPLICATE", 1)
    assert second != first
    assert _add(c[1], "k1") == second
    assert sum(1 for i in c.alive() if c[i].execute_command("QLEN", "q")) == 2


def test_replicate_2_the_holders_dedup_the_other_does_not(cluster3):
    c = cluster3
    first = _add(c[0], "k2", "REPLICATE", 2)
    holders = c.job_holders(first)
    assert len(holders) == 2
    (other,) = set(c.alive()) - set(holders)
    for i in holders:
        assert _add(c[i], "k2") == first
    assert _add(c[other], "k2", "REPLICATE", 1) != first


def test_a_failed_add_frees_its_key_everywhere(cluster3):
    """ADDJOB that times out (NOREPL) created no job: its key must not
    answer that job's ID later, on the node that took it nor on the node
    its copy reached (DELJOB with aux 1)."""
    c = cluster3
    sleeper = threading.Thread(target=lambda: c[2].execute_command("DEBUG", "SLEEP", 1))
    sleeper.start()
    time.sleep(0.1)
    try:
        with pytest.raises(redis.ResponseError, match="NOREPL"):
            _add(c[0], "failed", "REPLICATE", 3, timeout=300)
    finally:
        sleeper.join()
    wait_for(lambda: c[1].info("stats")["idempotency_keys"] == 0
             and c[0].info("stats")["idempotency_keys"] == 0, 5,
             message="no key left by the failed add")
    retried = _add(c[1], "failed", "REPLICATE", 3)
    assert _add(c[0], "failed") == retried
    assert _total_jobs(c) == 1
