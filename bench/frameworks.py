"""Celery and dramatiq on replicated jobs beside the same on redis-server
(issue 27): tasks a second, in one run on one machine.

    python -m bench frameworks [--tasks N] [--nodes 3] [--concurrency 4]

For each framework, one real worker process (Celery: prefork, acks late;
dramatiq: one process, threads) and this process sending ``--tasks`` tiny
tasks (``add``) and waiting for every result.  Against trisque: a cluster
of ``--nodes`` nodes, messages as jobs replicated to 2 nodes
(trisque.celery, trisque.dramatiq), results on every node.  Against
redis-server: the frameworks' own Redis broker and result backend.  The
rate is tasks sent and their results read, from the first send to the
last result; the ratio is trisque's rate over redis-server's.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Sequence

from .cluster import start_cluster
from .servers import Server, start_redis, start_trisque

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

CELERY_APP = '''
import os
import trisque.celery  # noqa: F401
from celery import Celery

broker = os.environ["BROKER"]
app = Celery("bench_app", broker=broker, backend=broker)
app.conf.task_acks_late = True
app.conf.worker_prefetch_multiplier = 4
app.conf.broker_transport_options = {"replicate": 2}


@app.task
def add(x, y):
    return x + y
'''

DRAMATIQ_APP = '''
import os
import dramatiq
from dramatiq.results import Results

broker_url = os.environ["BROKER"]
if broker_url.startswith("redis://"):
    from dramatiq.brokers.redis import RedisBroker
    from dramatiq.results.backends import RedisBackend
    broker = RedisBroker(url=broker_url)
    broker.add_middleware(Results(backend=RedisBackend(url=broker_url)))
else:
    from trisque.dramatiq import TrisqueBroker, TrisqueResultBackend
    nodes = broker_url.replace("trisque://", "").replace(";", ",")
    broker = TrisqueBroker(nodes, replicate=2)
    broker.add_middleware(Results(backend=TrisqueResultBackend(nodes)))
dramatiq.set_broker(broker)


@dramatiq.actor(store_results=True)
def add(x, y):
    return x + y
'''


def _worker(framework: str, directory: Path, broker: str, concurrency: int) -> subprocess.Popen:
    env = dict(os.environ, BROKER=broker,
               PYTHONPATH=os.pathsep.join([str(directory), str(ROOT)]))
    if framework == "celery":
        argv = [str(BIN / "celery"), "-A", "bench_app", "worker", "-c", str(concurrency),
                "--without-mingle", "--without-gossip", "--loglevel", "warning"]
    else:
        argv = [str(BIN / "dramatiq"), "bench_app", "--processes", "1",
                "--threads", str(concurrency)]
    log = open(directory / f"{framework}.log", "ab")
    return subprocess.Popen(argv, cwd=directory, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _rate(framework: str, broker: str, tasks: int, concurrency: int) -> float:
    """Tasks a second through a fresh worker: a driver process sends every
    task, then reads every result."""
    with tempfile.TemporaryDirectory(prefix="trisque-bench-frameworks-") as tmp:
        directory = Path(tmp)
        (directory / "bench_app.py").write_text(
            CELERY_APP if framework == "celery" else DRAMATIQ_APP)
        worker = _worker(framework, directory, broker, concurrency)
        try:
            if framework == "celery":
                body = f"""
                    from bench_app import add
                    add.delay(0, 0).get(timeout=60)  # the worker is up
                    start = time.perf_counter()
                    sent = [add.delay(i, 1) for i in range({tasks})]
                    assert [r.get(timeout=300) for r in sent] == [i + 1 for i in range({tasks})]
                """
            else:
                body = f"""
                    from bench_app import add
                    add.send(0, 0).get_result(block=True, timeout=60_000)
                    start = time.perf_counter()
                    sent = [add.send(i, 1) for i in range({tasks})]
                    assert [m.get_result(block=True, timeout=300_000) for m in sent] == \\
                        [i + 1 for i in range({tasks})]
                """
            driver = "import time\n" + textwrap.dedent(body) + \
                "print(len(sent) / (time.perf_counter() - start))\n"
            env = dict(os.environ, BROKER=broker,
                       PYTHONPATH=os.pathsep.join([str(directory), str(ROOT)]))
            out = subprocess.run([sys.executable, "-c", driver], cwd=directory, env=env,
                                 check=True, capture_output=True, text=True, timeout=900)
            return float(out.stdout.strip().splitlines()[-1])
        except subprocess.CalledProcessError as e:
            print(e.stderr[-3000:], (directory / f"{framework}.log").read_text()[-3000:])
            raise
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()


def run(tasks: int, nodes: int, concurrency: int,
        frameworks: Sequence[str] = ("celery", "dramatiq")) -> dict[str, tuple[float, float]]:
    """framework -> (tasks/s on trisque, tasks/s on redis-server)."""
    cluster: list[Server] = []
    redis_server = None
    figures = {}
    try:
        cluster = start_cluster(nodes, start_trisque)
        redis_server = start_redis()
        trisque_url = ";".join(f"trisque://127.0.0.1:{n.port}" for n in cluster)
        redis_url = f"redis://127.0.0.1:{redis_server.port}/0"
        for framework in frameworks:
            on_trisque = _rate(framework, trisque_url, tasks, concurrency)
            on_redis = _rate(framework, redis_url, tasks, concurrency)
            figures[framework] = (on_trisque, on_redis)
            print(f"{framework:<9} trisque ({nodes} nodes, REPLICATE 2) {on_trisque:8.0f} tasks/s"
                  f"   redis-server {on_redis:8.0f} tasks/s   ratio {on_trisque / on_redis:5.2f}",
                  flush=True)
    finally:
        for n in cluster:
            n.stop()
        if redis_server is not None:
            redis_server.stop()
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench frameworks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--frameworks", default="celery,dramatiq")
    args = parser.parse_args(argv)
    start = time.monotonic()
    run(args.tasks, args.nodes, args.concurrency, args.frameworks.split(","))
    print(f"({time.monotonic() - start:.0f} s)")


if __name__ == "__main__":
    main()
