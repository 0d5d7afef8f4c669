"""Fixtures of the framework tests: one trisque node and one redis-server
for the whole folder, each test run once against each (``store``), and the
framework's real worker process (``worker``).

A test empties its store first (FLUSHALL) and stops its workers last, so
tests never see each other's keys or workers.
"""

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest
import redis

from tests.frameworks.workers import Worker
from tests.harness import Server, free_port, wait_for

REDIS_SERVER = shutil.which("redis-server")


class Store:
    """A Redis-protocol server the frameworks are pointed at."""

    def __init__(self, name, port):
        self.name = name
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"

    def client(self):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=30)


@pytest.fixture(scope="session")
def trisque_store():
    srv = Server().start()
    yield Store("trisque", srv.port)
    srv.cleanup()


@pytest.fixture(scope="session")
def redis_store(tmp_path_factory):
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server); CI installs it")
    port = free_port()
    proc = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path_factory.mktemp("redis"))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    store = Store("redis-server", port)

    def up():
        try:
            return store.client().ping()
        except redis.ConnectionError:
            return False
    wait_for(up, message="redis-server up")
    yield store
    proc.kill()
    proc.wait()


@pytest.fixture(params=["trisque", "redis-server"])
def store(request):
    """Each test once against a trisque node, once against redis-server,
    emptied first."""
    chosen = request.getfixturevalue(
        "trisque_store" if request.param == "trisque" else "redis_store")
    with chosen.client() as r:
        r.flushall()
    return chosen


APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")


@pytest.fixture
def worker(tmp_path):
    """Start a framework's worker process: ``worker(store, [program,
    args...])``; every worker started is stopped after the test."""
    started = []

    def start(store, command, paths=(), name="worker"):
        env = dict(os.environ, FRAMEWORK_REDIS_URL=store.url,
                   PYTHONPATH=os.pathsep.join([*paths, APPS]))
        w = Worker(command, env=env, cwd=APPS, log_path=tmp_path / f"{name}.log")
        started.append(w)
        return w
    yield start
    for w in started:
        w.stop()


def program(name):
    """A console script of the test environment (celery, rq, ...)."""
    return os.path.join(os.path.dirname(sys.executable), name)


def load_app(name, store):
    """A fresh copy of apps/<name>.py in this process, pointed at ``store``
    (as the worker's copy is), under the name the worker imports it by:
    the frameworks name tasks after their module."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(APPS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    before = os.environ.get("FRAMEWORK_REDIS_URL")
    os.environ["FRAMEWORK_REDIS_URL"] = store.url
    try:
        sys.modules[name] = module
        spec.loader.exec_module(module)
    finally:
        if before is None:
            del os.environ["FRAMEWORK_REDIS_URL"]
        else:
            os.environ["FRAMEWORK_REDIS_URL"] = before
    return module
