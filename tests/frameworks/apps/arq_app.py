"""The arq application of tests/frameworks/test_arq.py: its worker settings,
pointed at FRAMEWORK_REDIS_URL, and (run as a script) the client: it
enqueues 20 jobs and a deferred one, and prints what came back as JSON."""

import asyncio
import json
import os
import time

from arq import create_pool
from arq.connections import RedisSettings

REDIS = RedisSettings.from_dsn(os.environ["FRAMEWORK_REDIS_URL"])


async def add(ctx, x, y):
    return x + y


async def ran_at(ctx):
    """When the worker ran it (the deferred job's check)."""
    return time.time()


class WorkerSettings:
    functions = [add, ran_at]
    redis_settings = REDIS
    poll_delay = 0.1
    max_jobs = 4


async def client():
    pool = await create_pool(REDIS)
    deferred_at = time.time() + 1
    deferred = await pool.enqueue_job("ran_at", _defer_by=1)
    jobs = [await pool.enqueue_job("add", i, 1) for i in range(20)]
    results = [await job.result(timeout=15, poll_delay=0.05) for job in jobs]
    ran = await deferred.result(timeout=15, poll_delay=0.05)
    await pool.aclose()
    return {"results": results, "deferred_at": deferred_at, "ran_at": ran}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(client())))
