"""The huey application of tests/frameworks/test_huey.py: its documented
Redis storage, pointed at FRAMEWORK_REDIS_URL."""

import os
import time

from huey import RedisHuey

huey = RedisHuey("trisque-test", url=os.environ["FRAMEWORK_REDIS_URL"])


@huey.task()
def add(x, y):
    return x + y


@huey.task()
def ran_at():
    """When the worker ran it (the delayed task's check)."""
    return time.time()
