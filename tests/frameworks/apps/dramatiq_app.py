"""The dramatiq application of tests/frameworks/test_dramatiq.py: its
documented RedisBroker and the Results middleware's RedisBackend, pointed
at FRAMEWORK_REDIS_URL."""

import os
import time

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.results import Results
from dramatiq.results.backends import RedisBackend

URL = os.environ["FRAMEWORK_REDIS_URL"]
broker = RedisBroker(url=URL)
broker.add_middleware(Results(backend=RedisBackend(url=URL)))
dramatiq.set_broker(broker)


@dramatiq.actor(store_results=True)
def add(x, y):
    return x + y


@dramatiq.actor(store_results=True)
def ran_at():
    """When the worker ran it (the delayed message's check)."""
    return time.time()


@dramatiq.actor(store_results=True, max_retries=3, min_backoff=100, max_backoff=200)
def flaky(counter, failures):
    """Fails ``failures`` times (counted in Redis), then answers the
    number of attempts: the Retries middleware delays each retry."""
    attempt = broker.client.incr(counter)
    if attempt <= failures:
        raise RuntimeError(f"attempt {attempt} fails on purpose")
    return attempt
