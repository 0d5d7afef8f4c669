"""RQ 2 against a trisque node and against redis-server: the real ``rq
worker --with-scheduler`` runs 20 jobs whose return values the test reads
(RQ 2 keeps results in a Stream), a job scheduled with enqueue_in (moved
to its queue by the worker's scheduler, not before the second it is due),
a job that fails, is retried twice and ends in the failed job registry;
then the worker obeys RQ's shutdown command, which it hears on Pub/Sub."""

import datetime
import math
import time

import pytest

pytest.importorskip("rq")

import redis  # noqa: E402
from rq import Queue, Retry  # noqa: E402
from rq.command import send_shutdown_command  # noqa: E402
from rq.job import JobStatus  # noqa: E402
from rq.registry import FailedJobRegistry  # noqa: E402

from tests.frameworks.conftest import load_app, program  # noqa: E402

WORKER = "trisque-test"


def test_results_scheduled_job_and_retries(store, worker):
    jobs = load_app("rq_jobs", store)
    connection = redis.Redis.from_url(store.url)
    queue = Queue(connection=connection)
    w = worker(store, [program("rq"), "worker", "--url", store.url, "--with-scheduler",
                       "--name", WORKER])

    scheduled_at = time.time() + 1
    scheduled = queue.enqueue_in(datetime.timedelta(seconds=1), jobs.ran_at)
    results = [queue.enqueue(jobs.add, i, 1) for i in range(20)]
    failing = queue.enqueue(jobs.always_fails, "rq-attempts", retry=Retry(max=2))

    def finished(job):
        status = job.get_status(refresh=True)
        assert status != JobStatus.FAILED, job.latest_result()
        return status == JobStatus.FINISHED

    w.wait_for(lambda: all(finished(job) for job in results), message="20 jobs finished")
    assert [job.return_value() for job in results] == [i + 1 for i in range(20)]

    w.wait_for(lambda: finished(scheduled), timeout=15, message="the scheduled job")
    # RQ schedules to the whole second (its registry's scores are int
    # timestamps, due once int(now) reaches them)
    assert scheduled.return_value() >= math.floor(scheduled_at), "the scheduled job ran early"

    registry = FailedJobRegistry(queue=queue)
    w.wait_for(lambda: failing.id in registry.get_job_ids(), message="the failed job registry")
    failing.refresh()
    assert failing.get_status() == JobStatus.FAILED
    assert int(connection.get("rq-attempts")) == 3  # the first run and two retries
    assert failing.retries_left == 0

    # rq's commands are published to the worker's channel
    channel = f"rq:pubsub:{WORKER}"
    w.wait_for(lambda: connection.pubsub_numsub(channel) == [(channel.encode(), 1)],
               message="the worker's subscription")
    send_shutdown_command(connection, WORKER)
    w.wait_for(lambda: w.proc.poll() is not None, exits=True, message="the worker's exit")
    assert w.proc.returncode == 0, w.log()
    connection.close()
