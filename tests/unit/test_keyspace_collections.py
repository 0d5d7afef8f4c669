"""Hashes, sets and sorted sets in the core, on a fake clock: encodings
and their one-way conversions, memory in step with every change (back to
the baseline when the keys go), *SCAN never missing an element present
throughout, SPOP logged as its effect, the rewrite's compact records,
score parsing and formatting, BZPOPMIN woken by a ZADD and timing out."""

import random

import pytest

from tests.unit.conftest import Core, is_error
from tests.unit.test_keyspace import RecordingLog
from trisque.core.keyspace.containers import format_score
from trisque.core.keyspace.hashes import FIELD_OVERHEAD, Hash
from trisque.core.keyspace.keyspace import EXPIRE_OVERHEAD, KEY_OVERHEAD
from trisque.core.keyspace.scores import listpack_score, parse_score, parse_score_bound
from trisque.core.keyspace.sets import MEMBER_OVERHEAD, Set
from trisque.core.keyspace.types import TYPES, memory_of
from trisque.core.keyspace.zsets import MEMBER_OVERHEAD as ZMEMBER_OVERHEAD
from trisque.core.keyspace.zsets import ZSet
from trisque.protocol.errors import CommandError
from tests.server import keyspace_gen


def test_encodings_convert_once_as_redis_7_0(core):
    core("HSET", "h", "f", "v")
    assert core("OBJECT", "ENCODING", "h") == b"listpack"
    core("HSET", "h", "f", "x" * 65)
    assert core("OBJECT", "ENCODING", "h") == b"hashtable"
    core("HDEL", "h", "f")
    assert core("EXISTS", "h") == 0  # emptied: gone
    core("SADD", "s", *range(512))
    assert core("OBJECT", "ENCODING", "s") == b"intset"
    assert core("SMEMBERS", "s")[:3] == [b"0", b"1", b"2"]  # an intset's order
    core("SADD", "s", 512)
    assert core("OBJECT", "ENCODING", "s") == b"hashtable"
    core("SREM", "s", *range(500))
    assert core("OBJECT", "ENCODING", "s") == b"hashtable"  # never back
    core("ZADD", "z", "-0", "a")
    assert core("ZSCORE", "z", "a") == b"0"  # a listpack's -0 is 0
    core("ZADD", "big", *[x for i in range(129) for x in (i, f"m{i}")])
    core("ZADD", "big", "-0", "neg")
    assert core("OBJECT", "ENCODING", "big") == b"skiplist"
    assert core("ZSCORE", "big", "neg") == b"-0"


def _memory(node):
    """Recomputed from the values: what used_memory's keyspace part must be."""
    total = 0
    for db in node.keyspace.dbs:
        for key, value in db.keys.items():
            total += KEY_OVERHEAD + len(key) + memory_of(value)
            if isinstance(value, Hash):
                assert value.nbytes == sum(FIELD_OVERHEAD + len(f) + len(v) for f, v in value.items())
            elif isinstance(value, Set):
                assert value.nbytes == sum(MEMBER_OVERHEAD + len(m) for m in value)
            elif isinstance(value, ZSet):
                assert value.nbytes == sum(ZMEMBER_OVERHEAD + len(m) for m in value.scores)
                assert list(value.order) == sorted((s, m) for m, s in value.scores.items())
        total += EXPIRE_OVERHEAD * len(db.expires)
    return total


@pytest.mark.parametrize("seed", [5, 6])
def test_memory_follows_every_change_and_returns_to_baseline(seed):
    c = Core()
    base = c.node.used_memory
    gens = [g for name in ("hash", "set", "zset") for g in keyspace_gen.GENERATORS[name]]
    rng = random.Random(seed)
    for _ in range(3000):
        c.run(*rng.choice(gens)(rng, 0))
        if c.default.blocked is not None:
            c.advance(0.01)
            c.replies()
        assert sum(db.memory for db in c.node.keyspace.dbs) == _memory(c.node)
    c("FLUSHALL")
    assert c.node.used_memory == base


@pytest.mark.parametrize("kind", ["HSCAN", "SSCAN", "ZSCAN"])
def test_scan_never_misses_an_element_present_throughout(core, kind):
    add = {"HSCAN": lambda m: core("HSET", "k", m, 1), "SSCAN": lambda m: core("SADD", "k", m),
           "ZSCAN": lambda m: core("ZADD", "k", 1, m)}[kind]
    remove = {"HSCAN": "HDEL", "SSCAN": "SREM", "ZSCAN": "ZREM"}[kind]
    for i in range(2000):
        add(f"stay{i}")
    rng = random.Random(7)
    cursor, seen, churn = 0, set(), 0
    while True:
        cursor, items = core(kind, "k", cursor, "COUNT", 30)
        seen.update(items[::2] if kind != "SSCAN" else items)
        for _ in range(10):
            churn += 1
            add(f"new{churn}")
            core(remove, "k", f"new{rng.randrange(churn)}")
        if int(cursor) == 0:
            break
    assert {f"stay{i}".encode() for i in range(2000)} <= seen


def test_spop_and_srandmember(core):
    log = core.node.log = RecordingLog()
    core("SADD", "s", "a", "b", "c", "d")
    popped = core("SPOP", "s")
    assert log.records[-1] == [b"SREM", b"s", popped]  # the effect, not the command
    two = core("SPOP", "s", 2)
    assert log.records[-1] == [b"SREM", b"s", *two]
    assert len(core("SRANDMEMBER", "s", -5)) == 5
    assert core("SRANDMEMBER", "s", 5) == core("SMEMBERS", "s")
    core("SPOP", "s", 10)
    assert log.records[-1] == [b"DEL", b"s"] and core("EXISTS", "s") == 0
    assert is_error(core("SPOP", "s", -1), "ERR value is out of range, must be positive")


def test_rewrite_records_hold_at_most_64_items(core):
    core("HSET", "h", *[x for i in range(130) for x in (f"f{i}", i)])
    core("SADD", "s", *range(130))
    core("ZADD", "z", *[x for i in range(130) for x in (i / 7, f"m{i}")])
    for key in (b"h", b"s", b"z"):
        value = core.node.keyspace.dbs[0].keys[key]
        value_type = TYPES[value.__class__]
        records = list(value_type.records(key, value_type.freeze(value)))
        assert [(len(argv) - 2) // (1 if key == b"s" else 2) for argv in records] == [64, 64, 2]


def test_scores_as_redis():
    assert parse_score(b"1e-310") > 0 and parse_score(b"0x10") == 16.0
    for bad in (b"", b" 1", b"1 ", b"nan", b"1e5000", b"1e-5000", b"abc", b"1_0"):
        with pytest.raises(CommandError, match="not a valid float"):
            parse_score(bad)
    assert parse_score_bound(b"(1e5000") == (float("inf"), True)
    assert parse_score_bound(b"") == (0.0, False) and parse_score_bound(b" 2") == (2.0, False)
    for bad in (b"1 ", b"nan", b"(x"):
        with pytest.raises(CommandError, match="min or max is not a float"):
            parse_score_bound(bad)
    assert format_score(0.1) == b"0.10000000000000001" and format_score(1e20) == b"1e+20"
    assert format_score(float("-inf")) == b"-inf"
    assert listpack_score(1e17) == b"100000000000000000" and listpack_score(2.5) == b"2.5"


def test_zadd_options_and_errors(core):
    assert core("ZADD", "z", "1", "a", "2", "b") == 2
    assert core("ZADD", "z", "GT", "CH", "0", "a", "3", "b", "1", "c") == 2
    assert core("ZRANGE", "z", 0, -1, "WITHSCORES") == [b"a", b"1", b"c", b"1", b"b", b"3"]
    assert core("ZADD", "z", "XX", "INCR", "1", "nope") is None
    assert is_error(core("ZADD", "z", "NX", "XX", "1", "a"), "ERR XX and NX")
    assert is_error(core("ZADD", "z", "GT", "LT", "1", "a"), "ERR GT, LT, and/or NX")
    assert is_error(core("ZADD", "z", "INCR", "1", "a", "2", "b"), "ERR INCR option supports")
    core("ZADD", "inf", "inf", "x")
    assert is_error(core("ZINCRBY", "inf", "-inf", "x"), "ERR resulting score is not a number")


def test_bzpopmin_woken_by_zadd_first_come_first_served():
    c = Core()
    first, second, writer = c.client(), c.client(proto=3), c.client()
    assert c.run("BZPOPMIN", "z", "other", 0, client=first) is None
    assert c.run("BZPOPMAX", "z", 1, client=second) is None
    c.run("ZADD", "z", 1, "a", 2, "b", client=writer)
    assert c.replies(first) == [[b"z", b"a", b"1"]]
    assert c.replies(second) == [[b"z", b"b", 2.0]]  # RESP3: a double
    assert c("EXISTS", "z") == 0
    assert c.run("BZPOPMIN", "z", 0.5, client=first) is None
    c.advance(0.6)
    assert c.replies(first) == [None]  # timed out
