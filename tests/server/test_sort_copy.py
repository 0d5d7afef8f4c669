"""SORT, SORT_RO, COPY, MEMORY USAGE and COMMAND GETKEYS against a real
node: the options, Redis 7.0's error texts, and what reaches the AOF (a
restart after kill -9 and after a rewrite gives back the same keys;
a refused command logs nothing)."""

import os
import time

import pytest
import redis


def test_sort_numbers_alpha_limit_desc(c):
    c.rpush("l", 3, 1, 2, 10)
    assert c.sort("l") == [b"1", b"2", b"3", b"10"]
    assert c.sort("l", alpha=True) == [b"1", b"10", b"2", b"3"]
    assert c.sort("l", desc=True, start=1, num=2) == [b"3", b"2"]
    assert c.sort("l", start=10, num=2) == []
    assert c.sort("l", start=-5, num=2) == [b"1", b"2"]
    assert c.execute_command("SORT", "l", "LIMIT", "1", "-1") == [b"2", b"3", b"10"]
    assert c.execute_command("SORT_RO", "l", "DESC") == [b"10", b"3", b"2", b"1"]
    assert c.sort("nokey") == []


def test_sort_by_and_get_patterns(c):
    c.rpush("l", "a", "b", "c")
    c.mset({"w_a": 3, "w_b": 1, "w_c": 2, "v_a": "A", "v_c": "C"})
    c.hset("h_a", "f", 9)
    c.hset("h_b", "f", 8)
    assert c.sort("l", by="w_*") == [b"b", b"c", b"a"]
    assert c.sort("l", by="w_*", get=["#", "v_*", "h_*->f"]) == [
        b"b", None, b"8", b"c", b"C", None, b"a", b"A", b"9"]
    assert c.sort("l", by="h_*->f") == [b"c", b"b", b"a"]  # (missing: 0)
    assert c.sort("l", by="nosort", desc=True) == [b"c", b"b", b"a"]
    assert c.sort("l", by="v_*", alpha=True) == [b"b", b"a", b"c"]  # missing first
    assert c.sort("l", by="w_*", get="nokey") == [None, None, None]


def test_sort_store_replaces_and_deletes(c):
    c.rpush("l", 2, 1)
    c.set("dst", "old", ex=100)
    assert c.sort("l", store="dst") == 2
    assert c.lrange("dst", 0, -1) == [b"1", b"2"] and c.ttl("dst") == -1
    assert c.sort("l", get="nokey", store="dst") == 2
    assert c.lrange("dst", 0, -1) == [b"", b""]
    assert c.sort("nokey", store="dst") == 0
    assert not c.exists("dst")
    c.sadd("s", "b", "a", "c")
    assert c.sort("s", by="nosort", store="dst") == 3  # a set: sorted by ALPHA
    assert c.lrange("dst", 0, -1) == [b"a", b"b", b"c"]


def test_sort_errors(c):
    c.rpush("l", "1", "x")
    c.set("str", "v")
    cases = [
        (("SORT", "l"), "One or more scores can't be converted into double"),
        (("SORT", "str"), "WRONGTYPE Operation against a key holding the wrong kind of value"),
        (("SORT", "l", "LIMIT", "a", "1"), "value is not an integer or out of range"),
        (("SORT", "l", "BOGUS"), "syntax error"),
        (("SORT", "l", "LIMIT", "1"), "syntax error"),
        (("SORT_RO", "l", "STORE", "d"), "syntax error"),
        (("SORT", "l", "GET"), "syntax error"),
        (("SORT",), "wrong number of arguments for 'sort' command"),
    ]
    for args, message in cases:
        with pytest.raises(redis.ResponseError) as info:
            c.execute_command(*args)
        assert str(info.value).endswith(message), (args, str(info.value))
    c.rpush("big", "1e400")
    with pytest.raises(redis.ResponseError, match="can't be converted"):
        c.sort("big")
    assert c.ping()


def test_sort_converts_a_sorted_set_to_skiplist(c):
    c.zadd("z", {"a": 2, "b": 1})
    assert c.object("encoding", "z") == b"listpack"
    assert c.execute_command("SORT_RO", "z", "BY", "nosort") == [b"b", b"a"]
    assert c.object("encoding", "z") == b"skiplist"


def test_copy_every_type_is_independent(c):
    c.set("s", "v")
    c.rpush("l", *range(200))
    c.hset("h", mapping={"a": 1})
    c.sadd("st", 1, 2)
    c.zadd("z", {"m": 1.5})
    for key in ("s", "l", "h", "st", "z"):
        assert c.copy(key, key + "2") == 1
        assert c.type(key + "2") == c.type(key)
        assert c.object("encoding", key + "2") == c.object("encoding", key)
    c.rpush("l2", "more")
    c.hset("h2", "b", 2)
    c.sadd("st2", "x")
    c.zadd("z2", {"n": 0})
    assert c.llen("l") == 200 and c.hlen("h") == 1 and c.scard("st") == 2 and c.zcard("z") == 1
    assert c.object("encoding", "st") == b"intset"


def test_copy_db_replace_ttl_and_errors(c):
    c.set("a", "1", ex=100)
    c.set("b", "2")
    assert c.copy("a", "b") == 0
    assert c.copy("a", "b", replace=True) == 1
    assert c.get("b") == b"1" and 95 <= c.ttl("b") <= 100
    assert c.copy("a", "a", destination_db=1) == 1
    c1 = redis.Redis(port=c.connection_pool.connection_kwargs["port"], db=1)
    assert c1.get("a") == b"1" and c1.ttl("a") > 0
    assert c.copy("nokey", "x") == 0
    cases = [
        (("COPY", "a", "a"), "source and destination objects are the same"),
        (("COPY", "a", "x", "DB", "16"), "DB index is out of range"),
        (("COPY", "a", "x", "DB", "x"), "value is not an integer or out of range"),
        (("COPY", "a", "x", "DB", "99999999999"),
         "value is out of range, value must between -2147483648 and 2147483647"),
        (("COPY", "a", "x", "BOGUS"), "syntax error"),
        (("COPY", "a", "x", "DB"), "syntax error"),
    ]
    for args, message in cases:
        with pytest.raises(redis.ResponseError) as info:
            c.execute_command(*args)
        assert str(info.value).endswith(message), (args, str(info.value))
    c1.close()


def test_memory_usage(c):
    c.hset("h", "a", "1")
    usage = c.memory_usage("h")
    assert usage > 0
    c.hset("h", "b", "x" * 1000)
    assert c.memory_usage("h") > usage + 1000
    assert c.memory_usage("nokey") is None
    assert c.execute_command("MEMORY", "USAGE", "h", "SAMPLES", "0") > 0
    with pytest.raises(redis.ResponseError, match="syntax error"):
        c.execute_command("MEMORY", "USAGE", "h", "SAMPLES", "-1")
    with pytest.raises(redis.ResponseError, match="unknown subcommand 'nope'"):
        c.execute_command("MEMORY", "nope")


def test_command_getkeys(c):
    def keys(*args):
        return c.command_getkeys(*args)
    assert keys("sort", "abc", "store", "invalid", "store", "def") == ["abc", "def"]
    assert keys("sort", "abc", "get", "store", "limit", "0", "1") == ["abc"]
    assert keys("sort_ro", "abc") == ["abc"]
    assert keys("mset", "a", "1", "b", "2") == ["a", "b"]
    assert keys("eval", "return 1", "2", "k1", "k2", "arg") == ["k1", "k2"]
    assert keys("copy", "a", "b") == ["a", "b"]
    for args, message in [(("nosuch", "x"), "Invalid command specified"),
                          (("ping", "x"), "The command has no key arguments"),
                          (("set", "k"), "Invalid number of arguments specified for command"),
                          (("get",), "wrong number of arguments for 'command|getkeys'")]:
        with pytest.raises(redis.ResponseError, match=message):
            keys(*args)


def test_sort_store_and_copy_survive_restart_and_rewrite(make_server):
    srv = make_server(config="appendonly yes\nappendfsync always\n")
    c = srv.client()
    c.rpush("l", 3, 1, 2)
    c.mset({"w_1": 3, "w_2": 2, "w_3": 1})
    c.sort("l", by="w_*", store="sorted")
    c.copy("sorted", "copy", destination_db=2)
    c.set("t", "v", ex=1000)
    c.copy("t", "t2")
    with pytest.raises(redis.ResponseError):
        c.execute_command("SORT", "l", "BY", "w_*", "STORE")  # refused: nothing logged
    with pytest.raises(redis.ResponseError):
        c.execute_command("COPY", "l", "x", "DB", "99")
    with open(os.path.join(srv.dir, "disque.aof"), "rb") as f:
        logged = f.read()
    assert logged.count(b"SORT") == 1 and logged.count(b"COPY") == 2
    for restart in ("kill", "rewrite"):
        if restart == "rewrite":
            c.bgrewriteaof()
            deadline = time.monotonic() + 10
            while c.info("persistence").get("aof_rewrite_in_progress") and time.monotonic() < deadline:
                time.sleep(0.05)
        srv.kill()
        srv.start()
        c = srv.client()
        assert c.lrange("sorted", 0, -1) == [b"3", b"2", b"1"]
        c2 = srv.client(db=2)
        assert c2.lrange("copy", 0, -1) == [b"3", b"2", b"1"]
        c2.close()
        assert c.get("t2") == b"v" and 0 < c.ttl("t2") <= 1000
