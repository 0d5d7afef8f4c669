"""dramatiq 2 (RedisBroker, Results middleware with RedisBackend) against a
trisque node and against redis-server: the real ``dramatiq`` worker runs
20 actors' messages with results, a message delayed by a second, and a
message that fails twice and succeeds on its (delayed) third attempt."""

import time

import pytest

pytest.importorskip("dramatiq")

from tests.frameworks.conftest import load_app, program  # noqa: E402


def test_results_delay_and_retries(store, worker):
    app = load_app("dramatiq_app", store)
    w = worker(store, [program("dramatiq"), "dramatiq_app", "--processes", "1",
                       "--threads", "2"])

    delayed_at = time.time() + 1
    delayed = app.ran_at.send_with_options(delay=1000)
    messages = [app.add.send(i, 1) for i in range(20)]
    flaky = app.flaky.send("flaky-attempts", 2)

    # get_result(block=True) waits in BRPOPLPUSH on the result's key
    values = w.wait_for(lambda: [m.get_result(block=True, timeout=10_000) for m in messages],
                        message="20 results")
    assert values == [i + 1 for i in range(20)]
    ran = w.wait_for(lambda: delayed.get_result(block=True, timeout=10_000),
                     message="the delayed message")
    assert ran >= delayed_at - 0.01, "the delayed message ran before its time"
    assert flaky.get_result(block=True, timeout=10_000) == 3
