"""CONFIG SET/GET of Redis's encoding bounds (and their 6.x ziplist names),
and of save, against a real node and redis-server 7.0.15 side by side:
OBJECT ENCODING follows the bounds as Redis's does, and bad values get an
error while the old value stays."""

import pytest
import redis

from tests.server.conftest import REDIS_SERVER

BOUNDS = {"hash-max-listpack-entries": "hash-max-ziplist-entries",
          "hash-max-listpack-value": "hash-max-ziplist-value",
          "zset-max-listpack-entries": "zset-max-ziplist-entries",
          "zset-max-listpack-value": "zset-max-ziplist-value",
          "list-max-listpack-size": "list-max-ziplist-size",
          "set-max-intset-entries": None, "list-compress-depth": None}


@pytest.fixture
def both(shared, redis_port):
    if REDIS_SERVER is None:
        pytest.skip("redis-server not installed")
    ours = shared.client()
    theirs = redis.Redis(port=redis_port)
    clients = (ours, theirs)
    saved = [{name: c.config_get(name)[name] for name in BOUNDS} for c in clients]
    for c in clients:
        c.flushall()
    yield clients
    for c, values in zip(clients, saved):
        for name, value in values.items():
            c.config_set(name, value)
        c.flushall()
    ours.close()
    theirs.close()


def encodings(c, steps):
    """Run ``steps`` (callables of a client) and collect OBJECT ENCODING of
    every key after each."""
    out = []
    for step in steps:
        step(c)
        out.append({k: c.object("encoding", k) for k in sorted(c.keys())})
    return out


def test_aliases_read_and_write_the_same_value(c):
    for name, alias in BOUNDS.items():
        if alias is None:
            continue
        c.config_set(alias, 7)
        assert c.config_get(name) == {name: "7"}
        assert c.config_get(alias) == {alias: "7"}
    assert {"hash-max-ziplist-entries", "hash-max-listpack-entries"} <= set(c.config_get("hash-max-*"))
    c.config_set("hash-max-listpack-entries", 128)
    c.config_set("hash-max-listpack-value", 64)
    c.config_set("zset-max-listpack-entries", 128)
    c.config_set("zset-max-listpack-value", 64)
    c.config_set("list-max-listpack-size", -2)


def test_bounds_drive_object_encoding_as_in_redis(both):
    steps = [
        lambda c: c.config_set("hash-max-ziplist-entries", 2),
        lambda c: c.hset("h", mapping={"a": 1, "b": 2}),
        lambda c: c.hset("h", "c", 3),
        lambda c: c.config_set("hash-max-listpack-value", 4),
        lambda c: c.hset("h2", "f", "12345"),
        lambda c: c.hset("h3", "f", "1234"),
        lambda c: c.config_set("set-max-intset-entries", 3),
        lambda c: c.sadd("s", 1, 2, 3),
        lambda c: c.sadd("s", 4),
        lambda c: c.sadd("s2", 1, 2, 3, 4),
        lambda c: c.config_set("zset-max-ziplist-entries", 2),
        lambda c: c.zadd("z", {"a": 1, "b": 2}),
        lambda c: c.zadd("z", {"c": 3}),
        lambda c: c.config_set("zset-max-ziplist-value", 3),
        lambda c: c.zadd("z2", {"abcd": 1}),
        lambda c: c.zadd("z3", {"abc": 1}),
        lambda c: c.config_set("zset-max-ziplist-entries", 0),
        lambda c: c.zadd("z4", {"a": 1}),
        lambda c: c.config_set("list-max-ziplist-size", 4),
        lambda c: c.rpush("l", *range(10)),
    ]
    ours, theirs = both
    assert encodings(ours, steps) == encodings(theirs, steps)


def test_bad_values_are_refused_and_the_old_value_stays(c):
    c.config_set("set-max-intset-entries", 100)
    for name, value in [("set-max-intset-entries", "x"), ("set-max-intset-entries", "-1"),
                        ("hash-max-ziplist-entries", "2x"), ("save", "100"),
                        ("save", "100 x")]:
        with pytest.raises(redis.ResponseError):
            c.config_set(name, value)
    assert c.config_get("set-max-intset-entries") == {"set-max-intset-entries": "100"}
    c.config_set("set-max-intset-entries", 512)
    assert c.ping()


def test_save_is_kept_and_shown(c):
    c.config_set("save", "100 10 200 20")
    assert c.config_get("save") == {"save": "100 10 200 20"}
    c.config_set("save", "")
    assert c.config_get("save") == {"save": ""}


def test_bounds_from_the_config_file_apply_at_start(make_server):
    srv = make_server(config="set-max-intset-entries 2\nhash-max-ziplist-value 3\n"
                             "save 900 1\n")
    c = srv.client()
    c.sadd("s", 1, 2)
    c.sadd("t", 1, 2, 3)
    c.hset("h", "f", "abcd")
    assert [c.object("encoding", k) for k in ("s", "t", "h")] == [b"intset", b"hashtable",
                                                                  b"hashtable"]
    assert c.config_get("save") == {"save": "900 1"}


def test_save_command_says_there_is_no_snapshot(c):
    with pytest.raises(redis.ResponseError, match="SAVE writes no RDB snapshot here"):
        c.save()
    with c.pipeline() as pipe:  # refused inside MULTI, as Redis (no-multi)
        pipe.set("a", 1).save()
        with pytest.raises(redis.ResponseError):
            pipe.execute()
    assert c.get("a") is None
