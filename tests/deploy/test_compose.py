"""deploy/docker-compose.yml in a real container engine.

A dockerd of the test's own (tests/deploy/engine.py: its own socket and
data-root under ~/.cache/trisque-docker, addresses in 198.18.0.0/15)
builds deploy/Dockerfile with no network, from Debian base images made by
debootstrap (tests/deploy/base_image.py: the build stage's has gcc and
python3-dev), and docker-compose 1.29 runs the user's compose file with
tests/deploy/compose.test.yml on top (the offline build, a compiled core
required, a 2 s node timeout). Through the published ports on 127.0.0.1 and
redis-py: each node runs the compiled core and its container has no
compiler, the three nodes find each other, a job added on node 1 is
consumed on node 3, the mesh and the jobs survive ``restart node2`` and
``down`` then ``up`` (volumes: nodes.conf and the AOF), and ``stop node3``
is flagged FAIL by the others. Then ``down -v``, the engine stopped.
A second test builds the image from the compiler-less base alone (the
default build, offline): it falls back to the interpreted core and says so.

The first run makes the Debian root file systems (a few minutes); later
runs reuse the cached tarballs, the imported images and the built layers.
Needs root, dockerd, docker, docker-compose and debootstrap (.ci/run
installs them). Timings are printed (pytest -s).
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.deploy.base_image import BASE_IMAGE, ensure_base_image
from tests.deploy.engine import Engine, EngineError, unusable_reason
from tests.harness import free_port, wait_for

pytestmark = pytest.mark.skipif(unusable_reason() is not None,
                                reason=f"no container engine: {unusable_reason()}")

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILES = [ROOT / "deploy" / "docker-compose.yml",
                 Path(__file__).with_name("compose.test.yml")]
# Debian's docker-compose 1.29 by default; TRISQUE_COMPOSE="docker compose" (or
# the path of a Compose v2 binary) runs the same test with Compose v2.
COMPOSE = shlex.split(os.environ.get("TRISQUE_COMPOSE", "docker-compose"))
NODES = ("node1", "node2", "node3")
NODE_TIMEOUT_MS = 2000  # compose.test.yml's TRISQUE_CLUSTER_NODE_TIMEOUT
COMPOSE_TIMEOUT_S = 600.0
MESH_TIMEOUT_S = 60.0
HEALTHY_TIMEOUT_S = 60.0
FALLBACK_IMAGE = "trisque-test-fallback"
COMPILED = "compiled (mypyc)"  # INFO server's trisque_build, --version's "core ..."


class ComposeCluster:
    """The compose project: docker-compose commands, and a redis-py client
    of each node through its published port."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.project = f"trisque-test-{os.getpid()}"
        self.ports = {name: free_port() for name in NODES}
        self.clients: dict[str, redis.Redis] = {}

    def compose(self, *args: str) -> str:
        argv = [*COMPOSE, "--ansi", "never", "-p", self.project]
        for path in COMPOSE_FILES:
            argv += ["-f", str(path)]
        # the compose file publishes each node on ${TRISQUE_NODEn_PORT}
        ports = {f"TRISQUE_{name.upper()}_PORT": str(port) for name, port in self.ports.items()}
        return self.engine.run([*argv, *args], timeout_s=COMPOSE_TIMEOUT_S, cwd=str(ROOT),
                               env=ports).stdout

    def client(self, name: str) -> redis.Redis:
        if name not in self.clients:
            self.clients[name] = redis.Redis(host="127.0.0.1", port=self.ports[name],
                                             socket_timeout=15, protocol=2)
        return self.clients[name]

    def close_clients(self) -> None:
        for client in self.clients.values():
            client.close()
        self.clients.clear()

    def container(self, name: str) -> str:
        return self.compose("ps", "-q", name).strip()

    def health(self, name: str) -> str:
        container = self.container(name)
        if not container:
            return "absent"
        return self.engine.docker("inspect", "--format", "{{.State.Health.Status}}",
                                  container).strip()

    def nodes(self, name: str) -> dict[str, tuple[str, set[str], str]]:
        """CLUSTER NODES of a node: {id: (address, flags, link)}; {} while
        it cannot answer (restarting, -LOADING)."""
        try:
            text = self.client(name).execute_command("CLUSTER", "NODES").decode()
        except redis.RedisError:
            return {}
        return {f[0]: (f[1], set(f[2].split(",")), f[-1])
                for f in map(str.split, text.splitlines())}

    def meshed(self, names: tuple[str, ...] = NODES) -> bool:
        """Each node sees the others (and no one else), linked, none failing."""
        for name in names:
            seen = self.nodes(name)
            if len(seen) != len(NODES):
                return False
            if any(link != "connected" or flags & {"fail", "pfail", "handshake", "noaddr"}
                   for _, flags, link in seen.values()):
                return False
        return True

    def ids(self) -> dict[str, str]:
        return {name: self.client(name).execute_command("CLUSTER", "MYID").decode()
                for name in NODES}

    def show(self, name: str, job_id: str) -> dict[str, object] | None:
        try:
            reply = self.client(name).execute_command("SHOW", job_id)
        except redis.RedisError:
            return None
        if reply is None:
            return None
        return {key.decode(): value for key, value in zip(reply[::2], reply[1::2])}

    def build_form(self, name: str) -> str:
        """INFO server's trisque_build: which core the node runs."""
        return str(self.client(name).info("server")["trisque_build"])

    def exec(self, name: str, *argv: str) -> str:
        return self.compose("exec", "-T", name, *argv)

    def logs(self) -> str:
        try:
            return self.compose("logs", "--tail", "40")
        except EngineError as exc:
            return str(exc)


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    started = Engine().start()
    try:
        started.remove_leftovers()
        yield started
    finally:
        started.stop()


class Timings:
    """How long each step took, printed at the end (pytest -s shows it)."""

    def __init__(self, engine_start_s: float) -> None:
        self.steps: list[tuple[str, float]] = [("start dockerd", engine_start_s)]
        self.start = self.last = time.monotonic()
        self.start -= engine_start_s

    def mark(self, step: str) -> None:
        now = time.monotonic()
        self.steps.append((step, now - self.last))
        self.last = now

    def report(self) -> str:
        lines = [f"  {step:<44} {seconds:6.1f} s" for step, seconds in self.steps]
        lines.append(f"  {'total':<44} {time.monotonic() - self.start:6.1f} s")
        return "compose test timings:\n" + "\n".join(lines)


def test_compose_cluster_forms_keeps_its_jobs_and_flags_a_stopped_node(engine: Engine) -> None:
    timings = Timings(engine.start_s)
    ensure_base_image(engine)
    timings.mark("base images (debootstrap, chroot apt-get once; wheels)")
    cluster = ComposeCluster(engine)
    try:
        # (and the build stage alone, tagged: compose.test.yml's build-stage)
        cluster.compose("--profile", "build-stage", "build")
        timings.mark("compose build (no network)")
        cluster.compose("up", "-d")
        wait_for(cluster.meshed, MESH_TIMEOUT_S, interval=0.2, message="a mesh of 3 nodes")
        timings.mark("up -d until meshed")
        wait_for(lambda: all(cluster.health(name) == "healthy" for name in NODES),
                 HEALTHY_TIMEOUT_S, interval=0.5, message="3 healthy containers")
        timings.mark("until healthy")
        ids = cluster.ids()
        assert len(set(ids.values())) == 3
        # the build stage compiled the core; the runtime image has no compiler
        assert [cluster.build_form(name) for name in NODES] == [COMPILED] * 3
        assert f"core {COMPILED}" in cluster.exec("node1", "trisque-server", "--version")
        assert cluster.exec("node1", "sh", "-c", "command -v gcc cc || echo none").strip() \
            == "none"
        # configuration from the environment reached the node
        assert cluster.client("node1").execute_command(
            "CONFIG", "GET", "cluster-node-timeout") == [b"cluster-node-timeout",
                                                         str(NODE_TIMEOUT_MS).encode()]
        assert cluster.client("node1").execute_command("CONFIG", "GET", "dir")[1] == b"/data"
        # node3 reads the config file mounted over the image's
        assert cluster.client("node3").execute_command(
            "CONFIG", "GET", "maxmemory")[1] == str(500 * 1024**2).encode()
        assert cluster.client("node1").execute_command(
            "CONFIG", "GET", "maxmemory")[1] == str(1024**3).encode()
        # published on loopback only
        assert cluster.compose("port", "node1", "7711").strip() == \
            f"127.0.0.1:{cluster.ports['node1']}"

        # added through node 1's published port, consumed on node 3
        job = cluster.client("node1").execute_command(
            "ADDJOB", "q", "across", 5000, "REPLICATE", 3).decode()
        got = cluster.client("node3").execute_command("GETJOB", "TIMEOUT", 10000, "FROM", "q")
        assert got == [[b"q", job.encode(), b"across"]]
        assert cluster.client("node3").execute_command("ACKJOB", job) == 1
        # kept through every restart below (RETRY 1: copies loaded from an
        # AOF are active, and queued again once RETRY passes)
        kept = cluster.client("node1").execute_command(
            "ADDJOB", "kept", "survives", 5000, "REPLICATE", 3, "RETRY", 1).decode()
        for name in NODES:
            assert cluster.show(name, kept) is not None
        timings.mark("ADDJOB on node1, GETJOB on node3")

        # a restarted node keeps its ID, its peers and its copy
        cluster.compose("restart", "node2")
        cluster.close_clients()
        wait_for(cluster.meshed, MESH_TIMEOUT_S, interval=0.2, message="mesh after restart node2")
        assert cluster.ids() == ids
        wait_for(lambda: cluster.show("node2", kept) is not None, 10,
                 message="node2's copy of the job after its restart")
        timings.mark("restart node2 until meshed")

        # the whole cluster down and up: the volumes keep nodes.conf and the AOFs
        cluster.compose("down")
        cluster.close_clients()
        timings.mark("down")
        cluster.compose("up", "-d")
        wait_for(cluster.meshed, MESH_TIMEOUT_S, interval=0.2, message="mesh after down, up")
        timings.mark("up -d until meshed again")
        assert cluster.ids() == ids
        for name in NODES:
            wait_for(lambda name=name: cluster.show(name, kept) is not None, 10,
                     message=f"{name}'s copy of the job after down, up")
        got = cluster.client("node2").execute_command("GETJOB", "TIMEOUT", 10000, "FROM", "kept")
        assert got == [[b"kept", kept.encode(), b"survives"]]
        assert cluster.client("node2").execute_command("ACKJOB", kept) == 1

        # a stopped node is flagged FAIL by the others
        cluster.compose("stop", "node3")
        wait_for(lambda: all("fail" in cluster.nodes(name).get(ids["node3"], ("", set(), ""))[1]
                             for name in ("node1", "node2")),
                 MESH_TIMEOUT_S, interval=0.2, message="node3 flagged fail by node1 and node2")
        timings.mark("stop node3 until flagged fail")
    except BaseException:
        print(cluster.logs())
        raise
    finally:
        cluster.close_clients()
        try:
            cluster.compose("down", "-v", "--remove-orphans")
            timings.mark("down -v")
            # images a rebuild left untagged; the tagged ones stay as the cache
            engine.docker("image", "prune", "--force")
            timings.mark("image prune")
        finally:
            print(timings.report())
    label = f"label=com.docker.compose.project={cluster.project}"
    assert [engine.docker(*kind, "-q", "--filter", label).split()
            for kind in (["ps", "-a"], ["volume", "ls"], ["network", "ls"])] == [[], [], []]



def test_image_without_a_compiler_falls_back_to_the_interpreted_core(engine: Engine) -> None:
    """The default build (BUILD_BASE is BASE) from a base with no compiler,
    and no network for apt-get to fetch one: the image still builds, with
    the interpreted core, and says why."""
    began = time.monotonic()
    ensure_base_image(engine)
    args = ["--network", "none", "-f", "deploy/Dockerfile", "--build-arg", f"BASE={BASE_IMAGE}",
            "--build-arg", "PIP_ARGS=--no-index --find-links /wheels", "."]
    # the build stage tagged too, so that `image prune` keeps it as the cache
    for target in (["--target", "build", "-t", f"{FALLBACK_IMAGE}-build-stage"],
                   ["-t", FALLBACK_IMAGE]):
        engine.run(["docker", "build", *target, *args], timeout_s=COMPOSE_TIMEOUT_S, cwd=str(ROOT))
    try:
        # what the build said, as the image keeps it
        report = engine.docker("run", "--rm", "--network", "none", "--entrypoint", "cat",
                               FALLBACK_IMAGE, "/src/dist/build-core.txt")
        assert "trisque image: could not install gcc libc6-dev python3-dev" in report
        assert "trisque image: WARNING: the core is INTERPRETED (no C compiler" in report
        version = engine.docker("run", "--rm", "--network", "none", FALLBACK_IMAGE, "--version")
        assert "core interpreted" in version
    finally:
        engine.docker("image", "prune", "--force")
        print(f"fallback image build and checks: {time.monotonic() - began:.1f} s")
