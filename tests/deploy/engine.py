"""A private Docker engine for tests/deploy: a dockerd of our own on its own
socket, data-root and exec-root under a cache directory, never the
machine's default daemon.

The data-root is kept between runs (the imported base image and the built
layers make a second run fast); the containers, networks and volumes a test
makes are its own to remove. Every address dockerd may use lies in
198.18.0.0/15 (the default bridge and the pool of networks it hands out).
One test run uses the engine at a time (a lock file in the cache directory).

dockerd runs with ``--iptables=false``: with its iptables rules it would
set the host's FORWARD policy to DROP, which (br_netfilter loaded) drops
the bridged traffic of tests/cluster/test_hosts.py's namespaces for good.
Nothing here needs them: the nodes share one bridge, the published ports
go through docker-proxy on 127.0.0.1, and the containers need no way out.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import IO

CACHE_DIR = Path(os.environ.get("TRISQUE_DOCKER_CACHE",
                                "~/.cache/trisque-docker")).expanduser()
# The default bridge (the builds' RUN steps) and the pool of user-defined
# networks that name no subnet: inside 198.18.0.0/15, never Docker's 172.17/16.
BRIDGE_CIDR = "198.18.0.1/24"
ADDRESS_POOL = "base=198.18.64.0/18,size=24"
BRIDGE_NAME = "docker0"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
LOCK_TIMEOUT_S = 600.0  # another run of this test holds the engine
TOOLS = ("dockerd", "docker", "docker-compose", "debootstrap")


def missing_tools() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def unusable_reason() -> str | None:
    """Why no engine can run here (for a skip), or None."""
    if os.geteuid() != 0:
        return "dockerd needs root"
    missing = missing_tools()
    if missing:
        return (f"{', '.join(missing)} missing (apt-get install docker.io "
                "docker-compose debootstrap)")
    return None


class EngineError(RuntimeError):
    pass


class Engine:
    """dockerd on ``<cache>/docker.sock``; ``run`` and ``docker`` talk to it."""

    def __init__(self, cache_dir: Path = CACHE_DIR) -> None:
        self.cache_dir = cache_dir
        self.data_root = cache_dir / "data-root"
        self.exec_root = cache_dir / "exec-root"
        self.pidfile = cache_dir / "dockerd.pid"
        self.socket = cache_dir / "docker.sock"
        self.log_path = cache_dir / "dockerd.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._lock: IO[str] | None = None
        self._made_bridge = False
        self.start_s = 0.0  # how long start() took

    # ------------------------------------------------------------ environment

    def env(self) -> dict[str, str]:
        """The environment of a docker or docker-compose command for this
        engine: the classic builder (no BuildKit, no buildx plugin needed)."""
        env = dict(os.environ)
        env.update(DOCKER_HOST=f"unix://{self.socket}", DOCKER_BUILDKIT="0",
                   COMPOSE_DOCKER_CLI_BUILD="0")
        env.pop("DOCKER_CONTEXT", None)
        return env

    def run(self, argv: list[str], timeout_s: float = 600.0, check: bool = True,
            cwd: str | None = None, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
        """Run a command against this engine (``env``: more variables)."""
        result = subprocess.run(argv, env={**self.env(), **(env or {})}, cwd=cwd,
                                capture_output=True, text=True, timeout=timeout_s)
        if check and result.returncode != 0:
            raise EngineError(f"{' '.join(argv)} exited {result.returncode}:\n"
                              f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
        return result

    def docker(self, *args: str, timeout_s: float = 600.0) -> str:
        return self.run(["docker", *args], timeout_s=timeout_s).stdout

    # -------------------------------------------------------- start and stop

    def start(self) -> Engine:
        began = time.monotonic()
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self._take_lock()
        self._stop_stale()
        self._made_bridge = not Path(f"/sys/class/net/{BRIDGE_NAME}").exists()
        self.data_root.mkdir(exist_ok=True)
        self.exec_root.mkdir(exist_ok=True)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            ["dockerd", "--data-root", str(self.data_root),
             "--exec-root", str(self.exec_root), "--pidfile", str(self.pidfile),
             "-H", f"unix://{self.socket}", "--bip", BRIDGE_CIDR,
             "--default-address-pool", ADDRESS_POOL, "--iptables=false"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise EngineError(f"dockerd exited {self.proc.returncode}:\n{self.log_tail()}")
            if self.socket.exists() and self.run(["docker", "info"], timeout_s=10,
                                                 check=False).returncode == 0:
                self.start_s = time.monotonic() - began
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise EngineError(f"dockerd did not answer in {START_TIMEOUT_S} s:\n"
                                  f"{self.log_tail()}")
            time.sleep(0.2)

    def remove_leftovers(self) -> None:
        """Containers, volumes and networks of an earlier run that was
        killed before its ``down -v`` (restart: unless-stopped would bring
        its nodes back): this daemon is the tests' own, so all of them."""
        containers = self.docker("ps", "-aq").split()
        if containers:
            self.docker("rm", "--force", "--volumes", *containers)
        self.docker("volume", "prune", "--force")
        self.docker("network", "prune", "--force")

    def stop(self) -> None:
        """Stop our dockerd (its containerd goes with it) and give back the
        bridge it made; the data-root stays for the next run."""
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
            self.proc = None
            self._unmount_exec_root()
            if self._made_bridge and Path(f"/sys/class/net/{BRIDGE_NAME}").exists():
                subprocess.run(["ip", "link", "delete", BRIDGE_NAME], capture_output=True)
        finally:
            if self._lock is not None:
                self._lock.close()  # (releases the flock)
                self._lock = None

    def _unmount_exec_root(self) -> None:
        """dockerd leaves its network namespace bind-mounted in the
        exec-root (netns/default) when it exits."""
        with open("/proc/mounts") as mounts:
            points = [line.split()[1] for line in mounts]
        for point in reversed(points):
            if point.startswith(f"{self.exec_root}/"):
                subprocess.run(["umount", point], capture_output=True)

    def log_tail(self, size: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-size:]
        except OSError:
            return ""

    def _take_lock(self) -> None:
        lock = open(self.cache_dir / "lock", "w")
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._lock = lock
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    lock.close()
                    raise EngineError(f"{self.cache_dir}/lock still held after "
                                      f"{LOCK_TIMEOUT_S} s (another run of tests/deploy?)")
                time.sleep(1)

    def _stop_stale(self) -> None:
        """A dockerd left by an earlier run that was killed (it holds our
        data-root): only ours, known by its command line."""
        try:
            pid = int(self.pidfile.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            return
        if cmdline[:1] != [b"dockerd"] or str(self.data_root).encode() not in cmdline:
            return
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
