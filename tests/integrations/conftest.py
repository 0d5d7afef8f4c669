"""Real framework workers on a real 3-node cluster.

``worker(...)`` starts the framework's own worker process (its command
line, as its users run it) in a directory holding the test's task module;
every worker still running is killed, with its children, after the test.
"""

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster.conftest import build_cluster

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="package")
def cluster():
    # One cluster for both frameworks' tests (their queues and result keys
    # differ); tests that kill a node build their own.
    c = build_cluster(3)
    yield c
    c.close()


def node_urls(cluster, scheme="trisque"):
    return ";".join(f"{scheme}://127.0.0.1:{s.port}" for s in cluster.servers
                    if s.proc is not None and s.proc.poll() is None)


class Workers:
    def __init__(self, directory):
        self.directory = directory
        self.procs = []

    def load(self, source, nodes, monkeypatch):
        """The framework app ``source`` (a module of this folder), copied
        here for the workers and imported into this process under the same
        name, with TRISQUE_NODES and MARKS (this folder) set for both."""
        monkeypatch.setenv("TRISQUE_NODES", nodes)
        monkeypatch.setenv("MARKS", str(self.directory))
        name = source.stem
        shutil.copy(source, self.directory / source.name)
        spec = importlib.util.spec_from_file_location(name, self.directory / source.name)
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, module)
        spec.loader.exec_module(module)
        return module

    def started(self, name):
        """How many times a task marked its start (the apps' ``slow``)."""
        return len(list(self.directory.glob(f"{name}.*")))

    def env(self, extra):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.directory), str(ROOT),
                                             env.get("PYTHONPATH", "")])
        env.update(extra)
        return env

    def start(self, argv, env, name):
        log = open(self.directory / f"{name}.log", "wb")
        proc = subprocess.Popen(argv, cwd=self.directory, env=self.env(env), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        proc.log_path = self.directory / f"{name}.log"
        self.procs.append(proc)
        return proc

    def kill(self, proc):
        """SIGKILL to the worker and its children (its process group)."""
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    def stop_all(self):
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    # SIGTERM to the worker's main process alone: it stops its
                    # pool itself (a TERM to the whole group killed Celery's
                    # pool children under it, and it then hung until SIGKILL)
                    os.kill(proc.pid, signal.SIGTERM)
                    proc.wait(10)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
            self.kill(proc)  # children that outlived it

    def logs(self):
        return "\n".join(f"----- {p.log_path.name}\n{p.log_path.read_text(errors='replace')[-4000:]}"
                         for p in self.procs)


@pytest.fixture
def workers(tmp_path):
    w = Workers(tmp_path)
    yield w
    w.stop_all()
