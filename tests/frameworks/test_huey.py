"""huey 3 (RedisHuey) against a trisque node and against redis-server: the
real ``huey_consumer`` runs the tasks; the test enqueues them, reads their
results, and checks that a task scheduled with a delay runs, and not
before its time."""

import time

import pytest

pytest.importorskip("huey")

from tests.frameworks.conftest import load_app, program  # noqa: E402


def test_results_and_a_delayed_task(store, worker):
    app = load_app("huey_app", store)
    w = worker(store, [program("huey_consumer"), "huey_app.huey",
                       "-w", "2", "-k", "thread", "--scheduler-interval", "1"])

    delayed_at = time.time() + 1
    delayed = app.ran_at.schedule(delay=1)
    results = [app.add(i, 1) for i in range(20)]
    values = w.wait_for(lambda: _all_ready(results), message="20 results")
    assert values == [i + 1 for i in range(20)]

    ran = w.wait_for(delayed.get, timeout=10, message="the delayed task")
    assert ran >= delayed_at - 0.01, "the delayed task ran before its time"
    assert app.huey.scheduled_count() == 0


def _all_ready(results):
    values = [r.get() for r in results]
    return values if None not in values else None
