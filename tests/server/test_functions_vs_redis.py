"""FUNCTION, FCALL and FCALL_RO against redis-server: the same seeded
random streams (functions_gen.py) to trisque and to a redis-server
started here, every reply compared byte for byte (FUNCTION LIST as a set
of libraries, see functions_gen), over RESP2 and RESP3; then the final
libraries and the keys the functions wrote."""

import re

import pytest

from tests.campaigns import seeds
from tests.server import functions_gen
from tests.server.conftest import REDIS_SERVER
from tests.server.test_keyspace_vs_redis import Conn, reply_end

pytestmark = pytest.mark.skipif(
    REDIS_SERVER is None,
    reason="redis-server is not installed (apt-get install redis-server); CI installs it")


def parse(reply, pos=0):
    """A RESP2/RESP3 reply as nested tuples (kind, items...); its end."""
    nl = reply.index(b"\r\n", pos)
    kind = reply[pos:pos + 1]
    if kind not in b"*%~":
        end = reply_end(reply, pos)
        return reply[pos:end], end
    n = int(reply[pos + 1:nl])
    if kind == b"%":
        n *= 2
    pos = nl + 2
    items = []
    for _ in range(max(n, 0)):
        item, pos = parse(reply, pos)
        items.append(item)
    return (kind, tuple(items)), pos


def library_set(reply):
    """FUNCTION LIST's libraries, each with its functions, in any order."""
    (kind, libraries), _ = parse(reply)
    out = []
    for _kind, fields in libraries:
        fields = list(fields)
        i = fields.index(b"$9\r\nfunctions\r\n")
        fkind, functions = fields[i + 1]
        fields[i + 1] = (fkind, tuple(sorted(functions, key=repr)))
        out.append(tuple(fields))
    return kind, sorted(out, key=repr)


# Which of several colliding names an error names follows Redis's
# hash-table order (seeded at random when redis-server starts).
COLLISION = re.compile(rb"^-ERR (Function|Library) \S+ already exists\r\n$")


def same(argv, ours, theirs):
    if ours == theirs:
        return True
    if argv[:2] == [b"FUNCTION", b"LIST"] and ours[:1] == theirs[:1] == b"*":
        return library_set(ours) == library_set(theirs)
    a, b = COLLISION.match(ours), COLLISION.match(theirs)
    return bool(a and b and a.group(1) == b.group(1))


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("seed", seeds([1], [1, 2, 3]))
def test_same_replies_as_redis(make_server, redis_port, seed, proto):
    srv = make_server()
    ours, theirs = Conn(srv.port, proto), Conn(redis_port, proto)
    try:
        for conn in (ours, theirs):
            conn.call([b"FLUSHALL"])
            conn.call([b"FUNCTION", b"FLUSH"])
        differences = []
        for n, argv in enumerate(functions_gen.stream(seed * 10 + proto, 600)):
            a, b = ours.call(argv), theirs.call(argv)
            if not same(argv, a, b):
                differences.append((n, argv, a, b))
        final = [[b"FUNCTION", b"LIST", b"WITHCODE"], [b"FUNCTION", b"STATS"]]
        final += [[b"TYPE", key] for key in functions_gen.KEYS + [b"counter", b"h", b"l"]]
        final += [[b"MGET", *functions_gen.KEYS, b"counter"], [b"HGETALL", b"h"],
                  [b"LRANGE", b"l", b"0", b"-1"]]
        for argv in final:
            a, b = ours.call(argv), theirs.call(argv)
            if not same(argv, a, b):
                differences.append(("final", argv, a, b))
        assert not differences, "\n".join(map(repr, differences[:20]))
    finally:
        ours.close()
        theirs.close()
