"""A cluster of hosts, as docker-compose deploys it: each node in a network
namespace of its own with its own address, bound to every interface, the
peers named by host name (``cluster-join node1:7711``), a bridge between
them.  Nodes learn their own address from the bus, and a node restarted at
a new address (a container's usual fate) is found there by its peers.

Needs root and iproute2 (``ip netns``); CI runs as root.  The namespaces,
the bridge and /etc/netns/<name>/hosts exist only during the test.
"""

import os
import shutil
import subprocess
import tempfile

import pytest
import redis

from tests.harness import server_command, wait_for

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None,
    reason="network namespaces need root and iproute2")

NODES = 3
NODE_TIMEOUT_MS = 2000


def sh(*argv):
    subprocess.run(argv, check=True, capture_output=True)


def free_subnet():
    """A /24 of 198.18.0.0/15 (set aside for network tests, RFC 2544: no
    real network of the machine's is shadowed) that no interface holds.  A
    pid-derived one collided with the bridge the compose test's dockerd
    leaves behind (198.18.0.1/24) for one pid in 512: no mesh then."""
    held = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True).stdout
    first = os.getpid() % 511
    for k in range(511):
        n = 1 + (first + k) % 511  # 198.18.1 ... 198.19.255
        subnet = f"198.{18 + n // 256}.{n % 256}"
        if f"inet {subnet}." not in held:
            return subnet
    raise RuntimeError("every /24 of 198.18.0.0/15 is taken")


class Hosts:
    """NODES namespaces on a bridge; the test process reaches them from
    the bridge's address."""

    made = 0  # per process: names differ from a previous test's (deleted lazily)

    def __init__(self):
        Hosts.made += 1
        tag = "%03d%d" % (os.getpid() % 1000, Hosts.made % 10)
        self.subnet = free_subnet()
        self.bridge = f"tqbr{tag}"
        self.names = [f"tq{tag}n{i}" for i in range(NODES)]
        self.addresses = {}
        self.procs = [None] * NODES
        self.dirs = [tempfile.mkdtemp(prefix="trisque-host-") for _ in range(NODES)]
        try:
            self._make()
        except BaseException:
            self.cleanup()
            raise

    def _make(self):
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        sh("ip", "addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")
        for i, ns in enumerate(self.names):
            sh("ip", "netns", "add", ns)
            veth = f"{self.bridge[2:]}v{i}"  # (interface names: 15 bytes at most)
            sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh("ip", "link", "set", veth, "master", self.bridge)
            sh("ip", "link", "set", veth, "up")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
            self.move(i, 10 + i)

    def move(self, i, host, keep=False):
        """Give node i the address <subnet>.<host> (only, unless ``keep``:
        then besides its first one), in every hosts file."""
        ns = self.names[i]
        if not keep:
            sh("ip", "netns", "exec", ns, "ip", "addr", "flush", "dev", "eth0")
        sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{self.subnet}.{host}/24",
           "dev", "eth0")
        self.addresses[i] = f"{self.subnet}.{host}"
        lines = ["127.0.0.1 localhost"] + [f"{ip} node{j}" for j, ip in self.addresses.items()]
        for name in self.names:
            os.makedirs(f"/etc/netns/{name}", exist_ok=True)
            with open(f"/etc/netns/{name}/hosts", "w") as f:
                f.write("\n".join(lines) + "\n")

    def start(self, i, bind="0.0.0.0"):
        # as deploy/docker-compose.yml: the first node joins the others,
        # they join the first; gossip does the rest
        peers = range(1, NODES) if i == 0 else [0]
        joins = [arg for j in peers for arg in ("--cluster-join", f"node{j}:7711")]
        self.procs[i] = subprocess.Popen(
            ["ip", "netns", "exec", self.names[i], *server_command(), "--bind", bind,
             "--protected-mode", "no",  # clients come from other namespaces
             "--dir", self.dirs[i], "--appendonly", "yes",
             "--cluster-node-timeout", str(NODE_TIMEOUT_MS), *joins],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def kill(self, i):
        self.procs[i].kill()
        self.procs[i].wait()

    def client(self, i):
        return redis.Redis(host=self.addresses[i], port=7711, socket_timeout=15,
                           protocol=2)

    def nodes(self, i):
        """CLUSTER NODES of node i: {id: (address, flags, link state)}."""
        try:
            text = self.client(i).execute_command("CLUSTER", "NODES").decode()
        except redis.RedisError:
            return {}
        return {f[0]: (f[1], f[2], f[-1]) for f in map(str.split, text.splitlines())}

    def cleanup(self):
        for proc in self.procs:
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        for i, ns in enumerate(self.names):
            subprocess.run(["ip", "link", "del", f"{self.bridge[2:]}v{i}"], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            shutil.rmtree(f"/etc/netns/{ns}", ignore_errors=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def hosts():
    h = Hosts()
    try:
        yield h
    finally:
        h.cleanup()


def mesh(hosts):
    """Every node sees every node at its current address, linked."""
    want = {f"{ip}:7711" for ip in hosts.addresses.values()}
    for i in range(NODES):
        seen = hosts.nodes(i)
        if {addr for addr, _, _ in seen.values()} != want:
            return False
        if any(state != "connected" or "fail" in flags for _, flags, state in seen.values()):
            return False
    return True


def test_hosts_join_by_name_and_find_nodes_at_new_addresses(hosts):
    for i in range(NODES):
        hosts.start(i)
    wait_for(lambda: mesh(hosts), timeout=30, message="full mesh at the hosts' addresses")
    ids = [hosts.client(i).execute_command("CLUSTER", "MYID") for i in range(NODES)]

    # replicated across hosts, consumed on another, acked everywhere
    job = hosts.client(1).execute_command("ADDJOB", "q", "across", 0, "REPLICATE", 3)
    show = hosts.client(2).execute_command("SHOW", job)
    assert len(dict(zip(show[::2], show[1::2]))[b"nodes-delivered"]) == 3
    kept = hosts.client(1).execute_command("ADDJOB", "kept", "survives", 0, "REPLICATE", 3)
    got = hosts.client(0).execute_command("GETJOB", "TIMEOUT", 10000, "FROM", "q")
    assert got == [[b"q", job, b"across"]]
    assert hosts.client(0).execute_command("ACKJOB", job) == 1
    wait_for(lambda: all(hosts.client(i).info("jobs")["registered_jobs"] == 1
                         for i in range(NODES)), timeout=20, message="acked job gone")

    # node 0 dies; its peers flag it failing
    hosts.kill(0)
    wait_for(lambda: all("fail" in hosts.nodes(i).get(ids[0].decode(), ("", "", ""))[1]
                         for i in (1, 2)), timeout=30, message="node 0 flagged fail")

    # ...and comes back as itself at another address
    hosts.move(0, 100)
    hosts.start(0)
    wait_for(lambda: mesh(hosts), timeout=30, message="node 0 found at its new address")
    assert hosts.client(0).execute_command("CLUSTER", "MYID") == ids[0]
    assert hosts.client(0).execute_command("SHOW", kept) is not None  # from its AOF
    assert hosts.client(2).execute_command("ACKJOB", kept) == 1
    wait_for(lambda: all(hosts.client(i).info("jobs")["registered_jobs"] == 0
                         for i in range(NODES)), timeout=20, message="every node empty")

    # the whole cluster down, and up again with new addresses for all
    # (docker compose down, then up, volumes kept)
    # (RETRY 1: loaded from the AOFs, copies are active, as Disque's, and
    # queued again once RETRY passes)
    job = hosts.client(2).execute_command("ADDJOB", "q", "again", 0, "REPLICATE", 3, "RETRY", 1)
    for i in range(NODES):
        hosts.kill(i)
    for i in range(NODES):
        hosts.move(i, 150 + i)
    for i in range(NODES):
        hosts.start(i)
    wait_for(lambda: mesh(hosts), timeout=30, message="every node found at its new address")
    assert [hosts.client(i).execute_command("CLUSTER", "MYID") for i in range(NODES)] == ids
    got = hosts.client(1).execute_command("GETJOB", "TIMEOUT", 10000, "FROM", "q")
    assert got == [[b"q", job, b"again"]]


def test_node_bound_to_its_second_address_is_found_there(hosts):
    """Each host has two addresses and each node listens on its second
    only: its links out must leave from there too, or peers (which take a
    node's address from where its PINGs come) would move it to the first,
    where nothing listens."""
    for i in range(NODES):
        hosts.move(i, 200 + i, keep=True)
    for i in range(NODES):
        hosts.start(i, bind=hosts.addresses[i])
    wait_for(lambda: mesh(hosts), timeout=30, message="full mesh at the second addresses")
    job = hosts.client(0).execute_command("ADDJOB", "q", "x", 0, "REPLICATE", 3)
    assert hosts.client(2).execute_command("SHOW", job) is not None
