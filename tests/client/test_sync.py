"""trisque.client.Client against real nodes: every method, RESP2 and RESP3,
the typed errors, failover when a node dies, and Disque's routing rules."""

import os
import threading
import time

import pytest

from tests.client.conftest import addr, dead_address
from tests.cluster.conftest import addjob, show
from tests.harness import wait_for
from trisque.client import (
    AuthenticationError, BadJobIdError, Client, Job, LoadingError, NodeError, NodeTimeoutError,
    NoJobError, NoNodeAvailableError, NoReplicationError, OutOfMemoryError, QueueFullError,
    QueuePausedError,
)


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def client(fresh, request):
    with Client(addr(fresh), protocol=request.param) as c:
        yield c


def test_add_get_ack(client):
    job_id = client.add_job("q", b"body \x00\xff", retry_s=5)
    assert job_id.startswith("D-") and len(job_id) == 40
    assert client.qlen("q") == 1
    [job] = client.get_jobs("q", timeout_ms=1000)
    assert job == Job(id=job_id, queue="q", body=b"body \x00\xff")
    assert job.creator == client.hello().node_id[:8]
    state = client.show(job_id)
    assert (state.state, state.retry_s, state.queue, state.body) == ("active", 5, "q", b"body \x00\xff")
    assert client.ack(job_id) == 1
    assert client.show(job_id) is None
    assert client.get_jobs("q", nohang=True) == []


def test_add_job_options(client):
    job_id = client.add_job("q", "text body", replicate=1, delay_s=30, retry_s=7, ttl_s=600,
                            timeout_ms=2000)
    state = client.show(job_id)
    assert (state.repl, state.delay_s, state.retry_s, state.ttl_s) == (1, 30, 7, 600)
    assert state.state == "active"  # delayed: not queued yet
    assert client.qlen("q") == 0
    async_id = client.add_job("q2", "a", async_=True)
    assert client.show(async_id).queue == "q2"
    client.add_job("full", "1", maxlen=1)
    with pytest.raises(QueueFullError) as e:
        client.add_job("full", "2", maxlen=1)
    assert e.value.code == "MAXLEN"
    with pytest.raises(ValueError):
        client.add_job("q", "x", timeout_ms=0)


def test_get_jobs_counters_count_and_timeout(client):
    ids = [client.add_job("a", f"{i}") for i in range(3)]
    b0 = client.add_job("b", "b0")
    jobs = client.get_jobs(["a", "b"], count=2, timeout_ms=1000, withcounters=True)
    assert [j.id for j in jobs] == [ids[0], b0]  # one per queue in turn, as Disque
    assert all(j.nacks == 0 and j.additional_deliveries == 0 for j in jobs)
    assert client.nack(jobs[0].id) == 1
    again = client.get_jobs("a", count=5, withcounters=True, timeout_ms=1000)
    assert {j.id: j.nacks for j in again} == {ids[0]: 1, ids[1]: 0, ids[2]: 0}
    assert client.get_jobs("empty", nohang=True) == []
    started = time.monotonic()
    assert client.get_jobs("empty", timeout_ms=200) == []
    assert time.monotonic() - started >= 0.15  # the node held it, then a null


def test_get_jobs_without_timeout_waits_for_a_job(client, fresh):
    def add_later():
        time.sleep(0.3)
        with Client(addr(fresh)) as producer:
            added.append(producer.add_job("later", "x"))
    added = []
    thread = threading.Thread(target=add_later)
    thread.start()
    [job] = client.get_jobs("later")  # as GETJOB TIMEOUT 0: until a job comes
    thread.join()
    assert job.id == added[0]
    thread = threading.Thread(target=add_later)
    thread.start()
    jobs = client.get_jobs("later", timeout_ms=0)
    thread.join()
    assert [j.id for j in jobs] == added[1:]
    with pytest.raises(ValueError):
        client.get_jobs("later", timeout_ms=-1)


def test_nack_counts_and_working(client):
    job_id = client.add_job("w", "x", retry_s=9)
    [job] = client.get_jobs("w", timeout_ms=1000)
    assert client.working(job.id) == 9
    assert client.nack(job.id) == 1
    [job] = client.get_jobs("w", timeout_ms=1000, withcounters=True)
    assert (job.id, job.nacks) == (job_id, 1)
    assert client.fast_ack(job_id) == 1
    assert client.show(job_id) is None
    with pytest.raises(NoJobError):
        client.working(job_id)


def test_queue_commands(client):
    ids = [client.add_job("qq", f"{i}") for i in range(3)]
    assert [j.id for j in client.qpeek("qq", 2)] == ids[:2]
    assert [j.id for j in client.qpeek("qq", -1)] == ids[-1:]
    stats = client.qstat("qq")
    assert (stats.name, stats.len, stats.jobs_in, stats.pause) == ("qq", 3, 3, "none")
    assert client.qstat("nothing") is None
    assert client.dequeue(ids[0]) == 1
    assert client.qlen("qq") == 2
    assert client.enqueue(ids[0]) == 1
    assert client.qlen("qq") == 3
    assert client.del_job(ids[1]) == 1
    assert client.qlen("qq") == 2
    assert client.pause("qq", "in") == "in"
    with pytest.raises(QueuePausedError) as e:
        client.add_job("qq", "refused")
    assert e.value.code == "PAUSED"
    assert client.pause("qq", "none") == "none"


def test_scans_iterate_every_page(client):
    ids = {client.add_job(f"s{i % 7}", f"{i}") for i in range(60)}
    assert set(client.jscan(count=5)) == ids
    assert len(set(client.jscan(queue="s3"))) == len([i for i in range(60) if i % 7 == 3])
    assert set(client.qscan(count=2)) == {f"s{i}" for i in range(7)}
    assert set(client.qscan(minlen=9)) == {"s0", "s1", "s2", "s3"}


def test_hello_info_ping(client, fresh):
    hello = client.hello()
    [me] = hello.nodes
    assert me.id == hello.node_id and me.port == fresh.port and me.priority == 1
    client.add_job("i", "x")
    assert client.info("jobs")["registered_jobs"] == "1"
    assert client.ping() == "PONG"


# ---------------------------------------------------------------- errors

def test_dead_node_is_a_typed_error_at_once():
    with Client([dead_address(), dead_address()], connect_timeout_s=2) as c:
        started = time.monotonic()
        with pytest.raises(NoNodeAvailableError) as e:
            c.add_job("q", "x")
        assert len(e.value.errors) == 2
        assert all(isinstance(err, NodeError) for err in e.value.errors)
        assert time.monotonic() - started < 2


def test_hanging_node_times_out(silent_node):
    with Client(silent_node, read_timeout_s=0.5) as c:
        started = time.monotonic()
        with pytest.raises(NoNodeAvailableError) as e:
            c.qlen("q")
        assert isinstance(e.value.errors[0], NodeTimeoutError)
        assert time.monotonic() - started < 5


@pytest.mark.parametrize("protocol", [2, 3])
def test_auth(make_server, protocol):
    srv = make_server(config="requirepass s3cret\n")
    with Client(addr(srv), password="s3cret", protocol=protocol) as c:
        assert c.ping() == "PONG"
        c.add_job("q", "x")
    with Client(f"trisque://:s3cret@127.0.0.1:{srv.port}", protocol=protocol) as c:
        assert c.qlen("q") == 1
    for password in ("wrong", None):
        with Client(addr(srv), password=password, protocol=protocol) as c:
            with pytest.raises(AuthenticationError):
                c.qlen("q")


def test_noreplication_oom_badid(client, fresh):
    with pytest.raises(NoReplicationError) as e:
        client.add_job("q", "x", replicate=3)  # a single node
    assert e.value.code == "NOREPL"
    with pytest.raises(BadJobIdError):
        client.ack("not-a-job-id")
    with fresh.client() as raw:
        raw.execute_command("CONFIG", "SET", "maxmemory", "1")
    with pytest.raises(OutOfMemoryError) as e:
        client.add_job("q", "x")
    assert e.value.code == "OOM"


def test_error_keeps_connection_usable(client):
    with pytest.raises(NoReplicationError):
        client.add_job("q", "x", replicate=5)
    assert client.qlen("q") == 0


# ---------------------------------------------------------------- cluster

def test_failover_when_a_node_is_killed(make_cluster):
    cluster = make_cluster(3)
    nodes = [addr(s) for s in cluster.servers]
    with Client(nodes, read_timeout_s=5) as c:
        first = c.add_job("f", "before", replicate=2, retry_s=1)  # requeued by its copy
        assert c.topology.preferred.port == cluster.servers[0].port
        cluster.kill(0)  # kill -9
        second = c.add_job("f", "after", replicate=2)
        assert c.topology.preferred.port == cluster.servers[1].port
        got = set()
        deadline = time.monotonic() + 30
        while got != {first, second} and time.monotonic() < deadline:
            for job in c.get_jobs("f", timeout_ms=500, count=10):
                got.add(job.id)
                c.ack(job.id)  # first's creator is dead: acked elsewhere
        assert got == {first, second}


def test_ack_goes_to_the_creator(cluster3):
    servers = cluster3.servers
    job_id = addjob(cluster3[1], "r", "x", "REPLICATE", 3)  # created on node 1
    calls_before = [ackjob_calls(cluster3[i]) for i in range(3)]
    with Client([addr(servers[0]), addr(servers[2]), addr(servers[1])]) as c:
        assert c.ack(job_id) == 1
        assert c.topology.preferred.port == servers[0].port  # unchanged
    calls_after = [ackjob_calls(cluster3[i]) for i in range(3)]
    assert [a - b for a, b in zip(calls_after, calls_before)] == [0, 1, 0]
    wait_for(lambda: not cluster3.job_holders(job_id), message="the ack to spread")
    # jobs of two creators in one call: one ACKJOB to each
    on_1, on_2 = (addjob(cluster3[i], "r", "x", "REPLICATE", 3) for i in (1, 2))
    calls_before = [ackjob_calls(cluster3[i]) for i in range(3)]
    with Client([addr(servers[0])]) as c:
        assert c.ack(on_1, on_2) == 2
    calls_after = [ackjob_calls(cluster3[i]) for i in range(3)]
    assert [a - b for a, b in zip(calls_after, calls_before)] == [0, 1, 1]


def test_ack_of_a_dead_creators_job_goes_elsewhere(make_cluster):
    cluster = make_cluster(3)
    job_id = addjob(cluster[1], "r", "x", "REPLICATE", 3)
    with Client([addr(s) for s in cluster.servers]) as c:
        c.hello()  # learns node 1 is the creator
        cluster.kill(1)
        assert c.ack(job_id) == 1
    assert show(cluster[0], job_id) is None or show(cluster[0], job_id)["state"] == "acked"


def test_consumer_moves_to_the_node_creating_its_jobs(cluster3):
    servers = cluster3.servers
    ids = {addjob(cluster3[2], "aff", f"{i}", "REPLICATE", 1) for i in range(8)}
    with Client([addr(servers[0]), addr(servers[1])], affinity_window=4) as c:
        assert c.topology.preferred.port == servers[0].port
        got = set()
        deadline = time.monotonic() + 30
        while len(got) < 4 and time.monotonic() < deadline:
            for job in c.get_jobs("aff", timeout_ms=500, count=2):
                got.add(job.id)
                c.ack(job.id)
        assert len(got) >= 4 and got <= ids
        # four jobs, all created on node 2 (learnt from HELLO): move there
        assert c.topology.preferred.port == servers[2].port


def ackjob_calls(redis_client):
    stats = redis_client.info("commandstats")
    return stats.get("cmdstat_ackjob", {}).get("calls", 0)


def test_loading_node_is_skipped(fresh, loading_node):
    with Client([loading_node, addr(fresh)]) as c:
        job_id = c.add_job("q", "x")  # served by the second node
        assert c.topology.preferred.port == fresh.port
        assert c.show(job_id).queue == "q"
    with Client(loading_node) as c:  # no other node: the reply, typed
        with pytest.raises(LoadingError) as e:
            c.qlen("q")
        assert e.value.code == "LOADING"


def test_idle_connections_closed_by_the_node_are_not_used(make_server):
    """A node's idle timeout, and a restart, close the pooled connections:
    the next call opens a new one instead of failing (one node only, so a
    failover could not hide it)."""
    srv = make_server(config="timeout 1\n")
    with Client(addr(srv)) as c:
        c.add_job("q", "x")
        wait_for(lambda: c._pool(c.topology.preferred)._idle[0].looks_dead(), timeout=10,
                 message="the idle timeout to close the connection")
        assert c.qlen("q") == 1
        srv.restart()  # no AOF: an empty node on the same port
        assert c.qlen("q") == 0


def test_a_forked_child_opens_its_own_connections(fresh):
    """A prefork worker (Celery's) forks after its client was used: the
    child must not read the sockets its parent still uses."""
    with Client(addr(fresh)) as c:
        c.add_job("fork", "x")
        pool = c._pool(c.topology.preferred)
        [inherited] = pool._idle
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report, never return into pytest
            code = 1
            try:
                connection, reused = pool.take()
                code = 0 if (not reused and connection is not inherited
                             and c.qlen("fork") == 1) else 2
            finally:
                os.write(write_end, bytes([code]))
                os._exit(0)
        os.close(write_end)
        assert os.read(read_end, 1) == b"\x00"
        os.waitpid(pid, 0)
        os.close(read_end)
        assert c.qlen("fork") == 1  # the parent's connection still in step
        assert pool._idle == [inherited]
