"""Celery on trisque (issue 27, item 2): a real ``celery worker`` process
on a 3-node cluster, through trisque.celery's transport and result backend.

Each test copies tests/integrations/celery_tasks.py into its directory,
starts workers there, and sends tasks from this process with the same app.
"""

import time
from pathlib import Path

import pytest

from tests.cluster.conftest import build_cluster
from tests.harness import wait_for
from tests.integrations.conftest import BIN, node_urls

pytest.importorskip("celery")

TASKS = Path(__file__).with_name("celery_tasks.py")


def start_worker(workers, nodes, name, concurrency=2):
    return workers.start([str(BIN / "celery"), "-A", "celery_tasks", "worker",
                          "-c", str(concurrency), "-n", f"{name}@%h", "--without-mingle",
                          "--without-gossip", "--loglevel", "info"],
                         {"TRISQUE_NODES": nodes, "MARKS": str(workers.directory)}, name)


def results(async_results, timeout):
    return [r.get(timeout=timeout) for r in async_results]


def test_tasks_results_countdown_retries_and_remote_control(cluster, workers, monkeypatch):
    nodes = node_urls(cluster)
    tasks = workers.load(TASKS, nodes, monkeypatch)
    start_worker(workers, nodes, "w1")
    try:
        sent = [tasks.add.delay(i, i) for i in range(200)]
        assert results(sent, 60) == [2 * i for i in range(200)]

        started = time.monotonic()
        later = tasks.add.apply_async((1, 2), countdown=2)
        # The countdown is the job's DELAY: queued nowhere until it is due
        assert sum(c.execute_command("QLEN", "celery") for c in cluster.clients) == 0
        assert later.get(timeout=30) == 3
        assert time.monotonic() - started >= 1.5

        assert tasks.flaky.delay().get(timeout=30) == 2  # retried twice, then done

        replies = tasks.app.control.inspect(timeout=5).ping()
        assert any(name.startswith("w1@") and reply == {"ok": "pong"}
                   for name, reply in (replies or {}).items()), replies
    except BaseException:
        print(workers.logs())
        raise


def test_a_task_held_by_a_killed_worker_is_done_by_another(cluster, workers, monkeypatch):
    nodes = node_urls(cluster)
    tasks = workers.load(TASKS, nodes, monkeypatch)
    first = start_worker(workers, nodes, "doomed", concurrency=1)
    result = tasks.slow.delay("long", 3)
    wait_for(lambda: workers.started("long") >= 1, 60,
             message="the first worker to start the task")
    workers.kill(first)  # SIGKILL mid-task: never acked
    start_worker(workers, nodes, "rescuer", concurrency=1)
    try:
        assert result.get(timeout=60) == "long"  # after the job's RETRY (4 s)
    except BaseException:
        print(workers.logs())
        raise
    assert workers.started("long") >= 2  # at least once: it ran again, on the rescuer


def test_a_task_of_higher_priority_runs_first(cluster, workers, monkeypatch):
    nodes = node_urls(cluster)
    tasks = workers.load(TASKS, nodes, monkeypatch)
    low = [tasks.slow.delay(f"low{i}", 0) for i in range(5)]
    high = tasks.slow.apply_async(("high", 0), priority=9)  # sent last
    start_worker(workers, nodes, "one", concurrency=1)
    try:
        assert [r.get(timeout=60) for r in low + [high]] == [f"low{i}" for i in range(5)] + ["high"]
    except BaseException:
        print(workers.logs())
        raise
    starts = sorted(workers.directory.glob("*.*.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
    assert starts[0].name.startswith("high."), [p.name for p in starts]


def test_a_node_killed_while_tasks_flow_loses_no_task(workers, monkeypatch):
    own = build_cluster(3)
    try:
        nodes = node_urls(own)
        tasks = workers.load(TASKS, nodes, monkeypatch)
        start_worker(workers, nodes, "w1")
        sent = [tasks.add.delay(i, 1) for i in range(100)]
        own.kill(0)  # kill -9 of the node the clients prefer, tasks in flight
        sent += [tasks.add.delay(i, 1) for i in range(100, 200)]
        try:
            assert results(sent, 90) == [i + 1 for i in range(200)]
        except BaseException:
            print(workers.logs())
            own.print_logs()
            raise
    finally:
        own.close()
