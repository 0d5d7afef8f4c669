"""The cluster bus over TLS (tls-cluster yes), with real nodes and trustme
certificates: three nodes mesh and replicate REPLICATE 3 over TLS links;
a node without TLS, or with a certificate from another CA, never joins
(the handshakes fail both ways, logged), and the cluster keeps working."""

import socket
import ssl

import pytest

from tests.cluster.conftest import addjob, cluster_nodes
from tests.harness import Server, wait_for
from tests.tls_certs import make_certs

NODE_TIMEOUT_MS = 2000


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(str(tmp_path_factory.mktemp("certs")))


def tls_config(certs, identity=None):
    return f"tls-cluster yes\n{certs.node_config(identity)}"


def bus_port(server):
    return server.port + 10000


def test_three_nodes_replicate_over_tls(make_cluster, certs):
    cluster = make_cluster(3, config=tls_config(certs))  # meshed: MEET went over TLS
    for server in cluster.servers:
        assert "Cluster bus over TLS" in server.log()
    job_id = addjob(cluster[0], "tls-bus", "replicated", "REPLICATE", 3)
    wait_for(lambda: cluster.job_holders(job_id) == [0, 1, 2],
             message="3 copies over the TLS bus")
    got = cluster[2].execute_command("GETJOB", "TIMEOUT", 2000, "FROM", "tls-bus")
    assert got == [[b"tls-bus", job_id.encode(), b"replicated"]]
    assert cluster[2].execute_command("ACKJOB", job_id) == 1
    # the ack reaches every holder over the bus, which then forget the job
    wait_for(lambda: cluster.job_holders(job_id) == [], message="the ack spread")

    # The bus port speaks TLS: a TLS client with a certificate from the CA
    # completes a handshake and sees a node certificate from that CA ...
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.load_verify_locations(certs.ca)
    context.load_cert_chain(certs.client.cert, certs.client.key)
    port = bus_port(cluster.servers[0])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw) as tls:
            assert tls.getpeercert() is not None
    # ... and one without a certificate is refused
    anonymous = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    anonymous.check_hostname = False
    anonymous.load_verify_locations(certs.ca)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            with anonymous.wrap_socket(raw) as tls:
                tls.sendall(b"x")
                tls.recv(10)  # TLS 1.3: the refusal comes after the client's Finished
    wait_for(lambda: "peer did not return a certificate" in cluster.servers[0].log(),
             message="the anonymous peer logged")
    assert cluster.job_holders(addjob(cluster[1], "after", "x", "REPLICATE", 3)) == [0, 1, 2]


def test_nodes_without_tls_or_from_another_ca_cannot_join(make_cluster, certs, tmp_path):
    cluster = make_cluster(2, config=tls_config(certs))
    plain = Server(config=f"cluster-node-timeout {NODE_TIMEOUT_MS}\n").start()
    stranger = Server(config=f"cluster-node-timeout {NODE_TIMEOUT_MS}\n"
                             + tls_config(certs, certs.stranger)).start()
    intruders = [plain, stranger]
    try:
        members = [s.client() for s in cluster.servers]
        for intruder in intruders:
            c = intruder.client()
            # both ways: the intruder meets a member, a member meets it
            c.execute_command("CLUSTER", "MEET", "127.0.0.1", cluster.servers[0].port)
            members[1].execute_command("CLUSTER", "MEET", "127.0.0.1", intruder.port)
            c.close()
        log0 = cluster.servers[0].log
        log1 = cluster.servers[1].log
        # the plaintext node's frames are not a TLS handshake; it hangs up on ours
        wait_for(lambda: "failed: wrong version number" in log0()
                 or "failed: unknown protocol" in log0(), message="plaintext refused")
        wait_for(lambda: "closed during the handshake" in log1(),
                 message="the plaintext node hung up on our handshake")
        # the stranger's certificate is not from our CA, nor ours from its:
        # whoever connects checks first and the other hears why
        wait_for(lambda: "certificate verify failed" in log1(),
                 message="the stranger's certificate refused")
        wait_for(lambda: "alert unknown ca" in log0(), message="ours refused by it")
        wait_for(lambda: "certificate verify failed" in stranger.log(),
                 message="the stranger refused ours")
        intruder_ids = {s.client().execute_command("CLUSTER", "MYID").decode()
                        for s in intruders}
        member_ids = set(cluster.ids())
        for c in members:
            nodes = cluster_nodes(c)
            assert not intruder_ids & set(nodes), "an intruder joined"
            # what is left of the MEETs is a handshake that never completes
            for entry in nodes.values():
                if entry["addr"].split(":")[-1] in (str(plain.port), str(stranger.port)):
                    assert "handshake" in entry["flags"], entry
        for intruder in intruders:
            c = intruder.client()
            assert not member_ids & set(cluster_nodes(c)), "the intruder met a member"
            c.close()
        # the cluster still replicates between its members
        job_id = addjob(members[0], "still", "ok", "REPLICATE", 2)
        assert cluster.job_holders(job_id) == [0, 1]
        for c in members:
            c.close()
    finally:
        for intruder in intruders:
            intruder.cleanup()


def test_a_cluster_ca_apart_from_the_clients_ca(make_cluster, certs):
    """tls-cluster-ca-cert-file: nodes' certificates come from their own CA,
    and a client's certificate (from tls-ca-cert-file's CA) opens no bus link."""
    node = certs.stranger  # here: a node certificate from the nodes' CA
    config = (f"tls-cluster yes\ntls-cert-file {node.cert}\ntls-key-file {node.key}\n"
              f"tls-ca-cert-file {certs.ca}\ntls-cluster-ca-cert-file {certs.other_ca}\n")
    cluster = make_cluster(2, config=config)
    job_id = addjob(cluster[0], "apart", "x", "REPLICATE", 2)
    assert cluster.job_holders(job_id) == [0, 1]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.load_verify_locations(certs.other_ca)  # we trust the node ...
    context.load_cert_chain(certs.client.cert, certs.client.key)  # ... it not us
    with socket.create_connection(("127.0.0.1", bus_port(cluster.servers[0])),
                                  timeout=10) as raw:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            with context.wrap_socket(raw) as tls:
                tls.sendall(b"x")
                tls.recv(10)
    wait_for(lambda: "certificate verify failed" in cluster.servers[0].log(),
             message="the client's certificate refused on the bus")


def test_tls_and_cluster_secret_together(make_cluster, certs):
    """The HMAC of cluster-secret rides inside the TLS links: its hello,
    sent as a link opens, waits for the handshake and follows it."""
    cluster = make_cluster(2, config=tls_config(certs) + "cluster-secret both\n")
    job_id = addjob(cluster[0], "both", "x", "REPLICATE", 2)
    assert cluster.job_holders(job_id) == [0, 1]
    got = cluster[1].execute_command("GETJOB", "TIMEOUT", 2000, "FROM", "both")
    assert got[0][1] == job_id.encode()
    for server in cluster.servers:
        assert "TLS handshake" not in server.log()
