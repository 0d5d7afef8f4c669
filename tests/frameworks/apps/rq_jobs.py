"""The job functions of tests/frameworks/test_rq.py (the rq worker imports
them by name)."""

import os
import time

import redis


def add(x, y):
    return x + y


def ran_at():
    """When the worker ran it (the scheduled job's check)."""
    return time.time()


def always_fails(counter):
    """Counts its attempts in Redis, then fails."""
    redis.Redis.from_url(os.environ["FRAMEWORK_REDIS_URL"]).incr(counter)
    raise RuntimeError("fails on purpose")
