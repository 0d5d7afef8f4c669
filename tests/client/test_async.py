"""trisque.client.AsyncClient against real nodes: the same API as Client
with await, the typed errors, failover and the ACK routing.  The suite's
async tests run under trio (pytest-trio), so each test here runs its
coroutine with asyncio.run."""

import asyncio
import time

import pytest

from tests.client.conftest import addr, dead_address
from tests.client.test_sync import ackjob_calls
from tests.cluster.conftest import addjob
from trisque.client import (
    AsyncClient, AuthenticationError, Job, NodeTimeoutError, NoJobError, NoNodeAvailableError,
    NoReplicationError, OutOfMemoryError, QueuePausedError,
)


@pytest.mark.parametrize("protocol", [2, 3])
def test_every_method(fresh, protocol):
    async def main():
        async with AsyncClient(addr(fresh), protocol=protocol) as c:
            job_id = await c.add_job("q", b"x\x00", retry_s=5, ttl_s=600, replicate=1)
            assert await c.qlen("q") == 1
            assert [j.id for j in await c.qpeek("q", 5)] == [job_id]
            assert (await c.qstat("q")).len == 1
            assert await c.qstat("none") is None
            [job] = await c.get_jobs("q", timeout_ms=1000, withcounters=True)
            assert job == Job(job_id, "q", b"x\x00", 0, 0)
            state = await c.show(job_id)
            assert (state.state, state.retry_s, state.ttl_s) == ("active", 5, 600)
            assert await c.working(job_id) == 5
            assert await c.nack(job_id) == 1
            assert await c.dequeue(job_id) == 1
            assert await c.enqueue(job_id) == 1
            [job] = await c.get_jobs(["other", "q"], nohang=True, withcounters=True)
            assert job.nacks == 1
            assert await c.ack(job_id) == 1
            assert await c.show(job_id) is None
            with pytest.raises(NoJobError):
                await c.working(job_id)
            assert await c.get_jobs("q", timeout_ms=100) == []
            ids = {await c.add_job(f"s{i % 3}", "x", async_=True) for i in range(25)}
            assert {i async for i in c.jscan(count=4)} == ids
            assert {q async for q in c.qscan(count=1, minlen=1)} == {"s0", "s1", "s2"}
            assert await c.fast_ack(*ids) == 25
            assert await c.del_job(job_id) == 0
            assert (await c.hello()).nodes[0].port == fresh.port
            assert (await c.info("jobs"))["registered_jobs"] == "0"
            assert await c.ping() == "PONG"
            assert await c.pause("q", "in") == "in"
            with pytest.raises(QueuePausedError):
                await c.add_job("q", "x")
            with pytest.raises(NoReplicationError):
                await c.add_job("p", "x", replicate=2)
            assert await c.pause("q", "none") == "none"
            # a blocked GETJOB served by a job added meanwhile
            waiting = asyncio.ensure_future(c.get_jobs("late", timeout_ms=5000))
            await asyncio.sleep(0.1)
            late = await c.add_job("late", "x")
            assert [j.id for j in await waiting] == [late]
    asyncio.run(main())


def test_oom(fresh):
    async def main():
        async with AsyncClient(addr(fresh)) as c:
            await c.add_job("q", "x")
            with fresh.client() as raw:
                raw.execute_command("CONFIG", "SET", "maxmemory", "1")
            with pytest.raises(OutOfMemoryError):
                await c.add_job("q", "y")
    asyncio.run(main())


def test_dead_and_hanging_nodes(silent_node):
    async def main():
        async with AsyncClient([dead_address(), silent_node], read_timeout_s=0.5) as c:
            started = time.monotonic()
            with pytest.raises(NoNodeAvailableError) as e:
                await c.qlen("q")
            assert isinstance(e.value.errors[1], NodeTimeoutError)
            assert time.monotonic() - started < 5
    asyncio.run(main())


@pytest.mark.parametrize("protocol", [2, 3])
def test_auth(make_server, protocol):
    srv = make_server(config="requirepass pw\n")

    async def main():
        async with AsyncClient(addr(srv), password="pw", protocol=protocol) as c:
            assert await c.ping() == "PONG"
        async with AsyncClient(addr(srv), password="nope", protocol=protocol) as c:
            with pytest.raises(AuthenticationError):
                await c.ping()
    asyncio.run(main())


def test_failover_and_ack_routing(make_cluster):
    cluster = make_cluster(3)
    servers = cluster.servers

    async def main():
        async with AsyncClient([addr(s) for s in servers], read_timeout_s=5) as c:
            created_on_2 = addjob(cluster[2], "r", "x", "REPLICATE", 3)
            before = [ackjob_calls(cluster[i]) for i in range(3)]
            assert await c.ack(created_on_2) == 1
            after = [ackjob_calls(cluster[i]) for i in range(3)]
            assert [a - b for a, b in zip(after, before)] == [0, 0, 1]
            cluster.kill(0)  # kill -9 the preferred node
            job_id = await c.add_job("f", "x", replicate=2)
            assert c.topology.preferred.port == servers[1].port
            [job] = await c.get_jobs("f", timeout_ms=5000)
            assert job.id == job_id
            assert await c.ack(job_id) == 1
    asyncio.run(main())


def test_idle_connections_closed_by_the_node_are_not_used(make_server):
    srv = make_server(config="timeout 1\n")

    async def main():
        async with AsyncClient(addr(srv)) as c:
            await c.add_job("q", "x")
            deadline = time.monotonic() + 10
            while not c._pool(c.topology.preferred)._idle[0].looks_dead():
                assert time.monotonic() < deadline, "the idle timeout never closed it"
                await asyncio.sleep(0.05)
            assert await c.qlen("q") == 1
            srv.restart()
            assert await c.qlen("q") == 0
    asyncio.run(main())
