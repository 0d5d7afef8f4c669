"""Real trisque-server processes for tests: free loopback ports, a private
directory each, start/stop/kill -9/restart, redis-py clients."""

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import hiredis
import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Client ports stay low so port + 10000 (the bus) stays below Linux's
# ephemeral range (32768+), where an outgoing connection may hold it.
PORT_RANGE = (12000, 22000)


def server_command():
    # TRISQUE_TEST_SERVER runs the same tests or chaos against another
    # server taking a disque.conf path (e.g. disque-server, to compare).
    other = os.environ.get("TRISQUE_TEST_SERVER")
    if other:
        return [other]
    exe = shutil.which("trisque-server", path=os.path.dirname(sys.executable))
    if exe:
        return [exe]
    return [sys.executable, "-m", "trisque.server.main"]


def port_free(port):
    for p in (port, port + 10000):
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                return False
    return True


_ports_given = set()


def worker_port_range():
    """This process's share of PORT_RANGE: under pytest-xdist (make test
    runs ``-n``) worker gwK of N takes the K-th of N equal slices, so two
    workers never pick the same port between one's check and its server's
    bind (the check cannot see a port another process is about to take)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ...
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or count < 2:
        return PORT_RANGE
    index = int(worker[2:]) % count
    low, high = PORT_RANGE
    size = (high - low) // count
    return low + index * size, low + (index + 1) * size


def free_port():
    """A port free now (and its bus port), never one given before in this
    process: servers are given their ports before any of them binds, and
    two on one port let the loser's readiness check reach the winner (a
    5-node cluster quietly had 4 nodes, one of them under two indexes)."""
    low, high = worker_port_range()
    for _ in range(1000):
        port = random.randrange(low, high)
        if port not in _ports_given and port_free(port):
            _ports_given.add(port)
            return port
    raise RuntimeError("no free port")


def decode_all(data):
    """Every complete RESP value in ``data``, decoded by hiredis (errors
    come back as ``hiredis.ReplyError`` instances)."""
    reader = hiredis.Reader()
    reader.feed(data)
    out = []
    while True:
        item = reader.gets()
        if item is False:
            return out
        out.append(item)


def call_failed(request):
    """Whether the test of this fixture ``request`` failed (its report is
    kept on the item by tests/conftest.py's hook)."""
    report = getattr(request.node, "report_call", None)
    return report is not None and report.failed


def wait_for(condition, timeout=10.0, interval=0.02, message="condition"):
    """Poll ``condition`` until it returns a true value or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


class Server:
    """One trisque-server process in its own directory."""

    def __init__(self, directory=None, port=None, config="", args=(), env=None):
        self.port = port or free_port()
        self.env = env  # variables added to the process's environment
        self.dir = directory or tempfile.mkdtemp(prefix="trisque-test-")
        self.config_path = os.path.join(self.dir, "disque.conf")
        self.args = list(args)
        if not os.path.exists(self.config_path):
            with open(self.config_path, "w") as f:
                f.write(f"port {self.port}\nbind 127.0.0.1\ndir {self.dir}\n"
                        f"logfile log.txt\nloglevel verbose\n{config}")
        self.proc = None

    def start(self, wait=True):
        self.proc = subprocess.Popen(
            server_command() + [self.config_path] + self.args,
            cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env={**os.environ, **self.env} if self.env else None)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=15.0):
        def up():
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited with {self.proc.returncode}: "
                                     f"{self.proc.stderr.read().decode()}\n{self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    # "+PONG", or "-NOAUTH ..." with requirepass: up
                    # either way; "-LOADING": not yet (the AOF is loading)
                    reply = s.recv(100)
                    return reply[:1] in (b"+", b"-") and not reply.startswith(b"-LOADING")
            except OSError:
                return False
        wait_for(up, timeout, message=f"server on port {self.port}")

    def client(self, **kwargs):
        kwargs.setdefault("protocol", 2)
        kwargs.setdefault("socket_timeout", 30)
        return redis.Redis(host="127.0.0.1", port=self.port, **kwargs)

    def log(self):
        try:
            with open(os.path.join(self.dir, "log.txt")) as f:
                return f.read()
        except OSError:
            return ""

    def kill(self):
        """kill -9, as a crash."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self, timeout=10):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.proc and self.proc.stderr:
            self.proc.stderr.close()

    def restart(self):
        self.stop()
        return self.start()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
