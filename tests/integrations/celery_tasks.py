"""The Celery app of tests/integrations/test_celery.py (a copy is the task
module of each real worker the test starts)."""

import os
import time
from pathlib import Path

import trisque.celery  # noqa: F401  (registers trisque:// for kombu and Celery)
from celery import Celery

nodes = os.environ["TRISQUE_NODES"]
app = Celery("celery_tasks", broker=nodes, backend=nodes)
app.conf.broker_transport_options = {"visibility_timeout": 4, "replicate": 2}
app.conf.task_acks_late = True
app.conf.worker_prefetch_multiplier = 1
app.conf.broker_connection_retry_on_startup = True

MARKS = Path(os.environ.get("MARKS", "."))


@app.task
def add(x, y):
    return x + y


@app.task(bind=True, max_retries=3, default_retry_delay=1)
def flaky(self):
    if self.request.retries < 2:
        raise self.retry()
    return self.request.retries


@app.task
def slow(name, seconds):
    """Marks each start (the test watches them), then works ``seconds``."""
    (MARKS / f"{name}.{os.getpid()}.{time.monotonic_ns()}").touch()
    time.sleep(seconds)
    return name
