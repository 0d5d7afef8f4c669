"""The client event loop (server/clients/connection.py) over raw sockets:
many interleaved pipelines, a client that does not read its replies, a
kill from another client, a client that closes its side early."""

import socket
import threading

from tests.harness import wait_for
from tests.server.util import encode


def connect(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_exactly(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, f"closed after {len(data)} of {size} bytes"
        data += chunk
    return data


def test_interleaved_pipelines_each_get_their_replies_in_order(c, shared):
    socks = [connect(shared.port) for _ in range(20)]
    try:
        # every client pipelines ECHOs of its own numbers, all at once
        for n, sock in enumerate(socks):
            sock.sendall(b"".join(encode("ECHO", f"{n}:{i:04d}") for i in range(300)))
        for n, sock in enumerate(socks):
            expected = b"".join(b"$%d\r\n%s\r\n" % (len(v), v) for v in
                                (f"{n}:{i:04d}".encode() for i in range(300)))
            assert read_exactly(sock, len(expected)) == expected
    finally:
        for sock in socks:
            sock.close()


def test_a_client_not_reading_does_not_stall_the_others(c, shared):
    body = "x" * 10000
    c.execute_command("ADDJOB", "big", body, 0)
    job_id = c.execute_command("QPEEK", "big", 1)[0][1]
    hog = connect(shared.port)
    try:
        # ~20 MB of replies it does not read: the server stops reading it
        # (so its own sendall blocks, in a thread)
        request = encode("SHOW", job_id)
        sender = threading.Thread(target=hog.sendall, args=(request * 2000,))
        sender.start()
        wait_for(lambda: shared.client().info("clients")["connected_clients"] >= 2)
        for i in range(50):
            assert c.ping()
            assert c.execute_command("ECHO", str(i)) == str(i).encode()
        # then it reads: every reply arrives
        got = 0
        while got < 2000 * 10000:
            chunk = hog.recv(1 << 20)
            assert chunk, f"closed after {got} bytes"
            got += len(chunk)
        sender.join(10)
        assert not sender.is_alive()
        assert c.ping()
    finally:
        hog.close()


def test_client_kill_closes_an_idle_client_at_once(c, shared):
    victim = connect(shared.port)
    try:
        victim.sendall(encode("CLIENT", "ID"))
        reply = victim.recv(100)
        victim_id = int(reply[1:reply.index(b"\r\n")])
        assert c.execute_command("CLIENT", "KILL", "ID", victim_id) == 1
        victim.settimeout(5)
        assert victim.recv(100) == b""  # closed by the server, not by a timeout
        wait_for(lambda: all(int(cl["id"]) != victim_id for cl in c.client_list()),
                 message="the killed client to be gone")
    finally:
        victim.close()


def test_replies_before_the_client_closes_its_side_are_sent(c, shared):
    sock = connect(shared.port)
    try:
        sock.sendall(b"".join(encode("ADDJOB", "early", f"b{i}", 0) for i in range(100)))
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        replies = data.split(b"\r\n")
        # (by line: "+D-" can also end an ID's random part, base64's '+')
        assert replies.pop() == b"" and len(replies) == 100
        assert all(r.startswith(b"+D-") and len(r) == 41 for r in replies)
        assert c.execute_command("QLEN", "early") == 100
    finally:
        sock.close()


def test_many_clients_at_once_from_threads(c, shared):
    errors = []

    def worker(n):
        try:
            sock = connect(shared.port)
            for i in range(50):
                sock.sendall(encode("ADDJOB", "threads", f"{n}-{i}", 0))
                reply = sock.recv(100)
                assert reply.startswith(b"+D-") and reply.endswith(b"\r\n"), reply
            sock.close()
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert c.execute_command("QLEN", "threads") == 30 * 50


def test_client_kill_closes_a_subscriber_that_stopped_reading(c, shared):
    """CLIENT KILL of a client whose socket is full (a subscriber that reads
    nothing while messages pile up): the kill must not wait for the socket
    to drain, which never happens."""
    def listed():
        text = c.execute_command("CLIENT", "LIST")
        return "name=stuck" in (text.decode() if isinstance(text, bytes) else text)

    stuck = connect(shared.port)
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.sendall(encode("CLIENT", "SETNAME", "stuck") + encode("SUBSCRIBE", "flood"))
    wait_for(listed, 10, message="the subscriber to be listed")
    message = b"x" * 16384
    for _ in range(1000):  # 16 MB: far more than the kernel buffers hold
        c.execute_command("PUBLISH", "flood", message)
    assert listed()
    assert c.execute_command("CLIENT", "KILL", "SKIPME", "yes", "TYPE", "pubsub") >= 1
    wait_for(lambda: not listed(), 10, message="the killed subscriber to be gone")
    stuck.close()
