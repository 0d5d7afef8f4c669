"""TlsSocket's contract, in process over a socketpair: the handshake runs
inside recv/send of non-blocking sockets, and a sender that keeps what
send() did not take and offers it again (with more after it, as the
client and bus loops do) delivers every byte in order, through partial
sends of a full kernel buffer.  Certificates from trustme."""

import os
import select
import socket
import ssl

import pytest
import trustme

from trisque.shell.tls import HandshakeDeadlines, TlsSocket, TlsStream


class Owner:
    """What a TlsSocket reports to (ClientTls/BusTls in the node)."""

    def __init__(self):
        self.deadlines = HandshakeDeadlines(10_000)
        self.failures = []

    def failed(self, peer, reason):
        self.failures.append((peer, reason))


@pytest.fixture(scope="module")
def contexts():
    ca = trustme.CA()
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(server)
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.check_hostname = False
    ca.configure_trust(client)
    return server, client


def pair(contexts):
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    server_owner, client_owner = Owner(), Owner()
    server = TlsSocket(a, TlsStream(contexts[0], server_side=True), server_owner,
                       "server-side", lambda: None)
    client = TlsSocket(b, TlsStream(contexts[1], server_side=False), client_owner,
                       "client-side", lambda: None)
    return server, client, server_owner, client_owner


def read_some(sock):
    try:
        return sock.recv(16 * 1024)
    except BlockingIOError:
        return None


def test_bytes_cross_in_order_through_partial_sends(contexts):
    server, client, server_owner, client_owner = pair(contexts)
    # Data offered before the handshake ends waits inside and goes after it.
    assert client.send(b"hello ") == 6
    greeting = b""
    for _ in range(20):
        greeting += read_some(server) or b""
        read_some(client)
    assert server.established and client.established
    assert greeting == b"hello "
    assert len(server_owner.deadlines) == 0 and len(client_owner.deadlines) == 0
    payload = os.urandom(5 * 1024 * 1024)
    unsent = payload  # the sender's own buffer, as the loops keep it
    received = bytearray()
    partial_sends = 0
    while len(received) < len(payload):
        if unsent:
            # offer the whole rest, or a part of it: both keep the contract
            offered = unsent if partial_sends % 2 else unsent[:1024 * 1024]
            sent = server.send(offered)
            if sent < len(offered):
                partial_sends += 1
            unsent = unsent[sent:]
        select.select([client.fileno()], [], [], 1)
        while (data := read_some(client)) is not None:
            assert data, "closed"
            received += data
    assert partial_sends > 0  # the kernel buffer filled: the contract was exercised
    assert bytes(received) == payload
    assert not server_owner.failures and not client_owner.failures
    server.close()
    client.close()


def test_a_failed_handshake_is_reported_and_raised(contexts):
    a, b = socket.socketpair()
    a.setblocking(False)
    owner = Owner()
    server = TlsSocket(a, TlsStream(contexts[0], server_side=True), owner, "peer 1",
                       lambda: None)
    b.sendall(b"PING\r\n")
    with pytest.raises(ConnectionAbortedError):
        server.recv(4096)
    assert owner.failures and owner.failures[0][0] == "peer 1"
    assert len(owner.deadlines) == 0
    server.close()
    b.close()


def test_deadlines_expire_in_order():
    deadlines = HandshakeDeadlines(100)
    deadlines.start("a", 0)
    deadlines.start("b", 50)
    deadlines.start("c", 80)
    deadlines.done("b")
    assert deadlines.expired(99) == []
    assert deadlines.expired(150) == ["a"]
    assert deadlines.expired(1000) == ["c"]
    assert len(deadlines) == 0


def test_close_notify_ends_the_stream_after_the_data_before_it(contexts):
    server, client, _, _ = pair(contexts)
    for _ in range(20):
        read_some(server)
        read_some(client)
    assert server.established and client.established
    client.send(b"last words")
    # close_notify alone, the TCP connection left open (as TlsSocket.close
    # sends it before closing the socket)
    client._raw.send(client._stream.goodbye())
    data = b""
    for _ in range(100):
        select.select([server.fileno()], [], [], 0.1)
        chunk = read_some(server)
        if chunk == b"":
            break  # the end, though no FIN came
        data += chunk or b""
    assert data == b"last words"
    assert server.recv(4096) == b""
    server.close()
    client.close()
