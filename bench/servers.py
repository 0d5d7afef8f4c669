"""Start trisque-server, redis-server (and optionally disque-server) on free
loopback ports, and read what the benchmarks need from them."""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import redis

# Free loopback ports (<= 22000, so a bus port stays below the kernel's
# ephemeral range): the same helper the tests use.
from tests.harness import free_port  # (benchmarks run from the repository root)


def trisque_command():
    exe = shutil.which("trisque-server", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-m", "trisque.server.main"]


class Server:
    """One server process in a private temporary directory."""

    def __init__(self, kind, argv, port, directory, timeout=15):
        self.kind = kind
        self.port = port
        self.dir = directory
        self.proc = subprocess.Popen(argv, cwd=directory, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.client = redis.Redis(port=port, protocol=2)
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.client.ping():
                    break
            except redis.ConnectionError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"{kind} exited with {self.proc.returncode}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{kind} did not answer PING on port {port}")
            time.sleep(0.05)

    def info(self):
        return self.client.info()

    def rss_bytes(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def cpu_seconds(self):
        """User plus system CPU time.  From /proc/PID/schedstat's time on a
        core (ns) where the kernel has it: /proc/PID/stat counts 10 ms
        ticks, and a short run's replica can spend less than one."""
        try:
            with open(f"/proc/{self.proc.pid}/schedstat") as f:
                return int(f.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            pass
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    def stop(self):
        self.client.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def start_trisque(extra=()):
    port = free_port()
    directory = tempfile.mkdtemp(prefix="trisque-bench-")
    argv = trisque_command() + ["--port", str(port), "--bind", "127.0.0.1",
                                "--dir", directory, "--loglevel", "warning",
                                "--appendonly", "no", *extra]
    return Server("trisque", argv, port, directory)


def start_redis(extra=()):
    port = free_port()
    directory = tempfile.mkdtemp(prefix="redis-bench-")
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", directory, *extra]
    return Server("redis", argv, port, directory)


def start_floor():
    """bench.floor: the least a Python server can do (see there)."""
    port = free_port()
    directory = tempfile.mkdtemp(prefix="floor-bench-")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    argv = [sys.executable, os.path.join(root, "bench", "floor.py"), str(port)]
    return Server("floor", argv, port, directory)


def start_disque(exe):
    port = free_port()
    directory = tempfile.mkdtemp(prefix="disque-bench-")
    argv = [exe, "--port", str(port), "--bind", "127.0.0.1",
            "--appendonly", "no", "--dir", directory]
    return Server("disque", argv, port, directory)
