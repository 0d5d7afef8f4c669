"""TLS on the client port (tls-port beside port), against real nodes, with
certificates made by trustme: redis-py and redis-cli --tls run jobs over
it, client certificates are required, optional or not asked for as
tls-auth-clients says, and a bad or stalled handshake closes that
connection only.  Bad TLS files stop the node at start, naming the file."""

import os
import shutil
import socket
import ssl
import subprocess
import time

import pytest
import redis

from tests.harness import Server, free_port, wait_for
from tests.tls_certs import make_certs

REDIS_CLI = shutil.which("redis-cli")
HANDSHAKE_TIMEOUT_MS = 1000


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(str(tmp_path_factory.mktemp("certs")))


def _tls_server(certs, extra=""):
    tls_port = free_port()
    srv = Server(config=f"tls-port {tls_port}\n{certs.node_config()}"
                        f"tls-handshake-timeout-ms {HANDSHAKE_TIMEOUT_MS}\n{extra}")
    srv.tls_port = tls_port
    return srv.start()


@pytest.fixture(scope="module")
def node(certs):
    """A node with port and tls-port, client certificates required."""
    srv = _tls_server(certs)
    yield srv
    srv.cleanup()


@pytest.fixture
def make_tls_server(certs):
    started = []

    def make(extra=""):
        srv = _tls_server(certs, extra)
        started.append(srv)
        return srv
    yield make
    for srv in started:
        srv.cleanup()


def tls_client(srv, certs, identity="client", **kwargs):
    """redis-py over TLS; ``identity`` None: no client certificate."""
    ident = getattr(certs, identity) if identity else None
    kwargs.setdefault("socket_timeout", 10)
    return redis.Redis(host="127.0.0.1", port=srv.tls_port, ssl=True,
                       ssl_ca_certs=certs.ca,
                       ssl_certfile=ident.cert if ident else None,
                       ssl_keyfile=ident.key if ident else None,
                       retry=None, **kwargs)


def job_round(r, queue):
    """ADDJOB, GETJOB, ACKJOB: the job comes back and is acknowledged."""
    job_id = r.execute_command("ADDJOB", queue, b"body of " + queue.encode(), 0)
    got = r.execute_command("GETJOB", "TIMEOUT", 1000, "FROM", queue)
    assert got == [[queue.encode(), job_id, b"body of " + queue.encode()]]
    assert r.execute_command("ACKJOB", job_id) == 1
    return job_id


def test_redis_py_over_tls_beside_the_plain_port(node, certs):
    secure = tls_client(node, certs)
    plain = node.client()
    try:
        job_round(secure, "tls-q")
        # both ports serve the same node at once
        job_id = secure.execute_command("ADDJOB", "shared", "from tls", 0)
        assert plain.execute_command("QLEN", "shared") == 1
        assert plain.execute_command("GETJOB", "FROM", "shared")[0][1] == job_id
        plain_id = plain.execute_command("ADDJOB", "shared", "from plain", 0)
        assert secure.execute_command("GETJOB", "FROM", "shared")[0][1] == plain_id
        # large values and long pipelines cross TLS records and partial sends
        value = os.urandom(3 * 1024 * 1024)
        assert secure.set("big", value)
        assert secure.get("big") == value
        pipe = secure.pipeline(transaction=False)
        for i in range(5000):
            pipe.execute_command("ADDJOB", "piped", str(i), 0, "ASYNC")
        assert len(pipe.execute()) == 5000
        assert plain.execute_command("QLEN", "piped") == 5000
        assert secure.config_get("tls-port") == {"tls-port": str(node.tls_port)}
    finally:
        secure.close()
        plain.close()


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed (redis-tools)")
def test_redis_cli_over_tls(node, certs):
    def cli(*args, cert=True):
        command = [REDIS_CLI, "-h", "127.0.0.1", "-p", str(node.tls_port), "--tls",
                   "--cacert", certs.ca]
        if cert:
            command += ["--cert", certs.client.cert, "--key", certs.client.key]
        done = subprocess.run(command + list(args), capture_output=True, text=True,
                              timeout=20)
        return done.stdout.strip() + done.stderr.strip()
    job_id = cli("ADDJOB", "cli-q", "hello", "0")
    assert job_id.startswith("D-"), job_id
    got = cli("GETJOB", "FROM", "cli-q")
    assert got.split("\n") == ["cli-q", job_id, "hello"]
    assert cli("ACKJOB", job_id) == "1"
    refused = cli("PING", cert=False)  # tls-auth-clients yes: no certificate, no service
    assert "PONG" not in refused
    wait_for(lambda: "peer did not return a certificate" in node.log(),
             message="the refusal logged")


def test_a_client_certificate_is_required_by_default(node, certs):
    for identity in (None, "stranger"):
        r = tls_client(node, certs, identity=identity)
        with pytest.raises(redis.ConnectionError):
            r.ping()
        r.close()
    log = wait_for(lambda: "certificate verify failed" in node.log() and node.log(),
                   message="a stranger's certificate refused and logged")
    assert "TLS handshake with client 127.0.0.1:" in log
    assert "peer did not return a certificate" in log
    ok = tls_client(node, certs)
    assert ok.ping()  # the node still serves
    ok.close()


def test_auth_clients_no_and_optional(make_tls_server, certs):
    unasked = make_tls_server("tls-auth-clients no\n")
    optional = make_tls_server("tls-auth-clients optional\n")
    for srv in (unasked, optional):
        r = tls_client(srv, certs, identity=None)
        job_round(r, "anon")
        r.close()
        r = tls_client(srv, certs)  # with a good certificate too
        job_round(r, "known")
        r.close()
    # optional: a certificate shown is checked
    stranger = tls_client(optional, certs, identity="stranger")
    with pytest.raises(redis.ConnectionError):
        stranger.ping()
    stranger.close()
    wait_for(lambda: "certificate verify failed" in optional.log(),
             message="the stranger refused and logged")


def test_garbage_on_the_tls_port_closes_only_that_connection(node, certs):
    plain = node.client()
    secure = tls_client(node, certs)
    assert secure.ping()
    failures = plain.info("stats")["tls_handshake_failures"]
    garbage = [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"PING\r\n", os.urandom(4096),
               b"\x16\x03\x01\x00\x05hello", b"\x16\x03\x03" + os.urandom(300)]
    for data in garbage:
        with socket.create_connection(("127.0.0.1", node.tls_port), timeout=10) as s:
            s.sendall(data)
            # the node answers at most an alert, then closes
            received = b""
            while True:
                try:
                    chunk = s.recv(4096)
                except ConnectionResetError:
                    break
                if not chunk:
                    break
                received += chunk
            assert b"PONG" not in received and b"HTTP" not in received
        assert plain.ping() and secure.ping()
    job_round(plain, "after-garbage")
    job_round(secure, "after-garbage-tls")
    wait_for(lambda: "failed: http request" in node.log(), message="the failure logged")
    assert plain.info("stats")["tls_handshake_failures"] == failures + len(garbage)
    plain.close()
    secure.close()


def _client_hello_start():
    """The first bytes of a real ClientHello (a handshake begun, never ended)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ssl.create_default_context().wrap_bio(incoming, outgoing,
                                               server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    hello = outgoing.read()
    return hello[:len(hello) // 2]


def test_a_client_stuck_in_its_handshake_is_dropped(node, certs):
    plain = node.client()
    silent = socket.create_connection(("127.0.0.1", node.tls_port), timeout=30)
    halfway = socket.create_connection(("127.0.0.1", node.tls_port), timeout=30)
    halfway.sendall(_client_hello_start())
    stalled = {f"127.0.0.1:{s.getsockname()[1]}" for s in (silent, halfway)}

    def listed():
        return stalled & {c["addr"] for c in plain.client_list()}
    try:
        wait_for(lambda: listed() == stalled, message="both stalled clients accepted")
        # meanwhile everyone else is served, over TLS too
        secure = tls_client(node, certs)
        job_round(secure, "while-stalled")
        secure.close()
        start = time.monotonic()
        for sock in (silent, halfway):
            assert sock.recv(4096) == b""  # closed by the node, no reply
        waited_s = time.monotonic() - start
        assert waited_s < 10, "the handshake deadline did not close them"
        wait_for(lambda: not listed(), message="their client slots freed")
        assert f"not finished within {HANDSHAKE_TIMEOUT_MS} ms" in node.log()
        job_round(plain, "after-stalled")
    finally:
        silent.close()
        halfway.close()
        plain.close()


def _start_fails(config):
    srv = Server(config=config)
    try:
        srv.start(wait=False)
        assert srv.proc.wait(20) == 1
        return srv.log()
    finally:
        srv.cleanup()


def test_bad_tls_files_stop_the_node_naming_them(certs, tmp_path):
    port = free_port()
    missing = str(tmp_path / "nowhere.crt")
    log = _start_fails(f"tls-port {port}\ntls-cert-file {missing}\n"
                       f"tls-key-file {certs.node.key}\ntls-ca-cert-file {certs.ca}\n")
    assert f"tls-cert-file {missing}: No such file or directory" in log
    bad_key = tmp_path / "bad.key"
    bad_key.write_text("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
    log = _start_fails(f"tls-port {port}\ntls-cert-file {certs.node.cert}\n"
                       f"tls-key-file {bad_key}\ntls-ca-cert-file {certs.ca}\n")
    assert f"tls-key-file {bad_key}: the private key could not be loaded" in log
    # another certificate's key: does not match
    log = _start_fails(f"tls-port {port}\ntls-cert-file {certs.node.cert}\n"
                       f"tls-key-file {certs.client.key}\ntls-ca-cert-file {certs.ca}\n")
    assert f"tls-key-file {certs.client.key}" in log and "does not match" in log
    log = _start_fails(f"tls-port {port}\ntls-cert-file {certs.node.key}\n"
                       f"tls-key-file {certs.node.key}\ntls-ca-cert-file {certs.ca}\n")
    assert f"tls-cert-file {certs.node.key}: no PEM certificate" in log
    # tls-auth-clients yes (the default) needs the CA that signs clients
    log = _start_fails(f"tls-port {port}\ntls-cert-file {certs.node.cert}\n"
                       f"tls-key-file {certs.node.key}\n")
    assert "tls-auth-clients yes needs tls-ca-cert-file" in log
    log = _start_fails(f"tls-cluster yes\ntls-cert-file {certs.node.cert}\n"
                       f"tls-key-file {certs.node.key}\ntls-ca-cert-file {missing}\n")
    assert f"tls-ca-cert-file {missing}: No such file or directory" in log
    log = _start_fails(f"tls-port {port}\n{certs.node_config()}tls-protocols TLSv1.1\n")
    assert "tls-protocols" in log


def test_port_0_serves_tls_clients_only(certs):
    tls_port = free_port()
    srv = Server(config=f"port 0\ntls-port {tls_port}\n{certs.node_config()}")
    srv.tls_port = tls_port
    try:
        srv.start(wait=False)
        r = tls_client(srv, certs, socket_connect_timeout=2)

        def up():
            assert srv.proc.poll() is None, srv.log()
            try:
                return r.ping()
            except redis.ConnectionError:
                return False
        wait_for(up, 15, message="the TLS-only node")
        job_round(r, "tls-only")
        assert r.info("server")["tcp_port"] == 0
        # the cluster knows the node by its TLS port; the bus follows it
        myself = r.execute_command("CLUSTER", "NODES").decode().split("\n")[0]
        assert f"127.0.0.1:{tls_port} myself" in myself
        with socket.create_connection(("127.0.0.1", tls_port + 10000), timeout=5):
            pass
        r.close()
    finally:
        srv.cleanup()
    log = _start_fails("port 0\n")
    assert "port 0 and tls-port 0: no port to serve clients on" in log


def _served_serial(port, certs):
    """The serial number of the certificate the TLS port shows now."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(certs.ca)
    context.load_cert_chain(certs.client.cert, certs.client.key)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(b"PING\r\n")
            assert tls.recv(100) == b"+PONG\r\n"
            return tls.getpeercert()["serialNumber"]


def test_config_set_reloads_certificates(certs, tmp_path):
    cert, key = str(tmp_path / "node.crt"), str(tmp_path / "node.key")
    shutil.copy(certs.node.cert, cert)
    shutil.copy(certs.node.key, key)
    tls_port = free_port()
    srv = Server(config=f"tls-port {tls_port}\ntls-cert-file {cert}\ntls-key-file {key}\n"
                        f"tls-ca-cert-file {certs.ca}\n")
    srv.tls_port = tls_port
    try:
        srv.start()
        plain = srv.client()
        before = _served_serial(tls_port, certs)
        kept = tls_client(srv, certs)
        assert kept.ping()
        # rotation in place: new files, then CONFIG SET naming one of them
        certs.issue(cert, key)
        assert plain.config_set("tls-cert-file", cert)
        after = _served_serial(tls_port, certs)
        assert after != before
        assert kept.ping()  # connections made before keep going
        assert "TLS certificates and settings reloaded" in srv.log()
        # a refused file changes nothing: the value goes back, TLS serves on
        bad = tmp_path / "bad.key"
        bad.write_text("not a key\n")
        with pytest.raises(redis.ResponseError, match=f"tls-key-file {bad}"):
            plain.config_set("tls-key-file", str(bad))
        assert plain.config_get("tls-key-file") == {"tls-key-file": key}
        assert _served_serial(tls_port, certs) == after
        # tls-auth-clients at runtime: a client without a certificate served
        anonymous = tls_client(srv, certs, identity=None)
        with pytest.raises(redis.ConnectionError):
            anonymous.ping()
        assert plain.config_set("tls-auth-clients", "no")
        job_round(anonymous, "anonymous-now")
        for c in (plain, kept, anonymous):
            c.close()
    finally:
        srv.cleanup()
