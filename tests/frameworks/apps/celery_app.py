"""The Celery application of tests/frameworks/test_celery.py: the redis://
broker and result backend, both at FRAMEWORK_REDIS_URL."""

import os
import time

from celery import Celery

URL = os.environ["FRAMEWORK_REDIS_URL"]
app = Celery("celery_app", broker=URL, backend=URL)
app.conf.broker_connection_retry_on_startup = True


@app.task
def add(x, y):
    return x + y


@app.task
def ran_at():
    """When the worker ran it (the countdown and ETA checks)."""
    return time.time()


@app.task(bind=True, max_retries=3)
def flaky(self, failures):
    """Raises Retry (self.retry) ``failures`` times, then answers how many
    retries it took."""
    if self.request.retries < failures:
        raise self.retry(countdown=0.2)
    return self.request.retries
