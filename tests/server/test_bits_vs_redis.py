"""Bitmaps and HyperLogLogs against redis-server: the same seeded random
command streams (tests/server/keyspace_gen_bits.py) to trisque and to a
redis-server started here, every reply and then every key's bytes
compared exactly, over RESP2 and RESP3."""

import random

import pytest

from tests.campaigns import seeds
from tests.server import keyspace_gen_bits as gen
from tests.server.conftest import REDIS_SERVER
from tests.server.test_keyspace_vs_redis import Conn

pytestmark = pytest.mark.skipif(
    REDIS_SERVER is None,
    reason="redis-server is not installed (apt-get install redis-server); CI installs it")


def run_stream(ours, theirs, tables, seed, count):
    rng = random.Random(seed)
    gens = [g for name in tables for g in gen.GENERATORS[name]]
    differences = []
    for n in range(count):
        argv = rng.choice(gens)(rng, 0)
        a, b = ours.call(argv), theirs.call(argv)
        if a != b:
            differences.append((n, argv, a, b))
    for key in gen.KEYS:
        for argv in ([b"GET", key], [b"TYPE", key], [b"STRLEN", key]):
            a, b = ours.call(argv), theirs.call(argv)
            if a != b:
                differences.append(("final", argv, a[:200], b[:200]))
    return differences


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("seed", seeds([1], [1, 2, 3]))
def test_bit_commands_same_as_redis(make_server, redis_port, seed, proto):
    srv = make_server()
    ours, theirs = Conn(srv.port, proto), Conn(redis_port, proto)
    try:
        theirs.call([b"FLUSHALL"])
        differences = run_stream(ours, theirs, ["setup", "bits"], seed * 10 + proto, 3000)
        assert not differences, "\n".join(map(repr, differences[:30]))
    finally:
        ours.close()
        theirs.close()


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("seed", seeds([1], [1, 2, 3]))
def test_hyperloglog_same_as_redis(make_server, redis_port, seed, proto):
    srv = make_server()
    ours, theirs = Conn(srv.port, proto), Conn(redis_port, proto)
    try:
        theirs.call([b"FLUSHALL"])
        theirs.call([b"CONFIG", b"SET", b"hll-sparse-max-bytes", b"3000"])
        differences = run_stream(ours, theirs, ["setup", "hll"], seed * 10 + proto, 1500)
        assert not differences, "\n".join(map(repr, differences[:30]))
    finally:
        ours.close()
        theirs.close()
