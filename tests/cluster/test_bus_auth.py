"""cluster-secret and the bus limits, on real trisque-server processes.

Nodes sharing a secret form a cluster and replicate; a node without it (or
with another) never gets in; a raw socket that knows the secret is
answered, but replaying one of its own accepted envelopes, or sending a
forged or plain frame, closes its link and the node keeps working.  The
frame-size and send-queue bounds are checked at their edges."""

import os
import signal
import socket
import urllib.request

import pytest

from tests.harness import Server, free_port, wait_for
from tests.tls_certs import make_certs
from trisque.protocol import bus

from .conftest import addjob, cluster_nodes, start_servers

SECRET = "correct horse battery staple"
NODE_TIMEOUT_MS = 2000
MB = 1024 * 1024


# ------------------------------------------------------------ helpers

def _bus_address(server):
    return ("127.0.0.1", server.port + 10000)


def _recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def _closed_by_peer(sock, timeout=10):
    """True once the node closed the connection (reads return EOF)."""
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


class SealedPeer:
    """A raw bus connection that speaks the authenticated protocol with
    ``secret``: reads the node's hello, sends its own, then seals frames."""

    def __init__(self, server, secret):
        self.secret = secret.encode()
        self.sock = socket.create_connection(_bus_address(server), timeout=10)
        self.node_nonce = bus.read_hello(_recv_exact(self.sock, bus.HELLO.size))
        assert self.node_nonce is not None
        self.nonce = os.urandom(bus.NONCE_LEN)
        self.sock.sendall(bus.hello(self.nonce))
        self.seq_out = 0
        self.seq_in = 0

    def envelope(self, *frames):
        """The next envelope, as a real peer would send it."""
        data, self.seq_out = bus.seal_frames(
            bus.link_mac(self.secret, self.node_nonce), self.seq_out, list(frames))
        return data

    def receive(self):
        """The frames of the node's next envelope, checked as the node
        checks ours."""
        prefix = _recv_exact(self.sock, 8)
        length = bus.sealed_length(prefix)
        envelope = prefix + _recv_exact(self.sock, length - 8)
        frames = bus.unseal(bus.link_mac(self.secret, self.nonce), envelope, self.seq_in)
        self.seq_in += 1
        return [bus.decode(f) for f in frames]


def _ping(sender_id="ab" * 20):
    return bus.gossip(bus.Header(sender_id, 1, 10001), bus.PING, [])


def _counter(client, field):
    return int(client.info("cluster")[field])


def _logged(server, text):
    return text in server.log()


def _assert_serves(client):
    job_id = addjob(client, "serves", "still here")
    assert client.execute_command("GETJOB", "NOHANG", "FROM", "serves")[0][1].decode() == job_id
    assert client.execute_command("ACKJOB", job_id) == 1


@pytest.fixture
def secret_cluster(make_cluster):
    return make_cluster(3, config=f'cluster-secret "{SECRET}"\n')


@pytest.fixture
def lone_node(request):
    """Start one node with the given config text (a function)."""
    started = []

    def start(config=""):
        server = Server(config=f"cluster-node-timeout {NODE_TIMEOUT_MS}\n{config}")
        started.append(server)
        server.start()
        return server
    yield start
    for server in started:
        server.cleanup()


# -------------------------------------------------------------- tests

def test_nodes_with_the_same_secret_replicate(secret_cluster):
    c = secret_cluster
    job_id = addjob(c[0], "q", "body", "REPLICATE", 3)
    assert c.job_holders(job_id) == [0, 1, 2]
    got = c[2].execute_command("GETJOB", "TIMEOUT", 5000, "FROM", "q")  # federation
    assert got[0][1].decode() == job_id
    assert c[2].execute_command("ACKJOB", job_id) == 1
    wait_for(lambda: c.job_holders(job_id) == [], 10, message="the acked job gone everywhere")
    assert [_counter(c[i], "cluster_stats_bus_auth_failures") for i in range(3)] == [0, 0, 0]
    assert c[1].config_get("cluster-secret") == {"cluster-secret": SECRET}


@pytest.mark.parametrize("outsider_secret", ["", "another secret"])
def test_a_node_without_the_secret_cannot_join(secret_cluster, outsider_secret, request):
    c = secret_cluster
    config = f'cluster-secret "{outsider_secret}"\n' if outsider_secret else ""
    [outsider] = start_servers(1, config, NODE_TIMEOUT_MS)
    request.addfinalizer(outsider.cleanup)
    out = outsider.client()
    outsider_id = out.execute_command("CLUSTER", "MYID").decode()
    member_ids = set(c.ids())
    # Both ways: the outsider meets a member, a member meets the outsider.
    out.execute_command("CLUSTER", "MEET", "127.0.0.1", c.servers[0].port)
    c[1].execute_command("CLUSTER", "MEET", "127.0.0.1", outsider.port)
    # The MEET the outsider sent was refused, logged with its address.
    wait_for(lambda: _counter(c[0], "cluster_stats_bus_auth_failures") >= 1, 10,
             message="node 0 refusing the outsider's link")
    reason = "bad tag" if outsider_secret else "unauthenticated frame"
    assert _logged(c.servers[0], "Cluster bus link from 127.0.0.1:"), c.servers[0].log()[-2000:]
    assert _logged(c.servers[0], reason)
    if not outsider_secret:
        # The outsider, with no secret, refuses the members' hellos too.
        wait_for(lambda: _logged(outsider, "this node has no cluster-secret"), 10,
                 message="the outsider refusing node 1's hello")
    # Node 1's handshake with it runs its course and is forgotten: nothing
    # ever told node 1 its ID.
    wait_for(lambda: not any("handshake" in n["flags"] for n in cluster_nodes(c[1]).values()),
             15, message="node 1's handshake with the outsider to expire")
    for i in range(3):
        listed = set(cluster_nodes(c[i]))
        assert outsider_id not in listed
        assert listed == member_ids
    assert not member_ids & set(cluster_nodes(out))
    job_id = addjob(c[0], "q", "body", "REPLICATE", 3)
    assert c.job_holders(job_id) == [0, 1, 2]


def test_replayed_forged_and_plain_frames_are_refused(secret_cluster):
    c = secret_cluster
    server = c.servers[0]
    failures = _counter(c[0], "cluster_stats_bus_auth_failures")

    # A peer that knows the secret is answered: PING -> PONG.
    peer = SealedPeer(server, SECRET)
    captured = peer.envelope(_ping())
    peer.sock.sendall(captured)
    [pong] = peer.receive()
    assert pong.type == bus.PONG
    # ...and a second envelope, numbered 1, too.
    peer.sock.sendall(peer.envelope(_ping()))
    assert [m.type for m in peer.receive()] == [bus.PONG]

    # The captured envelope (number 0) again on the same link: refused.
    peer.sock.sendall(captured)
    assert _closed_by_peer(peer.sock)
    peer.sock.close()

    # The captured envelope on a new link (another nonce): refused.
    replayer = SealedPeer(server, SECRET)
    replayer.sock.sendall(captured)
    assert _closed_by_peer(replayer.sock)
    replayer.sock.close()

    # Forged: the right shape, a made-up tag; and tagged with another secret.
    forger = SealedPeer(server, SECRET)
    envelope = bytearray(forger.envelope(_ping()))
    envelope[-bus.TAG_LEN:] = os.urandom(bus.TAG_LEN)
    forger.sock.sendall(bytes(envelope))
    assert _closed_by_peer(forger.sock)
    forger.sock.close()
    wrong = SealedPeer(server, "not the secret")
    wrong.sock.sendall(wrong.envelope(_ping()))
    assert _closed_by_peer(wrong.sock)
    wrong.sock.close()

    # No hello, a plain frame: refused.
    plain = socket.create_connection(_bus_address(server), timeout=10)
    plain.sendall(_ping())
    assert _closed_by_peer(plain)
    plain.close()

    wait_for(lambda: _counter(c[0], "cluster_stats_bus_auth_failures") >= failures + 5, 10,
             message="five refusals counted")
    log = server.log()
    assert "replayed or reordered" in log and "bad tag" in log
    # The node and its cluster keep working.
    job_id = addjob(c[0], "q", "body", "REPLICATE", 3)
    assert c.job_holders(job_id) == [0, 1, 2]
    _assert_serves(c[0])


def test_rotating_the_secret_refuses_no_link(secret_cluster):
    """The rotation SECURITY.md describes: accept the new secret everywhere,
    then send with it everywhere (one CONFIG SET per node, the old one
    accepted), then stop accepting the old one.  No link is refused on the
    way and the cluster replicates after every step; at the end a peer
    with the old secret is refused and one with the new answered."""
    c = secret_cluster
    new = "the new secret"

    def replicates():
        job_id = addjob(c[0], "rot", "body", "REPLICATE", 3)
        assert c.job_holders(job_id) == [0, 1, 2]
    steps = [[("cluster-secret-accept", new)]] * 3 + \
        [[("cluster-secret", new), ("cluster-secret-accept", SECRET)]] * 3 + \
        [[("cluster-secret-accept", "")]] * 3
    for step, pairs in enumerate(steps):
        i = step % 3
        c[i].execute_command("CONFIG", "SET", *[x for pair in pairs for x in pair])
        replicates()
    assert [_counter(c[i], "cluster_stats_bus_auth_failures") for i in range(3)] == [0, 0, 0]
    old_peer = SealedPeer(c.servers[1], SECRET)
    old_peer.sock.sendall(old_peer.envelope(_ping()))
    assert _closed_by_peer(old_peer.sock)
    old_peer.sock.close()
    new_peer = SealedPeer(c.servers[1], new)
    new_peer.sock.sendall(new_peer.envelope(_ping()))
    assert [m.type for m in new_peer.receive()] == [bus.PONG]
    new_peer.sock.close()
    replicates()


def test_over_tls_a_certified_node_without_the_secret_stays_out(make_cluster, request,
                                                                 tmp_path_factory):
    """tls-cluster and cluster-secret together: the cluster replicates over
    TLS with authenticated frames, and a node whose certificate the same CA
    signed (TLS alone would let it in) but without the secret never joins."""
    certs = make_certs(str(tmp_path_factory.mktemp("certs")))
    tls = f"tls-cluster yes\n{certs.node_config(None)}"
    c = make_cluster(3, config=f'{tls}cluster-secret "{SECRET}"\n')
    job_id = addjob(c[0], "tls", "body", "REPLICATE", 3)
    assert c.job_holders(job_id) == [0, 1, 2]
    [outsider] = start_servers(1, tls, NODE_TIMEOUT_MS)
    request.addfinalizer(outsider.cleanup)
    outsider_id = outsider.client().execute_command("CLUSTER", "MYID").decode()
    outsider.client().execute_command("CLUSTER", "MEET", "127.0.0.1", c.servers[0].port)
    wait_for(lambda: _counter(c[0], "cluster_stats_bus_auth_failures") >= 1, 10,
             message="node 0 refusing the outsider's link")
    assert _logged(c.servers[0], "unauthenticated frame")
    assert all(outsider_id not in cluster_nodes(c[i]) for i in range(3))
    job_id = addjob(c[0], "tls", "body", "REPLICATE", 3)
    assert c.job_holders(job_id) == [0, 1, 2]


@pytest.mark.parametrize("says", [b"", b"hello"])
def test_a_link_that_never_proves_the_secret_is_closed(lone_node, says):
    """A connection to the bus that sends nothing, or only a hello, is
    closed once cluster-node-timeout has passed without a tagged frame."""
    server = lone_node(f'cluster-node-timeout 500\ncluster-secret "{SECRET}"\n')
    client = server.client()
    sock = socket.create_connection(_bus_address(server), timeout=10)
    assert bus.read_hello(_recv_exact(sock, bus.HELLO.size)) is not None
    if says:
        sock.sendall(bus.hello(os.urandom(bus.NONCE_LEN)))
    assert _closed_by_peer(sock)
    sock.close()
    assert _counter(client, "cluster_stats_bus_auth_failures") == 1
    assert _logged(server, "no authenticated frame within cluster-node-timeout")
    # a peer that proves it in time stays
    peer = SealedPeer(server, SECRET)
    peer.sock.sendall(peer.envelope(_ping()))
    assert [m.type for m in peer.receive()] == [bus.PONG]
    assert not _closed_by_peer(peer.sock, timeout=1.5)
    peer.sock.close()


def _queue_frame(total):
    """A NEEDJOBS frame of exactly ``total`` bytes from a stranger (which
    the node ignores): a frame at a size of our choosing."""
    header = bus.Header("cd" * 20, 1, 10001)
    empty = bus.queue_op(header, bus.NEEDJOBS, b"", 1)
    return bus.queue_op(header, bus.NEEDJOBS, b"x" * (total - len(empty)), 1)


def _scrape(server, http_port):
    """/metrics, parsed: {(name, labels): value}."""
    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_frame_size_limit_at_the_edge(lone_node):
    http_port = free_port()
    server = lone_node(f"cluster-bus-max-frame 1mb\nhttp-port {http_port}\n")
    client = server.client()
    # Exactly the limit: taken, and the link still answers.
    sock = socket.create_connection(_bus_address(server), timeout=10)
    frame = _queue_frame(MB)
    assert len(frame) == MB
    sock.sendall(frame + _ping())
    prefix = _recv_exact(sock, 8)
    assert prefix[:3] == bus.MAGIC
    sock.close()
    # One byte more: the link is closed on the header alone.
    sock = socket.create_connection(_bus_address(server), timeout=10)
    sock.sendall(_queue_frame(MB + 1)[:4096])
    assert _closed_by_peer(sock)
    sock.close()
    wait_for(lambda: _counter(client, "cluster_stats_bus_frames_too_big") == 1, 5,
             message="the frame counted")
    assert _logged(server, f"frame of {MB + 1} bytes, over cluster-bus-max-frame {MB}")
    metrics = _scrape(server, http_port)
    assert metrics[("trisque_bus_links_refused_total", (("reason", "too-big"),))] == 1
    assert metrics[("trisque_bus_links_refused_total", (("reason", "auth"),))] == 0
    # The bound moves at runtime.
    client.config_set("cluster-bus-max-frame", "2mb")
    sock = socket.create_connection(_bus_address(server), timeout=10)
    sock.sendall(_queue_frame(MB + 1) + _ping())
    assert _recv_exact(sock, 8)[:3] == bus.MAGIC
    sock.close()
    _assert_serves(client)


def test_sealed_frame_size_limit_at_the_edge(lone_node):
    server = lone_node(f'cluster-bus-max-frame 1mb\ncluster-secret "{SECRET}"\n')
    client = server.client()
    peer = SealedPeer(server, SECRET)
    peer.sock.sendall(peer.envelope(_queue_frame(MB)))  # frames of exactly the limit
    peer.sock.sendall(peer.envelope(_ping()))
    assert [m.type for m in peer.receive()] == [bus.PONG]
    peer.sock.sendall(peer.envelope(_queue_frame(MB + 1))[:4096])
    assert _closed_by_peer(peer.sock)
    peer.sock.close()
    wait_for(lambda: _counter(client, "cluster_stats_bus_frames_too_big") == 1, 5,
             message="the envelope counted")
    assert _counter(client, "cluster_stats_bus_auth_failures") == 0
    _assert_serves(client)


def test_a_peer_that_never_reads_is_dropped(lone_node):
    """PINGs from a raw socket that never reads the PONGs: once what the
    node holds for it passes cluster-bus-send-queue-limit, the link goes."""
    server = lone_node("cluster-bus-send-queue-limit 1mb\n")
    client = server.client()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10)
    sock.connect(_bus_address(server))
    pings = _ping() * 5000

    def dropped():
        try:
            sock.sendall(pings)  # more PONGs owed, never read
        except OSError:
            pass
        return _counter(client, "cluster_stats_bus_slow_peer_disconnections") == 1
    wait_for(dropped, 60, interval=0, message="the slow peer to be dropped")
    assert _logged(server, "over cluster-bus-send-queue-limit")
    assert _closed_by_peer(sock)
    sock.close()
    _assert_serves(client)


def test_a_stopped_peer_is_disconnected_and_repaired(make_cluster):
    """A peer that stops (SIGSTOP) while big jobs are replicated to it: its
    link is closed at the send-queue bound instead of growing; once it runs
    again the link comes back, and every job is delivered once, acked and
    garbage-collected on every node (copies it missed included)."""
    c = make_cluster(3, config="cluster-bus-send-queue-limit 2mb\n")
    stopped_id = c.ids()[2]
    os.kill(c.servers[2].proc.pid, signal.SIGSTOP)
    try:
        body = b"x" * (512 * 1024)
        ids = [addjob(c[0], "big", body, "REPLICATE", 3, "ASYNC") for _ in range(48)]
        wait_for(lambda: _logged(c.servers[0], f"(node {stopped_id[:8]}) closed: over "
                                 "cluster-bus-send-queue-limit"),
                 20, message="the link to the stopped node closed")
    finally:
        os.kill(c.servers[2].proc.pid, signal.SIGCONT)
    c.wait_mesh()
    got = c[0].execute_command("GETJOB", "NOHANG", "COUNT", 100, "FROM", "big")
    assert sorted(job[1].decode() for job in got) == sorted(ids)
    assert c[0].execute_command("ACKJOB", *ids) == len(ids)
    wait_for(lambda: c.registered_jobs() == [0, 0, 0], 20,
             message="acked jobs gone from every node")
