"""Worker (threads) against a real node: ACK after the handler, NACK
(never ACK) after it raised, concurrency, WORKING heartbeats for a job
that outlives its RETRY, and SIGTERM on a real worker process: the job in
hand finishes, or is NACKed at the shutdown deadline."""

import os
import signal
import subprocess
import sys
import threading

import pytest

from tests.client.conftest import addr
from tests.harness import ROOT, wait_for
from trisque.client import Client, Worker


@pytest.fixture
def client(fresh):
    with Client(addr(fresh)) as c:
        yield c


def run_in_thread(worker):
    thread = threading.Thread(target=worker.run, kwargs={"install_signal_handlers": False},
                              daemon=True)
    thread.start()
    return thread


def test_ack_after_success_nack_after_failure(client):
    seen = []
    failures = []

    def good(job):
        seen.append(job.body)

    def bad(job):
        seen.append(job.body)
        raise ValueError("handler failed")

    def on_failure(c, job, error):
        failures.append((job.id, type(error).__name__, job.nacks))
        c.nack(job.id)

    worker = Worker(client, {"good": good, "bad": bad}, concurrency=2, poll_ms=200,
                    on_failure=on_failure)
    thread = run_in_thread(worker)
    ok = [client.add_job("good", f"g{i}", retry_s=30) for i in range(5)]
    failing = client.add_job("bad", "b", retry_s=30)
    wait_for(lambda: all(client.show(j) is None for j in ok), message="good jobs acked")
    wait_for(lambda: len(failures) >= 3, message="the failing job delivered again")
    worker.stop()
    thread.join(10)
    assert not thread.is_alive()
    assert sorted(b for b in seen if b.startswith(b"g")) == [b"g%d" % i for i in range(5)]
    # never acked: still known, NACKed each time (counted by the node)
    state = client.show(failing)
    assert state is not None and state.nacks >= 3
    assert [f[:2] for f in failures[:3]] == [(failing, "ValueError")] * 3
    assert [f[2] for f in failures[:3]] == [0, 1, 2]


def test_default_failure_policy_nacks(client):
    worker = Worker(client, {"q": lambda job: 1 / 0}, poll_ms=200)
    thread = run_in_thread(worker)
    job_id = client.add_job("q", "x", retry_s=30)
    wait_for(lambda: client.show(job_id).nacks >= 2, message="NACKed twice")
    worker.stop()
    thread.join(10)
    assert client.show(job_id) is not None


def test_concurrency_runs_handlers_at_once(client):
    barrier = threading.Barrier(3, timeout=20)
    worker = Worker(client, {"c": lambda job: barrier.wait()}, concurrency=3, poll_ms=200)
    thread = run_in_thread(worker)
    ids = [client.add_job("c", f"{i}", retry_s=60) for i in range(3)]
    wait_for(lambda: all(client.show(j) is None for j in ids), timeout=30,
             message="three handlers meeting at the barrier, then acked")
    worker.stop()
    thread.join(10)
    assert not barrier.broken


def test_heartbeats_keep_a_long_job_from_being_requeued(client):
    runs = []
    release = threading.Event()

    def slow(job):
        runs.append(job.id)
        release.wait(30)

    worker = Worker(client, {"slow": slow}, concurrency=2, poll_ms=200)
    thread = run_in_thread(worker)
    job_id = client.add_job("slow", "x", retry_s=1)
    wait_for(lambda: runs, message="the job taken")
    for _ in range(12):  # three RETRY periods of running
        threading.Event().wait(0.25)
        assert client.show(job_id).state == "active"  # never requeued
    assert runs == [job_id]  # so the other thread never got it
    release.set()
    wait_for(lambda: client.show(job_id) is None, message="acked after the heartbeats")
    worker.stop()
    thread.join(10)


def start_worker_process(port, queue, shutdown_s, log_path, mode=()):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "tests.client.worker_process", str(port),
                             queue, str(shutdown_s), str(log_path), *mode],
                            cwd=ROOT, env=env, stderr=subprocess.PIPE)


def log_lines(path):
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


@pytest.mark.parametrize("mode", [(), ("async",)], ids=["threads", "asyncio"])
def test_sigterm_finishes_the_job_in_hand(client, fresh, tmp_path, mode):
    log = tmp_path / "worker.log"
    proc = start_worker_process(fresh.port, "term", 30, log, mode)
    try:
        job_id = client.add_job("term", "1.5", retry_s=60)
        wait_for(lambda: f"start {job_id}" in log_lines(log), timeout=20, message="job started")
        proc.send_signal(signal.SIGTERM)
        later = client.add_job("term", "0", retry_s=60)  # must not be taken now
        assert proc.wait(20) == 0, proc.stderr.read().decode()
        lines = log_lines(log)
        assert lines[-2:] == [f"done {job_id}", "exited"]
        assert client.show(job_id) is None  # acked
        assert f"start {later}" not in lines
        later_state = client.show(later)
        assert later_state.state == "queued"
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("mode", [(), ("async",)], ids=["threads", "asyncio"])
def test_sigterm_nacks_the_job_in_hand_at_the_deadline(client, fresh, tmp_path, mode):
    log = tmp_path / "worker.log"
    proc = start_worker_process(fresh.port, "long", 1, log, mode)
    try:
        job_id = client.add_job("long", "60", retry_s=60)
        wait_for(lambda: f"start {job_id}" in log_lines(log), timeout=20, message="job started")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0, proc.stderr.read().decode()
        lines = log_lines(log)
        assert f"done {job_id}" not in lines and lines[-1] == "exited"
        state = client.show(job_id)
        assert (state.state, state.nacks) == ("queued", 1)  # given back, not acked
    finally:
        proc.kill()
        proc.wait()


def test_async_worker(fresh):
    """AsyncWorker: ACK after success, NACK after failure, handlers
    running at once, and heartbeats for a job that outlives its RETRY."""
    import asyncio

    from trisque.client import AsyncClient, AsyncWorker

    async def main():
        async with AsyncClient(addr(fresh)) as c:
            running = []
            all_in = asyncio.Event()
            done = []

            async def together(job):
                running.append(job.id)
                if len(running) == 3:
                    all_in.set()
                await asyncio.wait_for(all_in.wait(), 20)
                done.append(job.id)

            async def failing(job):
                raise RuntimeError("no")

            async def slow(job):
                done.append(job.id)
                await asyncio.sleep(3)  # three RETRY periods

            worker = AsyncWorker(c, {"t": together, "f": failing, "s": slow}, concurrency=4,
                                 poll_ms=200)
            task = asyncio.create_task(worker.run(install_signal_handlers=False))
            ids = [await c.add_job("t", f"{i}", retry_s=60) for i in range(3)]
            bad = await c.add_job("f", "x", retry_s=60)
            long = await c.add_job("s", "x", retry_s=1)
            deadline = asyncio.get_running_loop().time() + 30
            while asyncio.get_running_loop().time() < deadline:
                states = [await c.show(j) for j in ids + [long]]
                bad_state = await c.show(bad)
                if all(s is None for s in states) and bad_state.nacks >= 2:
                    break
                await asyncio.sleep(0.1)
            assert all([await c.show(j) is None for j in ids + [long]])
            assert (await c.show(bad)).nacks >= 2  # never acked
            assert done.count(long) == 1  # heartbeats: never delivered twice
            worker.stop()
            await asyncio.wait_for(task, 10)
    asyncio.run(main())


def test_worker_survives_a_killed_node(make_cluster):
    """A worker on a 3-node cluster while the node it uses is killed with
    kill -9: every job is handled (at least once) and acknowledged."""
    cluster = make_cluster(3)
    nodes = [addr(s) for s in cluster.servers]
    handled = set()
    with Client(nodes, read_timeout_s=5) as producer:
        ids = [producer.add_job("jobs", f"{i}", replicate=2, retry_s=1) for i in range(20)]
    with Client(nodes, read_timeout_s=5) as client:
        worker = Worker(client, {"jobs": lambda job: handled.add(job.id)}, concurrency=2,
                        poll_ms=200)
        thread = run_in_thread(worker)
        wait_for(lambda: len(handled) >= 5, timeout=30, message="some jobs handled")
        cluster.kill(0)  # the preferred node of both clients
        wait_for(lambda: handled >= set(ids), timeout=60, message="every job handled")
        pending = {"queued", "active", "wait-repl"}
        wait_for(lambda: not any(cluster.job_holders(j, pending) for j in ids), timeout=60,
                 message="every job acknowledged on the live nodes")
        worker.stop()
        thread.join(10)
    assert not thread.is_alive()
