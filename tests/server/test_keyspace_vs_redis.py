"""The keyspace against redis-server: the same seeded random command
streams (tests/server/keyspace_gen.py: keys and strings) to trisque and to
a redis-server started here, every reply compared byte for byte, over
RESP2 and RESP3.

Replies compared otherwise (keyspace_gen.COMPARE): KEYS in any order
(Redis answers in hash-table order), TTL-like integers within a tolerance
(the two servers read their clocks a few ms apart).  One known difference
is allowed: a string INCRBYFLOAT wrote that reads as an integer is
"embstr" to Redis's OBJECT ENCODING (and not one of its shared integers to
OBJECT REFCOUNT), "int" here (and shared): our encoding is computed from
the bytes, Redis remembers how the value was made.  SET with an EXAT/PXAT
already past is not generated (tests/unit cover it): the expired key it
leaves counts in DBSIZE until each server's expiry cycle removes it.
"""

import socket
import time

import pytest

from tests.campaigns import seeds
from tests.server import keyspace_gen
from tests.server.conftest import REDIS_SERVER

pytestmark = pytest.mark.skipif(
    REDIS_SERVER is None,
    reason="redis-server is not installed (apt-get install redis-server); CI installs it")


def encode(argv):
    return b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)


def reply_end(buf, pos):
    """Where the RESP2/RESP3 reply starting at ``pos`` ends (ValueError:
    not complete yet)."""
    nl = buf.index(b"\r\n", pos)
    kind = buf[pos:pos + 1]
    if kind in b"+-:_#,(":
        return nl + 2
    n = int(buf[pos + 1:nl])
    if kind in b"$=!":
        end = nl + 2 + (n + 2 if n >= 0 else 0)
        if end > len(buf):
            raise ValueError("incomplete")
        return end
    if kind in b"%|":
        n *= 2
    pos = nl + 2
    for _ in range(max(n, 0)):
        pos = reply_end(buf, pos)
    return pos


class Conn:
    def __init__(self, port, proto):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""
        if proto == 3:
            self.call([b"HELLO", b"3"])

    def call(self, argv):
        self.sock.sendall(encode(argv))
        while True:
            try:
                end = reply_end(self.buf, 0)
                break
            except ValueError:
                chunk = self.sock.recv(65536)
                assert chunk, "connection closed"
                self.buf += chunk
        reply, self.buf = self.buf[:end], self.buf[end:]
        return reply

    def close(self):
        self.sock.close()


def elements(reply):
    pos = reply.index(b"\r\n") + 2
    out = []
    while pos < len(reply):
        end = reply_end(reply, pos)
        out.append(reply[pos:end])
        pos = end
    return out


_INCRBYFLOAT_INTEGERS = {(b"$3\r\nint\r\n", b"$6\r\nembstr\r\n"),
                         (b":2147483647\r\n", b":1\r\n")}


def same(argv, ours, theirs):
    rule = keyspace_gen.COMPARE.get(argv[0].upper())
    if ours == theirs:
        return True
    if callable(rule):
        return rule(argv, ours, theirs)
    if rule == "sorted" and ours[:1] == theirs[:1] == b"*":
        return sorted(elements(ours)) == sorted(elements(theirs))
    if isinstance(rule, int) and ours[:1] == theirs[:1] == b":":
        return abs(int(ours[1:]) - int(theirs[1:])) <= rule
    if argv[0].upper() == b"OBJECT" and (ours, theirs) in _INCRBYFLOAT_INTEGERS:
        return True  # (see the module's docstring)
    return False


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("seed", seeds([1], [1, 2, 3]))
def test_same_replies_as_redis(make_server, redis_port, seed, proto):
    srv = make_server()
    ours, theirs = Conn(srv.port, proto), Conn(redis_port, proto)
    try:
        theirs.call([b"FLUSHALL"])
        now_s = int(time.time())
        differences = []
        for n, argv in enumerate(keyspace_gen.stream(seed * 10 + proto, 1500, now_s)):
            a, b = ours.call(argv), theirs.call(argv)
            if not same(argv, a, b):
                differences.append((n, argv, a, b))
            resync = keyspace_gen.RESYNC.get(argv[0].upper())
            for fix in resync(argv, a, b) if resync else ():
                theirs.call(fix)  # a random write (SPOP): Redis's value made ours
        # Then the whole state: every key of the 3 dbs used, its value and TTL.
        for db in (b"0", b"1", b"2"):
            for conn in (ours, theirs):
                conn.call([b"SELECT", db])
            for key in keyspace_gen.KEYS:
                for argv in keyspace_gen.state_commands(key):
                    a, b = ours.call(argv), theirs.call(argv)
                    if not same(argv, a, b):
                        differences.append(("final", db, argv, a, b))
        assert not differences, "\n".join(map(repr, differences[:30]))
    finally:
        ours.close()
        theirs.close()
