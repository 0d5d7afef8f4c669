"""Keyspace notifications, byte for byte against redis-server 7.0 in the
same run: a subscriber on ``__key*`` (PSUBSCRIBE) while random sessions
of commands (keyspace_events_gen.py) run on another connection; after
each step the writer publishes a marker on a channel the subscriber also
listens to, and the subscriber's stream up to it (the step's events, in
Redis's order) must be the same bytes, as must the writer's replies.
Also: CONFIG SET/GET of the flag letters, and a bad letter's error.
"""

import time

import pytest

from tests.server.conftest import REDIS_SERVER
from tests.server.keyspace_events_gen import session
from tests.server.util import Raw

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server")

SEEDS = range(100)


def run(port, flags, steps):
    """[(writer's replies, subscriber's messages)] per step, from ``port``."""
    admin, writer, sub = Raw(port), Raw(port), Raw(port)
    try:
        admin.send_requests([b"FLUSHALL"], [b"CONFIG", b"SET", b"notify-keyspace-events", flags],
                            [b"PING", b"ready"])
        admin.read_until(b"\r\nready\r\n")
        sub.send_requests([b"PSUBSCRIBE", b"__key*"], [b"SUBSCRIBE", b"sync"])
        sub.read_until(b"$4\r\nsync\r\n:2\r\n")
        out = []
        for number, requests in enumerate(steps):
            marker = b"step%d" % number
            tail = b"$%d\r\n%s\r\n" % (len(marker), marker)
            writer.send_requests(*requests, [b"PUBLISH", b"sync", marker], [b"PING", marker])
            replies = writer.read_until(tail)
            events = sub.read_until(tail)
            out.append((replies, events))
        return out
    finally:
        admin.send_requests([b"CONFIG", b"SET", b"notify-keyspace-events", b""])
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
        conn = Raw(port)
        try:
            conn.send_requests([b"CONFIG", b"SET", b"notify-keyspace-events", value],
                               [b"CONFIG", b"GET", b"notify-keyspace-events"],
                               [b"CONFIG", b"SET", b"notify-keyspace-events", b""],
                               [b"PING", b"done"])
            answers.append(conn.read_until(b"$4\r\ndone\r\n"))
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
    admin, writer, blocker, sub = Raw(port), Raw(port), Raw(port), Raw(port)
    try:
        admin.send_requests([b"FLUSHALL"],
                            [b"CONFIG", b"SET", b"notify-keyspace-events", b"KEAn"],
                            [b"PING", b"ready"])
        admin.read_until(b"\r\nready\r\n")
        sub.send_requests([b"PSUBSCRIBE", b"__key*"], [b"SUBSCRIBE", b"sync"])
        sub.read_until(b"$4\r\nsync\r\n:2\r\n")
        blocker.send_requests(blocked)

        def blocked_now():
            admin.send_requests([b"INFO", b"clients"])
            return b"blocked_clients:1" in admin.read_until(b"\r\n\r\n")
        deadline = time.monotonic() + 10
        while not blocked_now():
            assert time.monotonic() < deadline, "never blocked"
        writer.send_requests(*writes, [b"PUBLISH", b"sync", b"end"], [b"PING", b"end"])
        replies = writer.read_until(b"$3\r\nend\r\n")
        events = sub.read_until(b"$3\r\nend\r\n")
        blocker.send_requests([b"PING", b"end"])
        served = blocker.read_until(b"$3\r\nend\r\n")
        return events, replies, served
    finally:
        admin.send_requests([b"CONFIG", b"SET", b"notify-keyspace-events", b""])
        for conn in (admin, writer, blocker, sub):
            conn.close()


@pytest.mark.parametrize("blocked, writes", BLOCKED, ids=[b[0][0].decode() for b in BLOCKED])
def test_served_later_like_redis(both, blocked, writes):
    got, want = (run_blocked(port, blocked, writes) for port in both)
    assert got == want
