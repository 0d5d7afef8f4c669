"""The keyspace over redis-py (RESP2 and RESP3) against a real
trisque-server: the Python values clients get, INFO's keyspace and
server fields, COMMAND's entries, maxmemory's -OOM, and keys beside jobs."""

import pytest
import redis


def test_strings_as_redis_py_sees_them(any_c):
    c = any_c
    assert c.set("k", "v") is True
    assert c.get("k") == b"v"
    assert c.set("k", "w", nx=True) is None
    assert c.set("k", "w", xx=True, get=True) == b"v"
    assert c.incr("n") == 1 and c.incrby("n", 41) == 42 and c.decr("n") == 41
    assert c.incrbyfloat("f", 10.5) == 10.5 and c.incrbyfloat("f", 0.1) == 10.6
    assert c.mset({"a": "1", "b": "2"}) is True
    assert c.mget("a", "b", "nope") == [b"1", b"2", None]
    assert c.append("a", "23") == 3 and c.strlen("a") == 3
    assert c.getrange("a", 0, 1) == b"12" and c.setrange("a", 5, "x") == 6
    assert c.getdel("b") == b"2" and c.get("b") is None
    assert c.setex("e", 100, "v") is True and 99 <= c.ttl("e") <= 100
    assert c.getex("e", persist=True) == b"v" and c.ttl("e") == -1
    assert c.expire("e", 50) is True and c.persist("e") is True
    assert c.type("e") == b"string" and c.type("zzz") == b"none"
    assert c.exists("a", "a", "zzz") == 2
    assert sorted(c.keys("*")) == [b"a", b"e", b"f", b"k", b"n"]
    assert sorted(c.scan_iter(match="[ae]")) == [b"a", b"e"]
    assert c.rename("a", "a2") is True and c.renamenx("a2", "k") is False
    assert c.object("encoding", "n") == b"int"
    assert c.dbsize() == 5 and c.delete("a2", "k", "zzz") == 2
    assert c.randomkey() in (b"e", b"f", b"n")
    with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
        c.incr("f")
    with pytest.raises(redis.ResponseError, match="^invalid expire time in 'set' command$"):
        c.set("x", "v", ex=0)
    assert c.flushdb() is True and c.dbsize() == 0


def test_select_and_move(shared):
    c = shared.client(db=3)
    c.execute_command("DEBUG", "FLUSHALL")
    c.set("k", "three")
    assert c.move("k", 0) is True
    assert shared.client().get("k") == b"three"
    with pytest.raises(redis.ResponseError, match="DB index is out of range"):
        c.execute_command("SELECT", 16)


def test_info_and_command(c):
    c.set("a", 1, ex=100)
    c.set("b", 2)
    info = c.info()
    assert info["redis_version"].startswith("7.")
    assert info["disque_version"]  # Disque's own fields stay
    assert info["db0"]["keys"] == 2 and info["db0"]["expires"] == 1
    assert 0 < info["db0"]["avg_ttl"] <= 100000
    table = c.command()  # redis-py's parse of COMMAND
    assert table["get"]["arity"] == 2 and table["set"]["arity"] == -3
    assert table["mset"]["first_key_pos"] == 1 and table["addjob"]["arity"] == -4
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'get' command"):
        c.execute_command("GET")


def test_maxmemory_oom_for_keys(make_server):
    srv = make_server()
    c = srv.client()
    used = c.info("memory")["used_memory"]
    c.config_set("maxmemory", used + 20000)
    with pytest.raises(redis.ResponseError, match="^command not allowed when used memory > 'maxmemory'.$"):
        for i in range(1000):
            c.set(f"key{i}", "x" * 100)
    assert c.get("key0") == b"x" * 100
    assert c.delete("key0") == 1  # deleting still works
    c.config_set("maxmemory", 0)
    assert c.set("more", "v") is True


def test_flushall_keeps_jobs(c):
    job = c.execute_command("ADDJOB", "q", "body", 0)
    c.set("k", "v")
    assert c.flushall() is True
    assert c.dbsize() == 0
    assert c.execute_command("QLEN", "q") == 1
    assert c.execute_command("ACKJOB", job) == 1
