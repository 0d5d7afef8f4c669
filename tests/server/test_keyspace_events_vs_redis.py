"""Keyspace notifications, byte for byte against redis-server 7.0 in the
same run: a subscriber on ``__key*`` (PSUBSCRIBE) while random sessions
of commands (keyspace_events_gen.py) run on another connection; after
each step the writer publishes a marker on a channel the subscriber also
listens to, and the subscriber's stream up to it (the step's events, in
Redis's order) must be the same bytes, as must the writer's replies.
Also: CONFIG SET/GET of the flag letters, and a bad letter's error.
"""

import socket
import time

import pytest

from tests.server.conftest import REDIS_SERVER
from tests.server.keyspace_events_gen import session

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server")

SEEDS = range(100)


def _encode(argv):
    return b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def send(self, *requests):
        self.sock.sendall(b"".join(map(_encode, requests)))

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

    def close(self):
        self.sock.close()


def run(port, flags, steps):
    """[(writer's replies, subscriber's messages)] per step, from ``port``."""
    admin, writer, sub = Conn(port), Conn(port), Conn(port)
    try:
        admin.send([b"FLUSHALL"], [b"CONFIG", b"SET", b"notify-keyspace-events", flags],
                   [b"PING", b"ready"])
        admin.until(b"\r\nready\r\n")
        sub.send([b"PSUBSCRIBE", b"__key*"], [b"SUBSCRIBE", b"sync"])
        sub.until(b"$4\r\nsync\r\n:2\r\n")
        out = []
        for number, requests in enumerate(steps):
            marker = b"step%d" % number
            tail = b"$%d\r\n%s\r\n" % (len(marker), marker)
            writer.send(*requests, [b"PUBLISH", b"sync", marker], [b"PING", marker])
            replies = writer.until(tail)
            events = sub.until(tail)
            out.append((replies, events))
        return out
    finally:
        admin.send([b"CONFIG", b"SET", b"notify-keyspace-events", b""])
        for conn in (admin, writer, sub):
            conn.close()


@pytest.fixture(scope="module")
def both(shared, redis_port):
    return shared.port, redis_port


@pytest.mark.parametrize("seed", SEEDS)
def test_events_like_redis(both, seed):
    ours, theirs = both
    flags, steps = session(seed)
    got, want = run(ours, flags, steps), run(theirs, flags, steps)
    for number, ((g_replies, g_events), (w_replies, w_events)) in enumerate(zip(got, want)):
        context = f"seed {seed} ({flags.decode()}), step {number} {steps[number]!r}"
        assert g_events == w_events, f"{context} events:\ntrisque {g_events!r}\nredis   {w_events!r}"
        assert g_replies == w_replies, f"{context} replies:\ntrisque {g_replies!r}\nredis   {w_replies!r}"


@pytest.mark.parametrize("value", [b"KEA", b"gKE", b"$lshzxeKE", b"EA", b"Anm", b"",
                                   b"KEAq", b"K E", b"xtdmn", b"AAgK"])
def test_config_like_redis(both, value):
    answers = []
    for port in both:
        conn = Conn(port)
        try:
            conn.send([b"CONFIG", b"SET", b"notify-keyspace-events", value],
                      [b"CONFIG", b"GET", b"notify-keyspace-events"],
                      [b"CONFIG", b"SET", b"notify-keyspace-events", b""], [b"PING", b"done"])
            answers.append(conn.until(b"$4\r\ndone\r\n"))
        finally:
            conn.close()
    assert answers[0] == answers[1]


BLOCKED = [
    ([b"BLPOP", b"l1", b"l2", b"0"], [[b"RPUSH", b"l2", b"a"]]),
    ([b"BRPOP", b"l1", b"0"], [[b"LPUSH", b"l1", b"a", b"b"]]),
    ([b"BLMOVE", b"l1", b"l2", b"RIGHT", b"LEFT", b"0"], [[b"RPUSH", b"l1", b"a"]]),
    ([b"BRPOPLPUSH", b"l1", b"l1", b"0"], [[b"RPUSH", b"l1", b"a"]]),
    ([b"BLMPOP", b"0", b"2", b"l1", b"l2", b"LEFT", b"COUNT", b"3"],
     [[b"RPUSH", b"l2", b"a", b"b"]]),
    ([b"BZPOPMIN", b"z1", b"0"], [[b"ZADD", b"z1", b"1", b"a", b"2", b"b"]]),
    ([b"BZPOPMAX", b"z1", b"0"], [[b"ZADD", b"z1", b"1", b"a"]]),
    ([b"BZMPOP", b"0", b"1", b"z1", b"MAX", b"COUNT", b"5"], [[b"ZADD", b"z1", b"1", b"a"]]),
    ([b"BLPOP", b"l1", b"0"],
     [[b"MULTI"], [b"RPUSH", b"l1", b"a"], [b"DEL", b"l1"], [b"RPUSH", b"l1", b"b"], [b"EXEC"]]),
]


def run_blocked(port, blocked, writes):
    """A client blocked on ``blocked`` served by ``writes``: the
    subscriber's messages (the writes' and the served pop's), the
    replies of both."""
    admin, writer, blocker, sub = Conn(port), Conn(port), Conn(port), Conn(port)
    try:
        admin.send([b"FLUSHALL"], [b"CONFIG", b"SET", b"notify-keyspace-events", b"KEAn"],
                   [b"PING", b"ready"])
        admin.until(b"\r\nready\r\n")
        sub.send([b"PSUBSCRIBE", b"__key*"], [b"SUBSCRIBE", b"sync"])
        sub.until(b"$4\r\nsync\r\n:2\r\n")
        blocker.send(blocked)

        def blocked_now():
            admin.send([b"INFO", b"clients"])
            return b"blocked_clients:1" in admin.until(b"\r\n\r\n")
        deadline = time.monotonic() + 10
        while not blocked_now():
            assert time.monotonic() < deadline, "never blocked"
        writer.send(*writes, [b"PUBLISH", b"sync", b"end"], [b"PING", b"end"])
        replies = writer.until(b"$3\r\nend\r\n")
        events = sub.until(b"$3\r\nend\r\n")
        blocker.send([b"PING", b"end"])
        served = blocker.until(b"$3\r\nend\r\n")
        return events, replies, served
    finally:
        admin.send([b"CONFIG", b"SET", b"notify-keyspace-events", b""])
        for conn in (admin, writer, blocker, sub):
            conn.close()


@pytest.mark.parametrize("blocked, writes", BLOCKED, ids=[b[0][0].decode() for b in BLOCKED])
def test_served_later_like_redis(both, blocked, writes):
    got, want = (run_blocked(port, blocked, writes) for port in both)
    assert got == want
