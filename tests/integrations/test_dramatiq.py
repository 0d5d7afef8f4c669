"""dramatiq on trisque (issue 27, item 3): real ``dramatiq`` worker
processes on a 3-node cluster through trisque.dramatiq's broker and the
Results middleware on TrisqueResultBackend."""

import time
from pathlib import Path

import pytest

from tests.cluster.conftest import build_cluster
from tests.harness import wait_for
from tests.integrations.conftest import BIN, node_urls

pytest.importorskip("dramatiq")
from dramatiq.message import Message  # noqa: E402

ACTORS = Path(__file__).with_name("dramatiq_tasks.py")


def start_worker(workers, nodes, name, threads=2):
    return workers.start([str(BIN / "dramatiq"), "dramatiq_tasks", "--processes", "1",
                          "--threads", str(threads)],
                         {"TRISQUE_NODES": nodes, "MARKS": str(workers.directory)}, name)


def test_messages_results_delays_retries_and_dead_letters(cluster, workers, monkeypatch):
    nodes = node_urls(cluster)
    actors = workers.load(ACTORS, nodes, monkeypatch)
    start_worker(workers, nodes, "w1")
    try:
        sent = [actors.add.send(i, i) for i in range(200)]
        assert [m.get_result(block=True, timeout=60_000) for m in sent] == \
            [2 * i for i in range(200)]

        started = time.monotonic()
        later = actors.add.send_with_options(args=(1, 2), delay=2000)
        # The delay is the job's DELAY: queued nowhere until it is due
        assert sum(c.execute_command("QLEN", "default") for c in cluster.clients) == 0
        assert later.get_result(block=True, timeout=30_000) == 3
        assert time.monotonic() - started >= 1.5

        assert actors.flaky.send("f").get_result(block=True, timeout=30_000) == 2

        doomed = actors.doomed.send()
        wait_for(lambda: sum(c.execute_command("QLEN", "default.XQ")
                             for c in cluster.clients) == 1, 30,
                 message="the failed message in the dead-letter queue")
        # the job itself died (NACK ... DEAD): same job, the error with it,
        # and every copy of it in the dead-letter queue, none left in its queue
        [[queue, job_id, body]] = [job for c in cluster.clients
                                   for job in c.execute_command("QPEEK", "default.XQ", 1)]
        assert queue == b"default.XQ"
        assert Message.decode(body).message_id == doomed.message_id
        copies = [dict(zip(*[iter(shown)] * 2)) for c in cluster.clients
                  if (shown := c.execute_command("SHOW", job_id))]
        assert copies and all(info[b"queue"] == b"default.XQ"
                              and info[b"dead-from"] == b"default"
                              and info[b"last-error"] == b"ValueError: fails for good"
                              for info in copies), copies
        assert sum(c.execute_command("QLEN", "default") for c in cluster.clients) == 0
    except BaseException:
        print(workers.logs())
        raise


def test_a_message_held_by_a_killed_worker_is_done_by_another(cluster, workers, monkeypatch):
    nodes = node_urls(cluster)
    actors = workers.load(ACTORS, nodes, monkeypatch)
    first = start_worker(workers, nodes, "doomed", threads=1)
    message = actors.slow.send("long", 3)

    wait_for(lambda: workers.started("long") >= 1, 60,
             message="the first worker to start the message")
    workers.kill(first)
    start_worker(workers, nodes, "rescuer", threads=1)
    try:
        assert message.get_result(block=True, timeout=60_000) == "long"
    except BaseException:
        print(workers.logs())
        raise
    assert workers.started("long") >= 2  # at least once: it ran again, on the rescuer


def test_a_node_killed_while_messages_flow_loses_none(workers, monkeypatch):
    own = build_cluster(3)
    try:
        nodes = node_urls(own)
        actors = workers.load(ACTORS, nodes, monkeypatch)
        start_worker(workers, nodes, "w1")
        sent = [actors.add.send(i, 1) for i in range(100)]
        own.kill(0)
        sent += [actors.add.send(i, 1) for i in range(100, 200)]
        try:
            assert [m.get_result(block=True, timeout=90_000) for m in sent] == \
                [i + 1 for i in range(200)]
        except BaseException:
            print(workers.logs())
            own.print_logs()
            raise
    finally:
        own.close()
