"""Pub/Sub, byte for byte against redis-server 7.0 in the same run: random
sessions (pubsub_gen.py) of three connections, each RESP2 or RESP3, run
step by step against both servers; every connection's whole stream of
replies and pushes (confirmations, messages in their order, subscribed
mode's errors and pongs, PUBSUB's counts, EXEC's and Lua's PUBLISH) must
be the same bytes."""

import pytest

from tests.campaigns import seeds
from tests.server.conftest import REDIS_SERVER
from tests.server.pubsub_gen import UNCOMPARED, session
from tests.server.util import Raw

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server")

SEEDS = seeds(range(50), range(150))


def run(port, protos, steps):
    """Every connection's stream, a list of chunks (one per step it ran
    and one at the end), as received from the server on ``port``."""
    conns = [Raw(port) for _ in protos]
    streams: list[list[bytes]] = [[] for _ in protos]
    try:
        for n, (conn, proto) in enumerate(zip(conns, protos)):
            if proto == 3:
                conn.send_requests([b"HELLO", b"3"], [b"PING", b"hello%d" % n])
                conn.read_until(b"\r\nhello%d\r\n" % n)  # (HELLO's own reply: not compared)
        for number, (i, requests) in enumerate(steps):
            marker = b"sync%d" % number
            conns[i].send_requests(*requests, [b"PING", marker])
            got = conns[i].read_until(b"\r\n" + marker + b"\r\n")
            if requests[0][0] == UNCOMPARED:
                got = b"(hello)"
            streams[i].append(got)
        for n, conn in enumerate(conns):
            marker = b"end%d" % n
            conn.send_requests([b"PING", marker])
            streams[n].append(conn.read_until(b"\r\n" + marker + b"\r\n"))
        return streams
    finally:
        for conn in conns:
            conn.close()


@pytest.fixture(scope="module")
def both(shared, redis_port):
    return shared.port, redis_port


@pytest.mark.parametrize("seed", SEEDS)
def test_session_like_redis(both, seed):
    ours, theirs = both
    protos, steps = session(seed)
    for port in both:  # a clean slate on both
        with Raw(port) as conn:
            assert conn.call(b"FLUSHALL") == b"OK"
    got, want = run(ours, protos, steps), run(theirs, protos, steps)
    for i, (g, w) in enumerate(zip(got, want)):
        for number, (a, b) in enumerate(zip(g, w)):
            assert a == b, (f"seed {seed}, connection {i} (RESP{protos[i]}), its chunk "
                            f"{number}:\ntrisque {a!r}\nredis   {b!r}")
