"""Pub/Sub, byte for byte against redis-server 7.0 in the same run: random
sessions (pubsub_gen.py) of three connections, each RESP2 or RESP3, run
step by step against both servers; every connection's whole stream of
replies and pushes (confirmations, messages in their order, subscribed
mode's errors and pongs, PUBSUB's counts, EXEC's and Lua's PUBLISH) must
be the same bytes."""

import socket
import time

import pytest

from tests.campaigns import seeds
from tests.server.conftest import REDIS_SERVER
from tests.server.pubsub_gen import UNCOMPARED, session

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server")

SEEDS = seeds(range(50), range(150))


def _encode(argv):
    return b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""
        self.stream = []  # what was received, step by step

    def until(self, marker, timeout=10):
        deadline = time.monotonic() + timeout
        while marker not in self.buf:
            assert time.monotonic() < deadline, f"no {marker!r} in {self.buf[-300:]!r}"
            data = self.sock.recv(65536)
            assert data, f"closed; got {self.buf[-300:]!r}"
            self.buf += data
        end = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:end], self.buf[end:]
        return out


def run(port, protos, steps):
    """Every connection's stream, a list of chunks (one per step it ran
    and one at the end), as received from the server on ``port``."""
    conns = [Conn(port) for _ in protos]
    try:
        for n, (conn, proto) in enumerate(zip(conns, protos)):
            if proto == 3:
                conn.sock.sendall(_encode([b"HELLO", b"3"]) + _encode([b"PING", b"hello%d" % n]))
                conn.until(b"\r\nhello%d\r\n" % n)  # (HELLO's own reply: not compared)
        for number, (i, requests) in enumerate(steps):
            conn = conns[i]
            marker = b"sync%d" % number
            conn.sock.sendall(b"".join(map(_encode, requests)) + _encode([b"PING", marker]))
            got = conn.until(b"\r\n" + marker + b"\r\n")
            if requests[0][0] == UNCOMPARED:
                got = b"(hello)"
            conn.stream.append(got)
        for n, conn in enumerate(conns):
            marker = b"end%d" % n
            conn.sock.sendall(_encode([b"PING", marker]))
            conn.stream.append(conn.until(b"\r\n" + marker + b"\r\n"))
        return [conn.stream for conn in conns]
    finally:
        for conn in conns:
            conn.sock.close()


@pytest.fixture(scope="module")
def both(shared, redis_port):
    return shared.port, redis_port


@pytest.mark.parametrize("seed", SEEDS)
def test_session_like_redis(both, seed):
    ours, theirs = both
    protos, steps = session(seed)
    for port in both:  # a clean slate on both
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(_encode([b"FLUSHALL"]))
            s.recv(100)
    got, want = run(ours, protos, steps), run(theirs, protos, steps)
    for i, (g, w) in enumerate(zip(got, want)):
        for number, (a, b) in enumerate(zip(g, w)):
            assert a == b, (f"seed {seed}, connection {i} (RESP{protos[i]}), its chunk "
                            f"{number}:\ntrisque {a!r}\nredis   {b!r}")
