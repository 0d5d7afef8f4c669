"""SORT, SORT_RO and COPY (keyspace_gen_sort.py), and the sorted-set
algebra, ZMPOP, SWAPDB and LCS (keyspace_gen_algebra.py) against
redis-server: the same seeded random streams to trisque and to a
redis-server started here, every reply compared byte for byte (TTLs
within a second), over RESP2 and RESP3, then every key's value in the 3
dbs used."""

import time

import pytest

from tests.campaigns import seeds
from tests.server import keyspace_gen_algebra, keyspace_gen_sort
from tests.server.conftest import REDIS_SERVER
from tests.server.test_keyspace_vs_redis import Conn, same

pytestmark = pytest.mark.skipif(
    REDIS_SERVER is None,
    reason="redis-server is not installed (apt-get install redis-server); CI installs it")


@pytest.mark.parametrize("gen", [keyspace_gen_sort, keyspace_gen_algebra],
                         ids=["sort_copy", "algebra"])
@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("seed", seeds([1], [1, 2]))
def test_same_replies_as_redis(make_server, redis_port, seed, proto, gen):
    srv = make_server()
    ours, theirs = Conn(srv.port, proto), Conn(redis_port, proto)
    try:
        theirs.call([b"FLUSHALL"])
        theirs.call([b"SELECT", b"0"])
        differences = []
        for n, argv in enumerate(gen.stream(seed * 10 + proto, 1500, int(time.time()))):
            a, b = ours.call(argv), theirs.call(argv)
            if not same(argv, a, b):
                differences.append((n, argv, a, b))
        for db in (b"0", b"1", b"2"):
            for conn in (ours, theirs):
                conn.call([b"SELECT", db])
            for key in gen.KEYS:
                for argv in gen.state_commands(key):
                    a, b = ours.call(argv), theirs.call(argv)
                    if not same(argv, a, b):
                        differences.append(("final", db, argv, a, b))
        assert not differences, "\n".join(map(repr, differences[:30]))
    finally:
        ours.close()
        theirs.close()
