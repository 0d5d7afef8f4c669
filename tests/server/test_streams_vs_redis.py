"""Streams against redis-server: the same seeded random stream commands
(tests/server/keyspace_gen_streams.py) to trisque and to a redis-server
started here, every reply compared byte for byte (times masked), over
RESP2 and RESP3, with Redis's default node size and with small nodes
(stream-node-max-entries 4, stream-node-max-bytes 120: approximate
trimming and radix-tree-keys then meet many node splits); then each
stream read back whole.  Then the same after an AOF rewrite and a kill -9
restart of trisque: its streams read back as before.
"""

import pytest

from tests.campaigns import seeds
from tests.harness import wait_for
from tests.server import keyspace_gen_streams as gen
from tests.server.conftest import REDIS_SERVER
from tests.server.test_keyspace_vs_redis import Conn

pytestmark = pytest.mark.skipif(
    REDIS_SERVER is None,
    reason="redis-server is not installed (apt-get install redis-server); CI installs it")

KEYS = [b"x1", b"x2"]


def _node_config(small):
    return (b"4", b"120") if small else (b"100", b"4096")


def _config(conn, small):
    entries, size = _node_config(small)
    assert conn.call([b"CONFIG", b"SET", b"stream-node-max-entries", entries]) == b"+OK\r\n"
    assert conn.call([b"CONFIG", b"SET", b"stream-node-max-bytes", size]) == b"+OK\r\n"


def _state(conn):
    return [gen.masked(argv, conn.call(argv)) for key in KEYS
            for argv in gen.state_commands(key)]


@pytest.mark.parametrize("small", [False, True], ids=["nodes100", "nodes4"])
@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("seed", seeds([1], [1, 2]))
def test_same_replies_as_redis(make_server, redis_port, seed, proto, small):
    entries, size = _node_config(small)
    # (in the file: the AOF is replayed with the same node sizes)
    srv = make_server(config="appendonly yes\nstream-node-max-entries %s\n"
                      "stream-node-max-bytes %s\n" % (entries.decode(), size.decode()))
    ours, theirs = Conn(srv.port, proto), Conn(redis_port, proto)
    try:
        theirs.call([b"FLUSHALL"])
        _config(theirs, small)
        differences = []
        for n, argv in enumerate(gen.commands(seed * 10 + proto + 100 * small, 2000)):
            a, b = ours.call(argv), theirs.call(argv)
            if gen.masked(argv, a) != gen.masked(argv, b):
                differences.append((n, argv, a[:400], b[:400]))
        before = _state(ours)
        assert before == _state(theirs), "final state differs"
        assert not differences, "\n".join(map(repr, differences[:20]))
        assert b"+stream\r\n" in before, "no stream made"
        # The AOF as logged replays to the same streams, and so does a rewrite.
        srv.kill()
        srv.start()
        ours.close()
        ours = Conn(srv.port, proto)
        assert _state(ours) == before
        assert ours.call([b"BGREWRITEAOF"]).startswith(b"+")
        wait_for(lambda: b"aof_rewrite_in_progress:0" in ours.call([b"INFO", b"persistence"]),
                 message="rewrite done")
        srv.kill()
        srv.start()
        ours.close()
        ours = Conn(srv.port, proto)
        assert _state(ours) == before
    finally:
        ours.close()
        theirs.close()
