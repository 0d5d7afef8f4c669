"""Synchronous replication: REPLICATE n copies, defaults, -NOREPL (at once
and on timeout, with the copies deleted), ASYNC, pipelined ADDJOBs."""

import socket
import threading
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.harness import wait_for

from .conftest import addjob, show


def _holders_by_show(c, job_id):
    return {i: show(c[i], job_id) for i in c.alive() if show(c[i], job_id)}


def test_replicate_3_of_5_leaves_exactly_3_copies(make_cluster):
    """Exactly 3 copies when the copies were confirmed before the first
    50 ms retry (which adds a 4th node, by design, for a slow cluster):
    an ADDJOB answered faster than that cannot have asked a 4th node."""
    c = make_cluster(5)
    ids = c.ids()
    exact_checked = 0
    for n in range(50):  # until 3 fast ones: a loaded machine answers few in 45 ms
        origin = n % 5
        start = time.monotonic()
        job_id = addjob(c[origin], "q", "body", "REPLICATE", 3)
        fast = time.monotonic() - start < 0.045
        delivered = set(show(c[origin], job_id)["nodes-delivered"])
        # Every node the origin sent a copy to holds one.
        wait_for(lambda: set(_holders_by_show(c, job_id)) == {ids.index(d) for d in delivered},
                 5, message="every listed node holds a copy")
        copies = _holders_by_show(c, job_id)
        assert len(copies) >= 3 and origin in copies
        for i, info in copies.items():
            assert info["repl"] == 3
            assert info["state"] == ("queued" if i == origin else "active")
        if fast:
            exact_checked += 1
            assert len(copies) == 3, "no extra copy when replicated at once"
            for info in copies.values():
                assert set(info["nodes-delivered"]) == delivered
        if exact_checked >= 3:
            break
    assert exact_checked >= 1, "no ADDJOB was answered within 45 ms"
    # REPLICATE 5 in a 5-node cluster: every node.
    job_id = addjob(c[1], "q", "body", "REPLICATE", 5)
    assert len(_holders_by_show(c, job_id)) == 5


def test_default_replicate_is_min_3_size(cluster3, make_cluster):
    job_id = addjob(cluster3[0], "q", "body")
    assert show(cluster3[0], job_id)["repl"] == 3
    assert len(cluster3.job_holders(job_id)) == 3
    pair = make_cluster(2)
    job_id = addjob(pair[1], "q", "body")
    assert show(pair[1], job_id)["repl"] == 2
    assert pair.job_holders(job_id) == [0, 1]


def test_norepl_at_once_when_not_enough_nodes(cluster3):
    start = time.monotonic()
    with pytest.raises(redis.ResponseError, match="^NOREPL Not enough reachable"):
        addjob(cluster3[0], "q", "body", "REPLICATE", 4, timeout=10000)
    assert time.monotonic() - start < 5, "refused at once, not at the 10 s timeout"
    assert cluster3.registered_jobs() == [0, 0, 0]


def test_norepl_at_timeout_deletes_the_copies(cluster3):
    c = cluster3
    # Node 2 refuses copies for this queue (paused IN); node 1 takes one.
    c[2].execute_command("PAUSE", "q", "in")
    start = time.monotonic()
    with pytest.raises(redis.ResponseError, match="^NOREPL Timeout"):
        addjob(c[0], "q", "body", "REPLICATE", 3, timeout=500)
    elapsed = time.monotonic() - start
    assert 0.4 < elapsed < 3, elapsed
    # The best-effort delete reaches node 1's copy; nothing is left anywhere.
    wait_for(lambda: c.registered_jobs() == [0, 0, 0], 5, message="copies deleted")
    assert c[0].execute_command("QLEN", "q") == 0
    # With the queue unpaused the same request succeeds.
    c[2].execute_command("PAUSE", "q", "none")
    job_id = addjob(c[0], "q", "body", "REPLICATE", 3, timeout=2000)
    assert len(c.job_holders(job_id)) == 3


def test_norepl_when_the_needed_nodes_die(make_cluster):
    c = make_cluster(3)
    c.kill(1)
    c.kill(2)
    # Until failure detection notices, the nodes still count as reachable:
    # the ADDJOB waits and times out; afterwards it is refused at once.
    with pytest.raises(redis.ResponseError, match="^NOREPL"):
        addjob(c[0], "q", "body", "REPLICATE", 2, timeout=300)
    wait_for(lambda: c.registered_jobs() == [0], 5, message="aborted job freed")
    wait_for(lambda: int(c[0].execute_command("CLUSTER", "INFO").split(b"cluster_reachable_nodes:")[1].split(b"\r")[0]) == 0,
             10, message="peers unreachable")
    with pytest.raises(redis.ResponseError, match="^NOREPL Not enough"):
        addjob(c[0], "q", "body", "REPLICATE", 2, timeout=5000)
    # REPLICATE 1 still works alone.
    job_id = addjob(c[0], "q", "body", "REPLICATE", 1)
    assert show(c[0], job_id)["state"] == "queued"


def test_async_replies_at_once_and_replicates_in_background(cluster3):
    c = cluster3
    c[2].execute_command("PAUSE", "q", "in")  # so sync replication could never finish
    start = time.monotonic()
    job_id = addjob(c[0], "q", "body", "REPLICATE", 3, "ASYNC", timeout=5000)
    assert time.monotonic() - start < 2.5, "at once, not at the 5 s timeout"
    assert show(c[0], job_id)["state"] == "queued"
    wait_for(lambda: c.job_holders(job_id) == [0, 1], 5, message="async copy on node 1")
    c[2].execute_command("PAUSE", "q", "none")
    job_id = addjob(c[1], "q", "body", "REPLICATE", 3, "ASYNC")
    wait_for(lambda: len(c.job_holders(job_id)) == 3, 5, message="3 async copies")
    assert c[1].execute_command("GETJOB", "NOHANG", "FROM", "q")[0][1].decode() is not None


def test_pipelined_addjobs_are_answered_in_order(cluster3):
    c = cluster3
    pipe = c[0].pipeline(transaction=False)
    for i in range(100):
        pipe.execute_command("ADDJOB", "pq", f"body-{i}", 5000, "REPLICATE", 3)
        if i % 25 == 0:
            pipe.execute_command("PING")
    replies = pipe.execute()
    assert len(replies) == 104
    job_ids = [r.decode() for r in replies if r is not True]
    assert len(job_ids) == 100 and len(set(job_ids)) == 100
    for i, job_id in enumerate(job_ids):
        assert show(c[0], job_id)["body"] == f"body-{i}".encode()
    # Every job has its 3 copies and FIFO order is the pipeline's.
    for i in (1, 2):
        assert c[i].info()["registered_jobs"] == 100
    got = c[0].execute_command("GETJOB", "COUNT", 100, "FROM", "pq")
    assert [j[1].decode() for j in got] == job_ids


def test_pipelined_addjobs_with_a_failure_in_the_middle(cluster3):
    """A -NOREPL in the middle of a pipeline does not reorder the replies."""
    c = cluster3
    pipe = c[0].pipeline(transaction=False)
    for i in range(10):
        pipe.execute_command("ADDJOB", "pq", f"b{i}", 5000, "REPLICATE", 4 if i == 5 else 3)
    replies = pipe.execute(raise_on_error=False)
    assert isinstance(replies[5], redis.ResponseError)
    assert all(isinstance(r, bytes) for i, r in enumerate(replies) if i != 5)
    bodies = [show(c[0], r.decode())["body"] for i, r in enumerate(replies) if i != 5]
    assert bodies == [f"b{i}".encode() for i in range(10) if i != 5]


def test_client_gone_while_waiting_deletes_the_copies(cluster3):
    c = cluster3
    c[2].execute_command("PAUSE", "q", "in")
    with socket.create_connection(("127.0.0.1", c.servers[0].port)) as sock:
        sock.sendall(b"ADDJOB q body 0 REPLICATE 3\r\n")
        wait_for(lambda: c.registered_jobs() == [1, 1, 0], 5, message="waiting ADDJOB")
        sock.settimeout(0.3)
        with pytest.raises(socket.timeout):
            sock.recv(100)  # no reply: it waits for the third copy
    wait_for(lambda: c.registered_jobs() == [0, 0, 0], 5,
             message="abandoned ADDJOB cleaned up")


def test_addjob_goes_on_as_soon_as_a_restarted_node_is_back(make_cluster):
    """A node without a link but not yet suspected (it is restarting) is
    tried again every 50 ms: the waiting ADDJOB completes right after the
    node is back, not at the next 1 s re-send.  A long node timeout keeps
    the node unsuspected however long its restart takes."""
    c = make_cluster(4, node_timeout_ms=15000)
    c.kill(3)
    result = {}

    def add():
        start = time.monotonic()
        try:
            result["id"] = addjob(c[0], "q", "body", "REPLICATE", 4, timeout=8000)
        except redis.ResponseError as exc:
            result["error"] = exc
        result["done"] = time.monotonic()
        result["took"] = result["done"] - start
    thread = threading.Thread(target=add)
    thread.start()
    time.sleep(0.2)
    assert "done" not in result, "it waits for the 4th node"
    c.restart(3)
    back = time.monotonic()
    thread.join()
    assert "id" in result, result
    assert result["done"] - back < 0.4, (result["done"] - back, result["took"])
    assert len(c.job_holders(result["id"])) == 4


def test_appendfsync_always_copies_are_on_disk_before_the_reply(make_cluster):
    """With appendfsync always the bus holds a replica's GOTJOB until its
    copy is fsynced, then lets it go: pipelined replicated ADDJOBs are all
    answered (a hold never released would end them in -NOREPL), and a
    replica killed right after the replies reloads every copy from its AOF
    (a kill -9 keeps written data, so this checks the AOF, not the fsync)."""
    c = make_cluster(3, config="appendonly yes\nappendfsync always\n")
    pipe = c[0].pipeline(transaction=False)
    for i in range(200):
        pipe.execute_command("ADDJOB", "q", f"body-{i}", 5000, "REPLICATE", 3)
    job_ids = [r.decode() for r in pipe.execute()]
    assert len(set(job_ids)) == 200
    c.kill(2)
    c.restart(2)
    assert c[2].info()["registered_jobs"] == 200
    for job_id in job_ids[::20]:
        assert show(c[2], job_id)["state"] == "active"


def test_a_node_loading_its_aof_takes_no_copies_and_no_acks(make_cluster):
    """A restarted node joins the cluster only once its AOF is loaded.  It
    used to rejoin first: a copy it confirmed, or an ack it took, while
    loading was kept in memory only (the AOF opens for appending after the
    load), so after a second crash an ADDJOB answered for two copies had
    one, and an acked job came back (found by a kill -9 chaos run)."""
    c = make_cluster(2, config="appendonly yes\n")
    acked = addjob(c[1], "q", "acked while the other node loads", "REPLICATE", 2)
    for start in range(0, 100000, 5000):  # about a second of loading
        pipe = c[0].pipeline(transaction=False)
        for i in range(start, start + 5000):
            pipe.execute_command("ADDJOB", "filler", f"body{i}", 0, "REPLICATE", 1)
        pipe.execute()
    c.kill(0)
    c.servers[0].start(wait=False)
    probe = c.servers[0].client(retry=Retry(NoBackoff(), 0))

    def loading():
        try:
            probe.ping()
            return None  # done already (or not loading yet: retried)
        except redis.BusyLoadingError:
            return True
        except redis.ConnectionError:
            return None
    wait_for(loading, 15, interval=0.005, message="the restarted node to load")
    assert c[1].execute_command("ACKJOB", acked) == 1
    added = []
    n = 0
    while loading():
        try:
            added.append(addjob(c[1], "q", f"during load {n}", "REPLICATE", 2,
                                timeout=100))
        except redis.ResponseError as exc:
            assert str(exc).startswith("NOREPL"), exc
        n += 1
    c.servers[0].wait_ready()
    c.clients[0] = c.servers[0].client()
    added.append(addjob(c[1], "q", "after the load", "REPLICATE", 2, timeout=10000))
    # the ack's garbage collection has reached the reloaded node
    wait_for(lambda: show(c[1], acked) is None and show(c[0], acked) is None, 15,
             message="the acked job to be forgotten on both nodes")
    c.kill(0)
    c.restart(0)
    for job_id in added:
        assert show(c[0], job_id) is not None, job_id
    assert show(c[0], acked) is None


def test_long_pipeline_sends_its_copies_in_several_frames(cluster3):
    """A pipeline far longer than the bus's early-flush batch (the origin
    sends REPLJOBs while it is still running the pipeline, replicas answer
    GOTJOB in batches as well): every job is answered, in order, and held
    by every node."""
    c = cluster3
    pipe = c[0].pipeline(transaction=False)
    count = 1000
    for i in range(count):
        pipe.execute_command("ADDJOB", "lq", f"b{i}", 5000, "REPLICATE", 3)
    job_ids = [r.decode() for r in pipe.execute()]
    assert len(set(job_ids)) == count
    assert [c[i].info()["registered_jobs"] for i in range(3)] == [count] * 3
    got = c[0].execute_command("GETJOB", "COUNT", count, "FROM", "lq")
    assert [j[1].decode() for j in got] == job_ids
    assert [j[2] for j in got[:3]] == [b"b0", b"b1", b"b2"]
