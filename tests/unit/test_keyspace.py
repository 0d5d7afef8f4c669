"""The keyspace core (core/keyspace/) on a fake clock: expiry to the
millisecond (lazy) and by the cron (active), memory and maxmemory, the
type registry and WRONGTYPE, Redis's glob, SCAN under churn, and the AOF
records: a random stream logged on one node and replayed on another gives
the same keys, values and TTLs."""

import random

import pytest

from tests.server import keyspace_gen
from tests.unit.conftest import START, Core, is_error
from trisque.core.client import Client
from trisque.core.keyspace import expiry
from trisque.core.keyspace import keyspace as keyspace_module
from trisque.core.keyspace.patterns import match
from trisque.core.keyspace.types import WRONGTYPE, ValueType, register_type


def test_lazy_expiry_to_the_millisecond(core):
    assert core("SET", "k", "v", "PX", 100) == b"OK"
    core.now += 0.099
    assert core("GET", "k") == b"v"
    assert core("PTTL", "k") == 1
    core.now += 0.001
    assert core("GET", "k") is None
    assert core("EXISTS", "k") == 0
    assert core.node.keyspace.expired_keys == 1
    assert core("DBSIZE") == 0


def test_expired_keys_count_in_dbsize_until_the_cron(core):
    core("SET", "k", "v", "PXAT", int(START * 1000) - 1)  # already past: stored expired
    assert core("DBSIZE") == 1
    assert core("KEYS", "*") == []
    core.cron()
    assert core("DBSIZE") == 0


def _cron_until_nothing_due(core):
    """Crons until no key is due; returns the first cron's expired count.
    Active expiry stops when 25% of the cron period has passed on the real
    clock (expiry.py), so on a loaded machine one cron may not reach every
    due key; the budget is only looked at every KEYS_PER_LOOP keys."""
    keyspace = core.node.keyspace
    before = keyspace.expired_keys
    core.cron()
    first = keyspace.expired_keys - before
    for _ in range(1000):
        if not keyspace.expiry_due(int(core.now * 1000)):
            return first
        core.cron()
    raise AssertionError("keys still due after 1,000 crons")


def test_active_expiry_removes_due_keys_only(core):
    for i in range(1000):
        core("SET", f"k{i}", "v", "PX", 1000 + i)
    core("SET", "forever", "v")
    core.now += 1.5
    assert _cron_until_nothing_due(core) >= expiry.KEYS_PER_LOOP
    assert core("DBSIZE") == 500  # k0..k500 were due at +1.5 s
    assert core("INFO", "keyspace").decode().split("\r\n")[1].startswith("db0:keys=500,expires=499,")
    core.now += 1
    _cron_until_nothing_due(core)
    assert core("KEYS", "*") == [b"forever"]
    assert core.node.keyspace.expired_keys == 1000


def test_active_expiry_looks_at_every_db_and_pops_stale_heads(core):
    core("SELECT", 15)
    core("SET", "k", "v", "PX", 100)
    core("PEXPIRE", "k", 10000)  # the heap's head (+100 ms) goes stale
    keyspace = core.node.keyspace
    db = keyspace.dbs[15]
    assert len(db.heap) == 2
    assert not keyspace.expiry_due(int(core.now * 1000))
    core.now += 0.2
    assert keyspace.expiry_due(int(core.now * 1000))  # (the stale head)
    core.cron()
    assert len(db.heap) == 1  # the stale entry was popped, the key kept
    assert not keyspace.expiry_due(int(core.now * 1000))
    assert core("DBSIZE") == 1
    core.now += 10
    core.cron()
    assert core("DBSIZE") == 0
    assert keyspace.expired_keys == 1
    assert not db.heap


def test_ttl_churn_keeps_the_heap_bounded(core):
    for i in range(10000):
        core("SET", "lock", "v", "EX", 100 + i % 7)
        core("EXPIRE", "other", 5)
    db = core.node.keyspace.dbs[0]
    assert len(db.expires) == 1
    assert len(db.heap) <= 2 * len(db.expires) + 64


def test_avg_ttl_is_exact(core):
    core("SET", "a", "1", "EX", 100)
    core("SET", "b", "1", "EX", 300)
    assert b"db0:keys=2,expires=2,avg_ttl=200000" in core("INFO", "keyspace")


def test_memory_follows_keys(make_core):
    c = make_core()
    base = c.node.used_memory
    c("SET", "k", "x" * 1000)
    grown = c.node.used_memory
    assert grown - base > 1000
    c("APPEND", "k", "y" * 1000)
    c("EXPIRE", "k", 100)
    c("SETRANGE", "k", 3000, "z")
    c("INCR", "n")
    c("RENAME", "n", "m")
    c("MOVE", "m", 3)
    c("DEL", "k")
    c("SELECT", 3)
    c("DEL", "m")
    assert c.node.used_memory == base
    c("MSET", "a", "1", "b", "2")
    c("FLUSHALL", "ASYNC")
    assert c.node.used_memory == base
    assert c.node.keyspace.lazyfree
    c.cron()
    assert not c.node.keyspace.lazyfree


def test_maxmemory_refuses_growing_commands(make_core):
    c = make_core()
    c.node.config.maxmemory = c.node.used_memory + 5000
    c("SET", "big", "x" * 5000)
    reply = c("SET", "k", "v")
    assert is_error(reply, "OOM command not allowed when used memory > 'maxmemory'.")
    assert is_error(c("APPEND", "big", "x"), "OOM")
    assert c("GET", "big") == b"x" * 5000  # reads and deletions still work
    assert c("DEL", "big") == 1
    assert c("SET", "k", "v") == b"OK"


class Box:
    """A stand-in collection type, as a list/hash module would register."""

    def __init__(self, items):
        self.items = items


register_type(ValueType("box", (Box,), lambda v: 100, lambda v: "boxed",
                        lambda v: Box(list(v.items)), lambda k, v: [[b"SET", k, b"box"]]))


def test_wrongtype_and_the_type_registry(core):
    core.node.keyspace.store(core.node.keyspace.dbs[0], b"b", Box([1]))
    assert core("TYPE", "b") == b"box"
    assert core("OBJECT", "ENCODING", "b") == b"boxed"
    for command in (("GET", "b"), ("INCR", "b"), ("APPEND", "b", "x"), ("STRLEN", "b"),
                    ("GETRANGE", "b", 0, 1), ("SETRANGE", "b", 0, "x"), ("GETDEL", "b"),
                    ("INCRBYFLOAT", "b", 1), ("GETSET", "b", 1), ("SET", "b", 1, "GET")):
        reply = core(*command)
        assert is_error(reply) and str(reply) == WRONGTYPE, command
    assert core("MGET", "b") == [None]  # nil, as Redis
    assert core("SCAN", 0, "TYPE", "box") == [b"0", [b"b"]]
    assert core("SCAN", 0, "TYPE", "string") == [b"0", []]
    assert core("SET", "b", "now a string") == b"OK"  # SET overwrites any type
    assert core("TYPE", "b") == b"string"


@pytest.mark.parametrize("pattern,key,expected", [
    (b"*", b"", False), (b"", b"", True), (b"**", b"abc", True), (b"a*c", b"abbbc", True),
    (b"a?c", b"abc", True), (b"a?c", b"ac", False), (b"[abc]x", b"bx", True),
    (b"[^abc]x", b"bx", False), (b"[a-c]", b"b", True), (b"[c-a]", b"b", True),
    (b"[]", b"]", False), (b"[", b"a", False), (b"[^", b"a", True), (b"a\\*b", b"a*b", True),
    (b"a\\*b", b"axb", False), (b"[\\]]", b"]", True), (b"\\", b"\\", True),
    (b"k[1", b"k1", True), (b"*]", b"a]", True), (b"[\x80-\xff]", b"a", False),
    (b"[\xff-a]", b"\x00", True),  # signed chars: 0xff is -1
    (b"*a*b*c", b"xaybzc", True), (b"*a*b*c", b"xaybz", False),
])
def test_glob_as_redis(pattern, key, expected):
    assert match(pattern, key) is expected


def test_scan_never_misses_a_key_present_throughout(core):
    rng = random.Random(3)
    for i in range(3000):
        core("SET", f"stay{i}", 1)
    cursor, seen = 0, set()
    churn = 0
    while True:
        cursor, keys = core("SCAN", cursor, "COUNT", 50)
        seen.update(keys)
        for _ in range(20):  # add and delete meanwhile
            churn += 1
            core("SET", f"new{churn}", 1)
            core("DEL", f"new{rng.randrange(churn)}")
        if int(cursor) == 0:
            break
    assert {f"stay{i}".encode() for i in range(3000)} <= seen


def test_scan_match_count_and_errors(core):
    core("MSET", "k1", 1, "k2", 2, "x", 3)
    assert sorted(core("SCAN", 0, "MATCH", "k*", "COUNT", 100)[1]) == [b"k1", b"k2"]
    assert str(core("SCAN", "abc")) == "ERR invalid cursor"
    assert str(core("SCAN", 0, "COUNT", 0)) == "ERR syntax error"
    assert str(core("SCAN", 0, "FOO")) == "ERR syntax error"


class RecordingLog:
    """The core's log hook (NoLog's interface) keeping what it is given."""

    enabled = True
    failing = None
    end = durable = 0

    def __init__(self):
        self.records = []

    def append_command(self, *argv):
        self.records.append(list(argv))

    def job_stored(self, job):
        pass

    def job_deleted(self, job):
        pass


def _state(node):
    return [(db.id, dict(db.keys), dict(db.expires)) for db in node.keyspace.dbs]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_records_replay_to_the_same_keys(seed):
    source = Core()
    log = source.node.log = RecordingLog()
    now_s = int(START)
    for argv in keyspace_gen.stream(seed, 2000, now_s):
        source.run(*argv)
        if source.default.blocked is not None:
            source.advance(0.01)  # a blocking command's timeout (keyspace_gen: 10 ms)
            source.replies()
        source.now += 0.001
    copy = Core()
    copy.now = source.now
    client = Client(0)
    for argv in log.records:
        copy.node.keyspace.replay(client, argv)
    assert _state(copy.node) == _state(source.node)
    assert copy.node.used_memory == source.node.used_memory
    # And a rewrite's snapshot rebuilds the same state too.
    rebuilt = Core()
    rebuilt.now = source.now
    client = Client(0)
    from trisque.protocol import aof
    data = b"".join(source.node.keyspace.snapshot())
    pos = 0
    while pos < len(data):
        argv, pos = aof.parse(data, pos, len(data))
        rebuilt.node.keyspace.replay(client, argv)
    assert _state(rebuilt.node) == _state(source.node)


def test_replay_neither_expires_nor_logs():
    c = Core()
    log = c.node.log = RecordingLog()
    client = Client(0)
    c.node.keyspace.replay(client, [b"SET", b"k", b"v", b"PXAT", b"1000"])
    c.node.keyspace.replay(client, [b"APPEND", b"k", b"w"])
    assert c.node.keyspace.dbs[0].keys[b"k"] == b"vw"  # history as it was
    assert log.records == []
    c.cron()  # loading over: the cron removes it, and logs that
    assert b"k" not in c.node.keyspace.dbs[0].keys
    assert log.records == [[b"SELECT", b"0"], [b"DEL", b"k"]]


def test_flushall_keeps_jobs_debug_flushall_does_not(core):
    core("ADDJOB", "q", "body", 0)
    core("SET", "k", "v")
    assert core("FLUSHALL") == b"OK"
    assert core("QLEN", "q") == 1 and core("DBSIZE") == 0
    core("SET", "k", "v")
    assert core("DEBUG", "FLUSHALL") == b"OK"
    assert core("QLEN", "q") == 0 and core("DBSIZE") == 0


def test_select_is_per_client(core):
    other = core.client()
    assert core("SELECT", 5) == b"OK"
    core("SET", "k", "five")
    assert core("GET", "k", client=other) is None
    core("SELECT", 5, client=other)
    assert core("GET", "k", client=other) == b"five"
    assert str(core("SELECT", 16)) == "ERR DB index is out of range"
    assert keyspace_module.KEY_OVERHEAD > 0
