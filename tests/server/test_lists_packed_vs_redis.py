"""Long lists against redis-server: the differential test's list
generators (keyspace_gen.LISTS), with pushes of 10-80 items so the lists
grow to hundreds of items and every command meets packed nodes
(core/keyspace/lists.py), not only the plain ends.  Replies
compared byte for byte, then every list read back whole."""

from __future__ import annotations

import random

import pytest

from tests.server import keyspace_gen
from tests.server.test_keyspace_vs_redis import Conn, same

LIST_KEYS = [b"l1", b"l2", b"l3"]


def gen_push_many(rng: random.Random, now_s: int) -> list[bytes]:
    items = [rng.choice(keyspace_gen.ITEMS) + b"%d" % rng.randrange(100)
             for _ in range(rng.randint(10, 80))]
    return [rng.choice([b"LPUSH", b"RPUSH"]), rng.choice(LIST_KEYS), *items]


def gen_index(rng: random.Random, now_s: int) -> list[bytes]:
    """LINDEX / LSET / LRANGE at indexes inside long lists."""
    i = b"%d" % rng.randint(-300, 300)
    j = b"%d" % rng.randint(-300, 300)
    key = rng.choice(LIST_KEYS)
    return rng.choice([[b"LINDEX", key, i], [b"LSET", key, i, b"set%s" % i],
                       [b"LRANGE", key, i, j], [b"LTRIM", key, b"%d" % rng.randint(0, 3), b"-%d" % rng.randint(1, 3)]])


@pytest.mark.parametrize("seed", [1, 2])
def test_long_lists_same_as_redis(make_server, redis_port, seed):
    srv = make_server()
    ours, theirs = Conn(srv.port, 2), Conn(redis_port, 2)
    try:
        theirs.call([b"FLUSHALL"])
        rng = random.Random(seed)
        gens = keyspace_gen.LISTS + [gen_push_many] * 6 + [gen_index] * 6
        differences = []
        for n in range(2000):
            argv = rng.choice(gens)(rng, 0)
            a, b = ours.call(argv), theirs.call(argv)
            if not same(argv, a, b):
                differences.append((n, argv, a, b))
        for key in LIST_KEYS:
            argv = [b"LRANGE", key, b"0", b"-1"]
            a, b = ours.call(argv), theirs.call(argv)
            if a != b:
                differences.append(("final", key, a[:200], b[:200]))
        longest = max(int(ours.call([b"LLEN", key])[1:-2]) for key in LIST_KEYS)
        assert not differences, "\n".join(map(repr, differences[:30]))
        assert longest > 100  # (the lists did grow past the plain ends)
    finally:
        ours.close()
        theirs.close()
