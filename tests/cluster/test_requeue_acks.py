"""Requeue across nodes, ack garbage collection, dummy acks, FASTACK,
PAUSE BCAST, and the at-most-one-queued rule in a healthy cluster."""

import collections
import os
import random
import threading
import time

import pytest
import redis

from tests.harness import wait_for

from .conftest import addjob, show


def _queued_on(c, job_id):
    return [i for i in c.alive() if (show(c[i], job_id) or {}).get("state") == "queued"]


def test_job_queued_on_a_killed_node_is_requeued_elsewhere(make_cluster):
    c = make_cluster(3)
    job_id = addjob(c[0], "q", "body", "REPLICATE", 3, "RETRY", 1)
    assert _queued_on(c, job_id) == [0]
    c.kill(0)
    # After RETRY (plus the WILLQUEUE that nobody answers) a survivor
    # queues it; only one of them keeps it queued.
    wait_for(lambda: len(_queued_on(c, job_id)) == 1, 10, message="requeued on a survivor")
    # A consumer on either survivor gets it.
    consumer = c[1]
    got = consumer.execute_command("GETJOB", "TIMEOUT", 8000, "WITHCOUNTERS", "FROM", "q")
    assert got is not None, "the job came back"
    queue, got_id, body, _, nacks, _, deliveries = got[0]
    assert got_id.decode() == job_id and body == b"body"
    assert deliveries >= 1, "a requeue counts as an additional delivery"
    assert consumer.execute_command("ACKJOB", job_id) == 1
    # Acked on both survivors; the copies stay (acked, never requeued) until
    # the dead holder confirms too, as in Disque.
    wait_for(lambda: c.job_holders(job_id, states={"acked"}) == [1, 2], 5,
             message="acked on every live holder")
    time.sleep(1.5)
    assert c[1].execute_command("QLEN", "q") == 0 == c[2].execute_command("QLEN", "q")


def test_acks_reach_a_node_that_was_down(make_cluster):
    """The GC keeps retrying (with backoff) until the restarted holder,
    which reloaded its copy from its AOF, confirms the ack."""
    c = make_cluster(3, config="appendonly yes\n")
    job_id = addjob(c[0], "q", "body", "REPLICATE", 3, "RETRY", 60)
    wait_for(lambda: len(c.job_holders(job_id)) == 3, 5, message="3 copies")
    c.kill(2)
    got = c[0].execute_command("GETJOB", "FROM", "q")
    assert got[0][1].decode() == job_id
    assert c[0].execute_command("ACKJOB", job_id) == 1
    # Node 1 confirmed, node 2 cannot: the job stays acked on node 0.
    time.sleep(1.5)
    assert show(c[0], job_id)["state"] == "acked"
    assert show(c[1], job_id)["state"] == "acked"
    with open(os.path.join(c.servers[2].dir, "disque.aof"), "rb") as f:
        assert job_id.encode() in f.read(), "node 2 will reload its copy"
    c.restart(2)
    wait_for(lambda: c.registered_jobs() == [0, 0, 0], 20,
             message="ack reached the restarted node, every copy freed")


def test_no_leaks_after_everything_is_acked(cluster3):
    c = cluster3
    job_ids = []
    for i in range(60):
        job_ids.append(addjob(c[i % 3], f"q{i % 4}", f"b{i}", "REPLICATE", 2 + i % 2))
    # Consume everything, from every node; federation moves jobs around.
    got = set()
    deadline = time.monotonic() + 15
    while len(got) < 60 and time.monotonic() < deadline:
        for i in range(3):
            jobs = c[i].execute_command("GETJOB", "TIMEOUT", 100, "COUNT", 10,
                                        "FROM", "q0", "q1", "q2", "q3") or []
            ids = [j[1].decode() for j in jobs]
            if ids:
                assert c[i].execute_command("ACKJOB", *ids) == len(ids)
                got.update(ids)
    assert got == set(job_ids)
    wait_for(lambda: c.registered_jobs() == [0, 0, 0], 10, message="no job left anywhere")


def test_dummy_acks_are_freed(cluster3):
    c = cluster3
    odd = "D-0123abcd-0123456789abcdefghijklmn-05a1"  # odd TTL digits: may be requeued
    even = "D-0123abcd-0123456789abcdefghijklmo-05a0"  # at-most-once: no dummy
    assert c[0].execute_command("ACKJOB", odd, even) == 0
    assert c[0].info()["registered_jobs"] <= 1
    # Everyone says "unknown": the dummy ack goes away, nobody keeps one.
    wait_for(lambda: c.registered_jobs() == [0, 0, 0], 5, message="dummy acks freed")
    # An ack for a job the node does not hold, but others do: it reaches them.
    job_id = addjob(c[0], "q", "body", "REPLICATE", 2)
    holders = c.job_holders(job_id)
    other = ({0, 1, 2} - set(holders)).pop()
    assert c[other].execute_command("ACKJOB", job_id) == 0
    wait_for(lambda: c.registered_jobs() == [0, 0, 0], 10, message="dummy ack reached holders")
    assert c[0].execute_command("QLEN", "q") == 0


def test_ackjob_of_odd_ids(cluster3):
    """IDs that pass the shape check but whose TTL digits are not hex."""
    c = cluster3
    weird = "D-0123abcd-0123456789abcdefghijklmn-zzzz"
    for job_id in (weird, "D-0123abcd-0123456789abcdefghijklmn-ffff"):
        c[0].execute_command("ACKJOB", job_id)
        c[0].execute_command("FASTACK", job_id)
    assert c[0].execute_command("PING") is True
    wait_for(lambda: c.registered_jobs() == [0, 0, 0], 5, message="nothing kept")


def test_fastack_removes_every_copy(cluster3):
    c = cluster3
    job_id = addjob(c[0], "q", "body", "REPLICATE", 3)
    assert len(c.job_holders(job_id)) == 3
    assert c[1].execute_command("FASTACK", job_id) == 1
    wait_for(lambda: c.registered_jobs() == [0, 0, 0], 5, message="fastack everywhere")
    # FASTACK on a node that has no copy: broadcast, still deleted.
    job_id = addjob(c[0], "q", "body", "REPLICATE", 2)
    other = ({0, 1, 2} - set(c.job_holders(job_id))).pop()
    assert c[other].execute_command("FASTACK", job_id) == 0
    wait_for(lambda: c.registered_jobs() == [0, 0, 0], 5, message="fastack broadcast")


def test_pause_bcast_reaches_every_node(cluster3):
    c = cluster3
    assert c[0].execute_command("PAUSE", "pq", "in", "bcast") == b"in"
    for i in range(3):
        wait_for(lambda: c[i].execute_command("PAUSE", "pq", "state") == b"in", 5,
                 message=f"pause on node {i}")
    with pytest.raises(redis.ResponseError, match="PAUSED"):
        addjob(c[2], "pq", "body", "REPLICATE", 1)
    assert c[1].execute_command("PAUSE", "pq", "all", "bcast") == b"all"
    wait_for(lambda: all(c[i].execute_command("PAUSE", "pq", "state") == b"all"
                         for i in range(3)), 5, message="pause all")
    c[2].execute_command("PAUSE", "pq", "none", "bcast")
    wait_for(lambda: all(c[i].execute_command("PAUSE", "pq", "state") == b"none"
                         for i in range(3)), 5, message="unpaused")
    addjob(c[0], "pq", "body", "REPLICATE", 3)


def test_retry_1_without_consumers_keeps_one_queued_copy(cluster3):
    c = cluster3
    job_ids = [addjob(c[i], "rq", f"b{i}", "REPLICATE", 3, "RETRY", 1) for i in range(3)]
    deadline = time.monotonic() + 4
    samples = 0
    while time.monotonic() < deadline:
        for job_id in job_ids:
            queued = _queued_on(c, job_id)
            assert len(queued) == 1, (job_id, queued)
        samples += 1
    assert samples > 10
    for i, job_id in enumerate(job_ids):
        info = show(c[i], job_id)
        assert info["state"] == "queued", "the origin keeps it"
        assert info["additional-deliveries"] == 0


def test_no_duplicate_delivery_in_a_healthy_cluster(cluster3):
    """Producers and consumers on every node, quick acks, RETRY 2: each
    job is delivered exactly once."""
    c = cluster3
    total = 240
    deliveries = collections.Counter()
    counters = {}
    lock = threading.Lock()
    stop = threading.Event()
    errors = []

    def consume(i):
        client = redis.Redis(port=c.servers[i].port, socket_timeout=30)
        try:
            while not stop.is_set():
                jobs = client.execute_command("GETJOB", "TIMEOUT", 200, "COUNT", 5,
                                              "WITHCOUNTERS", "FROM", "dq")
                for job in jobs or []:
                    job_id = job[1].decode()
                    with lock:
                        deliveries[job_id] += 1
                        counters[job_id] = (job[4], job[6])
                    time.sleep(random.random() * 0.01)
                    client.execute_command("ACKJOB", job_id)
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            client.close()

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    added = []
    try:
        for n in range(total):
            i = n % 3 if n % 5 else 0  # node 0 produces more
            added.append(addjob(c[i], "dq", f"job-{n}", "REPLICATE", 1 + n % 3, "RETRY", 2))
        wait_for(lambda: len(deliveries) == total, 20, interval=0.1,
                 message=f"{total} jobs delivered")
        time.sleep(2.5)  # past RETRY: a duplicate would show up now
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    assert set(deliveries) == set(added)
    dups = {k: v for k, v in deliveries.items() if v != 1}
    assert not dups, f"{len(dups)} jobs delivered more than once: {list(dups.items())[:5]}"
    assert all(v == (0, 0) for v in counters.values())
    wait_for(lambda: c.registered_jobs() == [0, 0, 0], 10, message="all acks collected")
