"""Celery 5 with the redis:// broker and result backend, against a trisque
node and against redis-server: the real ``celery worker`` runs 20 tasks
whose results the test reads (the backend waits on Pub/Sub), answers
``celery inspect ping`` (the broadcast control channel), retries a task
that raises Retry, and runs tasks given a countdown and an ETA, not before
their time."""

import datetime
import subprocess

import pytest

pytest.importorskip("celery")

from tests.frameworks.conftest import APPS, load_app, program  # noqa: E402

# Named, so that inspect ping waits for this one reply, not its whole timeout
WORKER = "trisque-test@localhost"


def test_results_ping_retry_and_eta(store, worker):
    app = load_app("celery_app", store)
    w = worker(store, [program("celery"), "-A", "celery_app", "worker", "--pool", "threads",
                       "--concurrency", "2", "--hostname", WORKER, "--loglevel", "INFO"])

    countdown_at = datetime.datetime.now(datetime.timezone.utc).timestamp() + 1
    by_countdown = app.ran_at.apply_async(countdown=1)
    eta = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)
    by_eta = app.ran_at.apply_async(eta=eta)
    results = [app.add.delay(i, 1) for i in range(20)]
    retried = app.flaky.delay(2)

    values = w.wait_for(lambda: [r.get(timeout=20) for r in results], message="20 results")
    assert values == [i + 1 for i in range(20)]
    assert retried.get(timeout=20) == 2
    assert by_countdown.get(timeout=20) >= countdown_at - 0.01, "countdown not honoured"
    assert by_eta.get(timeout=20) >= eta.timestamp() - 0.01, "ETA not honoured"

    ping = subprocess.run([program("celery"), "-A", "celery_app", "inspect", "ping",
                           "--destination", WORKER, "--timeout", "10"], cwd=APPS, env=w.env, capture_output=True,
                          text=True, timeout=60)
    assert ping.returncode == 0 and "pong" in ping.stdout, \
        f"{ping.stdout}{ping.stderr}\n--- worker:\n{w.log()}"
