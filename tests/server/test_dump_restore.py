"""DUMP and RESTORE against a real node: every type round-trips (with
its encoding under the current bounds), TTL, REPLACE, ABSTTL, Redis's
errors, a payload that is not ours or was altered is refused with
nothing changed, and the AOF replays RESTORE with its absolute TTL."""

import time

import pytest
import redis


def fill(c):
    c.set("s", "text")
    c.rpush("l", *range(300), "x" * 70000)
    c.hset("h", mapping={"a": 1, "b": "x" * 100})
    c.sadd("st", 1, 2, 3)
    c.zadd("z", {"m": 1.5, "n": -0.0})


def test_every_type_round_trips(c):
    fill(c)
    for key in ("s", "l", "h", "st", "z"):
        payload = c.dump(key)
        assert c.restore(key + "2", 0, payload) == b"OK"
        assert c.type(key + "2") == c.type(key)
        assert c.object("encoding", key + "2") == c.object("encoding", key)
    assert c.lrange("l2", 0, -1) == c.lrange("l", 0, -1)
    assert c.hgetall("h2") == c.hgetall("h")
    assert c.smembers("st2") == c.smembers("st")
    assert c.zrange("z2", 0, -1, withscores=True) == c.zrange("z", 0, -1, withscores=True)
    assert c.dump("nokey") is None


def test_restore_follows_the_current_bounds(c):
    c.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    payload = c.dump("h")
    c.config_set("hash-max-ziplist-entries", 2)
    try:
        c.restore("h2", 0, payload)
        assert c.object("encoding", "h2") == b"hashtable"
    finally:
        c.config_set("hash-max-ziplist-entries", 128)


def test_ttl_replace_absttl_and_errors(c):
    c.set("k", "v")
    payload = c.dump("k")
    with pytest.raises(redis.ResponseError, match="^BUSYKEY Target key name already exists.$"):
        c.restore("k", 0, payload)
    assert c.restore("k", 5000, payload, replace=True) == b"OK"
    assert 4000 < c.pttl("k") <= 5000
    assert c.restore("k", int(time.time() * 1000) - 1, payload, replace=True, absttl=True) == b"OK"
    assert not c.exists("k")  # (already expired: the old value went, nothing came)
    cases = [
        (("RESTORE", "n", "-1", payload), "Invalid TTL value, must be >= 0"),
        (("RESTORE", "n", "x", payload), "value is not an integer or out of range"),
        (("RESTORE", "n", "0", payload[:-1] + b"?"), "DUMP payload version or checksum are wrong"),
        (("RESTORE", "n", "0", b"\x00\x0a"), "DUMP payload version or checksum are wrong"),
        (("RESTORE", "n", "0", payload, "IDLETIME", "-1"), "Invalid IDLETIME value, must be >= 0"),
        (("RESTORE", "n", "0", payload, "FREQ", "256"),
         "Invalid FREQ value, must be >= 0 and <= 255"),
        (("RESTORE", "n", "0", payload, "IDLETIME", "1", "FREQ", "1"), "syntax error"),
        (("RESTORE", "n", "0", payload, "BOGUS"), "syntax error"),
    ]
    for args, message in cases:
        with pytest.raises(redis.ResponseError) as info:
            c.execute_command(*args)
        assert str(info.value).endswith(message), (args, str(info.value))
    assert c.restore("n", 0, payload, idletime=10) == b"OK"
    assert c.dbsize() == 1


def test_a_payload_that_does_not_rebuild_changes_nothing(c):
    import hashlib
    magic = b"TRISQUE-DUMP 1\r\n"

    def forged(body):
        data = magic + body
        return data + hashlib.blake2b(data, digest_size=8).digest()
    c.set("keep", "old")
    for body in (b"*3\r\n$3\r\nSET\r\n$4\r\nkeep\r\n$1\r\nx\r\n",  # (another key)
                 b"*2\r\n$8\r\nFLUSHALL\r\n$0\r\n\r\n",  # (not a single-key write)
                 b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$1\r\nx\r\n*3\r\n$5\r\nRPUSH\r\n$0\r\n\r\n"
                 b"$1\r\ny\r\n",  # (WRONGTYPE half way)
                 b"*3\r\n$3\r\nSET\r\n"):  # (cut short)
        with pytest.raises(redis.ResponseError, match="Bad data format"):
            c.restore("keep", 0, forged(body), replace=True)
        assert c.get("keep") == b"old" and c.dbsize() == 1


def test_restore_replays_from_the_aof(make_server):
    srv = make_server(config="appendonly yes\nappendfsync always\n")
    c = srv.client()
    c.rpush("l", "a", "b")
    c.restore("copy", 100000, c.dump("l"))
    srv.kill()
    srv.start()
    c = srv.client()
    assert c.lrange("copy", 0, -1) == [b"a", b"b"] and 90000 < c.pttl("copy") <= 100000
