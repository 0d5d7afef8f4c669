"""Clusters of real trisque-server processes on loopback.

``make_cluster(n)`` starts n servers at once (in parallel), joins them with
CLUSTER MEET in a chain (node i meets node i+1) and waits until every node
sees the n-1 others reachable: gossip must turn the chain into a full mesh.
Everything is torn down after the test.

``cluster3`` is a 3-node cluster shared by a module (emptied with DEBUG
FLUSHALL around each test) for tests that leave it healthy; a test that
kills or reconfigures nodes builds its own with ``make_cluster``.
"""

import pytest

from tests.harness import Server, call_failed, wait_for

NODE_TIMEOUT_MS = 2000  # small, so failure detection is quick to observe,
# but not so small that a loaded machine makes nodes miss it
MESH_TIMEOUT_S = 20


class Cluster:
    """n servers, their redis-py clients and a few polling helpers."""

    def __init__(self, servers):
        self.servers = servers
        self.clients = [s.client() for s in servers]

    def __len__(self):
        return len(self.servers)

    def __getitem__(self, i):
        return self.clients[i]

    def ids(self):
        return [c.execute_command("CLUSTER", "MYID").decode() for c in self.clients]

    def alive(self):
        return [i for i, s in enumerate(self.servers)
                if s.proc is not None and s.proc.poll() is None]

    def kill(self, i):
        self.servers[i].kill()
        self.clients[i].close()

    def restart(self, i):
        server = self.servers[i]
        server.stop()
        server.start()
        self.clients[i] = server.client()

    def meet_chain(self):
        for a, b in zip(self.servers, self.servers[1:]):
            self.clients[self.servers.index(a)].execute_command(
                "CLUSTER", "MEET", "127.0.0.1", b.port)

    def wait_mesh(self, nodes=None, timeout=MESH_TIMEOUT_S):
        """Every node in ``nodes`` (default: all alive) sees all the others
        reachable, over a link of its own that has carried a PONG (a node
        learnt from gossip counts as reachable before its link is up: a
        test that stops it right then would find no link to fill)."""
        nodes = self.alive() if nodes is None else nodes
        want = len(nodes) - 1

        def linked(i, ids):
            try:
                seen = cluster_nodes(self.clients[i])
            except Exception:  # a node restarting: not meshed yet
                return False
            return all(ids[j] in seen and seen[ids[j]]["link"] == "connected"
                       and seen[ids[j]]["pong_recv"] > 0 for j in nodes if j != i)

        def meshed():
            if not all(reachable(self.clients[i]) == want for i in nodes):
                return False
            try:
                ids = {i: self.clients[i].execute_command("CLUSTER", "MYID").decode()
                       for i in nodes}
            except Exception:
                return False
            return all(linked(i, ids) for i in nodes)
        wait_for(meshed, timeout, interval=0.05,
                 message=f"{len(nodes)} nodes to see each other")

    def job_holders(self, job_id, states=None):
        """Indexes of the live nodes that hold a copy (SHOW)."""
        holders = []
        for i in self.alive():
            info = show(self.clients[i], job_id)
            if info is not None and (states is None or info["state"] in states):
                holders.append(i)
        return holders

    def registered_jobs(self):
        return [info(self.clients[i], "registered_jobs") for i in self.alive()]

    def print_logs(self, lines=60):
        """The last lines each node logged (shown with a failed test's
        report: what a flaky failure on CI needs to be understood)."""
        for i, s in enumerate(self.servers):
            tail = s.log().splitlines()[-lines:]
            print(f"----- node {i} (port {s.port}), last {len(tail)} log lines")
            print("\n".join(tail))

    def close(self):
        for c in self.clients:
            c.close()
        for s in self.servers:
            s.cleanup()


def start_servers(n, config="", node_timeout_ms=NODE_TIMEOUT_MS):
    servers = [Server(config=f"cluster-node-timeout {node_timeout_ms}\n{config}")
               for _ in range(n)]
    try:
        for s in servers:
            s.start(wait=False)
        for s in servers:
            s.wait_ready()
    except BaseException:
        for s in servers:
            s.cleanup()
        raise
    return servers


def build_cluster(n, config="", node_timeout_ms=NODE_TIMEOUT_MS, meet=True):
    cluster = Cluster(start_servers(n, config, node_timeout_ms))
    if meet:
        try:
            cluster.meet_chain()
            cluster.wait_mesh()
        except BaseException:
            cluster.close()
            raise
    return cluster


# ---------------------------------------------------------------- helpers

def cluster_info(client):
    text = client.execute_command("CLUSTER", "INFO").decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def reachable(client):
    try:
        return int(cluster_info(client)["cluster_reachable_nodes"])
    except Exception:  # a node restarting: not meshed yet
        return -1


def cluster_nodes(client):
    """CLUSTER NODES as {id: {"addr", "flags" (set), "link"}}."""
    nodes = {}
    for line in client.execute_command("CLUSTER", "NODES").decode().splitlines():
        parts = line.split()
        nodes[parts[0]] = {"addr": parts[1], "flags": set(parts[2].split(",")),
                           "ping_sent": int(parts[3]), "pong_recv": int(parts[4]),
                           "link": parts[5]}
    return nodes


def info(client, field):
    value = client.info().get(field)
    return value


def show(client, job_id):
    reply = client.execute_command("SHOW", job_id)
    if reply is None:
        return None
    out = {}
    for k, v in zip(reply[::2], reply[1::2]):
        key = k.decode()
        if isinstance(v, bytes) and key not in ("body",):
            v = v.decode()
        elif isinstance(v, list):
            v = [x.decode() for x in v]
        out[key] = v
    return out


def hello(client):
    reply = client.execute_command("HELLO")
    return {n[0].decode(): int(n[3]) for n in reply[2:]}


def addjob(client, queue, body, *args, timeout=5000):
    return client.execute_command("ADDJOB", queue, body, timeout, *args).decode()


# ---------------------------------------------------------------- fixtures

@pytest.fixture
def make_cluster(request):
    built = []

    def make(n, **kwargs):
        cluster = build_cluster(n, **kwargs)
        built.append(cluster)
        return cluster
    yield make
    for cluster in built:
        if call_failed(request):
            cluster.print_logs()
        cluster.close()


@pytest.fixture(scope="module")
def cluster3_shared():
    cluster = build_cluster(3)
    yield cluster
    cluster.close()


@pytest.fixture
def cluster3(cluster3_shared):
    """A healthy 3-node cluster shared by the module, emptied per test."""
    c = cluster3_shared
    for i in c.alive():
        c[i].execute_command("DEBUG", "FLUSHALL")
    assert c.alive() == [0, 1, 2], "a test left the shared cluster damaged"
    yield c
    for i in c.alive():
        c[i].execute_command("DEBUG", "FLUSHALL")
