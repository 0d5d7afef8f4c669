"""arq 0.28 against a trisque node and against redis-server: the real
``arq`` worker runs the jobs; a client enqueues 20 jobs and one deferred
by a second and reads their results.

arq pins redis-py below 6 (the test environment has a newer one), so arq
and its redis-py are installed into a folder of their own
(tests/client_libs.py) and both the worker and the client run as child
interpreters with that folder first on their path.
"""

import json
import subprocess
import sys

from tests.client_libs import arq
from tests.frameworks.conftest import APPS


def test_results_and_a_deferred_job(store, worker):
    folder = arq()
    w = worker(store, [sys.executable, "-m", "arq", "arq_app.WorkerSettings"], paths=[folder])
    client = subprocess.run([sys.executable, "arq_app.py"], cwd=APPS, capture_output=True,
                            text=True, timeout=60, env=w.env)
    assert client.returncode == 0, f"{client.stderr}\n--- worker:\n{w.log()}"
    got = json.loads(client.stdout)
    assert got["results"] == [i + 1 for i in range(20)]
    assert got["ran_at"] >= got["deferred_at"] - 0.01, "the deferred job ran before its time"
