"""The dramatiq actors of tests/integrations/test_dramatiq.py (a copy is
the module each real worker the test starts imports)."""

import os
import time
from pathlib import Path

import dramatiq
from dramatiq.results import Results

from trisque.dramatiq import TrisqueBroker, TrisqueResultBackend

nodes = os.environ["TRISQUE_NODES"]
broker = TrisqueBroker(nodes, replicate=2, visibility_timeout_s=4)
broker.add_middleware(Results(backend=TrisqueResultBackend(nodes)))
dramatiq.set_broker(broker)

MARKS = Path(os.environ.get("MARKS", "."))


@dramatiq.actor(store_results=True)
def add(x, y):
    return x + y


@dramatiq.actor(store_results=True, max_retries=3, min_backoff=100, max_backoff=200)
def flaky(key):
    """Fails twice (marks on disk count the attempts), then succeeds."""
    attempts = len(list(MARKS.glob(f"{key}.*")))
    (MARKS / f"{key}.{attempts}").touch()
    if attempts < 2:
        raise RuntimeError("not yet")
    return attempts


@dramatiq.actor(store_results=True, max_retries=0)
def slow(name, seconds):
    (MARKS / f"{name}.{os.getpid()}.{time.monotonic_ns()}").touch()
    time.sleep(seconds)
    return name


@dramatiq.actor(max_retries=0)
def doomed():
    raise ValueError("fails for good")
