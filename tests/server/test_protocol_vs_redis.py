"""The request parser against redis-server's: the same bytes to both, the
same replies and the same end.  Seeded random streams of request arrays
and inline requests (PING and ECHO, which both answer alike), cut into
random writes and mutated a little.  Known differences, for input no
client sends: Redis reads a header up to a CR alone, we up to CRLF, so no
bare CR or LF is generated; and a nested array that ends a read, after a
complete request whose last argument it ends with, is refused when the
next bytes come rather than at once (telling it from the end of that
request would cost every pipelined read: 1 of 6,000 cases, seeds 1-4).
And the null replies of Redis's commands, RESP2 and RESP3, byte for byte."""

import random
import re
import socket
import time

import pytest

from tests.server.conftest import REDIS_SERVER
from tests.server.util import raw_replies

pytestmark = pytest.mark.skipif(
    REDIS_SERVER is None,
    reason="redis-server is not installed (apt-get install redis-server); CI installs it")


def _pings(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(100) == b"+PONG\r\n"
    except OSError:
        return False


def exchange(port, writes):
    """Send each write, half-close, read until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            for data in writes:
                sock.sendall(data)
                time.sleep(0.001)  # (separate reads on the server, mostly)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # closed already, after a protocol error
        out = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
        return out


def normalized(replies):
    """Unknown-command errors differ in wording (Redis 7 lists the
    arguments); keep the command name."""
    return re.sub(rb"-ERR unknown command '([^']*)'[^\r]*\r\n",
                  rb"-ERR unknown command '\1'\r\n", replies)


def array(*args):
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def random_stream(rng):
    parts = []
    for _ in range(rng.randint(1, 8)):
        word = rng.choice([b"a", b"b c", b"*1", b"$3", b"x" * rng.randint(0, 40)])
        parts.append(rng.choice([
            array(b"PING"), array(b"ECHO", word), b"PING\r\n", b"\r\n",
            b"ECHO '%s'\r\n" % word.replace(b"'", b""), b"*0\r\n", b"*-1\r\n",
            array(b"ECHO", word)[:-2] + b"zz",  # a bulk longer than announced
        ]))
    data = bytearray(b"".join(parts))
    for _ in range(rng.choice([0, 0, 1, 2])):  # a few mutations, no bare CR/LF
        pos = rng.randrange(len(data))
        if data[pos] not in b"\r\n":
            data[pos] = rng.choice(b"*$:+-_0123456789 abPING")
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 3))))
    return [bytes(data[i:j]) for i, j in zip([0] + cuts, cuts + [len(data)])]


def closing_reply(port, data):
    """Send ``data`` and keep the connection open: what the server answers
    before it closes (a protocol error), without waiting for more input."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        out = b""
        while chunk := sock.recv(65536):  # (a server waiting for more times out)
            out += chunk
        return out


def test_a_bad_header_is_refused_at_once(make_server, redis_port):
    # Complete requests, then a header where an element should be: Redis
    # answers and closes as soon as the bad header's line is whole.
    srv = make_server()
    for data in (b"*1\r\n$4\r\nPING\r\n*1\r\n*1\r\n",
                 b"*1\r\n*1\r\n$4\r\nPING\r\n",
                 b"*2\r\n$4\r\nECHO\r\n*1\r\n",
                 b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n:1\r\n"):
        theirs = closing_reply(redis_port, data)
        assert theirs.endswith(b"Protocol error: expected '$', got '*'\r\n") or \
            theirs.endswith(b"Protocol error: expected '$', got ':'\r\n")
        assert closing_reply(srv.port, data) == theirs, data
    assert _pings(srv.port)


def test_same_replies_as_redis(make_server, redis_port):
    srv = make_server()
    rng = random.Random(7711)
    for case in range(150):
        writes = random_stream(rng)
        ours = normalized(exchange(srv.port, writes))
        theirs = normalized(exchange(redis_port, writes))
        assert ours == theirs, (case, writes)
    assert _pings(srv.port)


# Replies that are a null, or hold one, in Redis's commands: RESP2's $-1 and
# *-1, RESP3's _ (what redis-server 7 answers each, byte for byte).  WATCH
# and a write from the same connection make the EXEC abort.
NULL_CASES = [
    ("SET", "s", "v"), ("RPUSH", "l", "a"), ("HSET", "h", "f", "v"),
    ("ZADD", "z", "1", "m"), ("SADD", "set", "m"),
    ("GET", "missing"), ("MGET", "s", "missing"), ("GETDEL", "missing"),
    ("GETEX", "missing"), ("SET", "s", "w", "GET", "NX"), ("SET", "new", "v", "NX", "GET"),
    ("LPOP", "missing"), ("RPOP", "missing"), ("LPOP", "missing", "2"),
    ("LINDEX", "l", "5"), ("LPOS", "l", "zz"), ("RPOPLPUSH", "missing", "l"),
    ("HGET", "h", "nope"), ("HGET", "missing", "f"), ("HMGET", "h", "f", "nope"),
    ("ZSCORE", "z", "nope"), ("ZMSCORE", "z", "m", "nope"), ("ZRANK", "z", "nope"),
    ("ZINCRBY", "z", "1", "m"), ("ZADD", "z", "XX", "INCR", "1", "nope"),
    ("SPOP", "missing"), ("SRANDMEMBER", "missing"),
    ("CLIENT", "GETNAME"), ("OBJECT", "ENCODING", "missing"),
    ("EVAL", "return nil", "0"), ("EVAL", "return false", "0"),
    ("EVAL", "return {1, nil, 2}", "0"), ("EVAL", "return redis.call('GET', 'missing')", "0"),
    ("MULTI",), ("GET", "missing"), ("LPOP", "missing", "2"), ("EXEC",),
    ("WATCH", "s"), ("SET", "s", "x"), ("MULTI",), ("GET", "s"), ("EXEC",),
    ("BLPOP", "missing", "0.01"), ("BRPOP", "missing", "0.01"),
    ("BRPOPLPUSH", "missing", "l", "0.01"), ("BLMOVE", "missing", "l", "LEFT", "LEFT", "0.01"),
    ("BZPOPMIN", "missing", "0.01"), ("BLMPOP", "0.01", "1", "missing", "LEFT"),
    ("LMPOP", "1", "missing", "LEFT"),
]


@pytest.mark.parametrize("proto", [2, 3])
def test_null_replies_as_redis(make_server, redis_port, proto):
    """Every null as redis-server's, on RESP2 and RESP3: a RESP3 client
    (redis-py's own parser) reads no RESP2 null."""
    srv = make_server()
    requests = [("HELLO", str(proto)), ("FLUSHALL",)] + NULL_CASES
    ours = raw_replies(srv.port, requests)[2:]
    theirs = raw_replies(redis_port, requests)[2:]
    for request, mine, redis_reply in zip(NULL_CASES, ours, theirs):
        assert mine == redis_reply, request
    if proto == 3:
        assert not any(b"$-1\r\n" in r or b"*-1\r\n" in r for r in ours)
    else:
        assert b"$-1\r\n" in ours and b"*-1\r\n" in ours
