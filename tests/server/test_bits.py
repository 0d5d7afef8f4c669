"""Bitmaps and HyperLogLogs over redis-py (RESP2 and RESP3) against a real
trisque-server: the Python values clients get, the AOF bringing the same
bytes back after a restart and a rewrite, and maxmemory refusing the
growth of a bitmap."""

import pytest
import redis

from tests.harness import wait_for


def test_bit_commands_as_redis_py_sees_them(any_c):
    c = any_c
    assert c.setbit("b", 7, 1) == 0 and c.setbit("b", 7, 1) == 1
    assert c.getbit("b", 7) == 1 and c.getbit("b", 100) == 0
    assert c.get("b") == b"\x01"
    assert c.set("s", "foobar") is True
    assert c.bitcount("s") == 26 and c.bitcount("s", 1, 1) == 6
    assert c.bitcount("s", 5, 30, "BIT") == 17
    assert c.bitpos("s", 1) == 1 and c.bitpos("s", 0, 2, -1, "BIT") == 3
    assert c.bitop("AND", "d", "s", "b") == 6 and c.get("d") == b"\x00" * 6
    assert c.bitop("NOT", "d", "b") == 1 and c.get("d") == b"\xfe"
    bf = c.bitfield("f")
    assert bf.set("i8", "#0", -100).incrby("u4", 0, 1).get("u8", 0).execute() == [0, 10, 172]
    assert c.bitfield("f").overflow("FAIL").incrby("u8", 0, 200).execute() == [None]
    assert c.bitfield_ro("f", "u8", 0) == [172]
    with pytest.raises(redis.ResponseError, match="^bit offset is not an integer or out of range$"):
        c.setbit("b", 2 ** 32, 1)


def test_bitmaps_come_back_after_restart_and_rewrite(make_server):
    srv = make_server(config="appendonly yes\nappendfsync always\n")
    c = srv.client()
    c.setbit("b", 1000, 1)
    c.setbit("b", 3, 1)
    c.setbit("b", 3, 0)
    c.execute_command("BITFIELD", "f", "SET", "u8", 0, 255, "INCRBY", "i5", 100, 7)
    c.set("s", "ab")
    c.bitop("XOR", "x", "s", "b")
    c.expire("b", 1000)
    expected = {k: c.get(k) for k in ("b", "f", "s", "x")}
    srv.restart()
    c = srv.client()
    assert {k: c.get(k) for k in expected} == expected
    assert 990 < c.ttl("b") <= 1000
    c.bgrewriteaof()
    c.setbit("b", 0, 1)
    expected["b"] = c.get("b")
    wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0)
    srv.restart()
    c = srv.client()
    assert {k: c.get(k) for k in expected} == expected


def test_maxmemory_refuses_a_growing_bitmap(make_server):
    srv = make_server()
    c = srv.client()
    used = c.info("memory")["used_memory"]
    c.config_set("maxmemory", used + 100000)
    with pytest.raises(redis.ResponseError, match="^command not allowed when used memory > 'maxmemory'.$"):
        for i in range(100):
            c.setbit("b", i * 8 * 10000, 1)
    assert 100000 <= c.info("memory")["used_memory"] - used < 220000
    assert c.getbit("b", 0) == 1  # reads still work
    assert c.delete("b") == 1
    c.config_set("maxmemory", 0)
    assert c.setbit("b", 8 * 500000, 1) == 0


def test_hyperloglog_as_redis_py_sees_it(any_c):
    c = any_c
    assert c.pfadd("h1", "a", "b", "c") == 1 and c.pfadd("h1", "a") == 0
    assert c.pfadd("h2", *[f"e{i}" for i in range(5000)]) == 1
    assert c.pfcount("h1") == 3 and 4900 < c.pfcount("h2") < 5100
    assert c.pfmerge("h3", "h1", "h2") is True
    assert c.pfcount("h3") == c.pfcount("h1", "h2")
    assert c.get("h1")[:4] == b"HYLL" and c.strlen("h2") == 12304
    assert c.execute_command("PFDEBUG", "ENCODING", "h1") in (b"sparse", "sparse")
    assert c.config_get("hll-sparse-max-bytes") == {"hll-sparse-max-bytes": "3000"}
    c.set("s", "x")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE Key is not a valid HyperLogLog string value.$"):
        c.pfcount("s")


def test_hyperloglogs_come_back_byte_for_byte(make_server):
    srv = make_server(config="appendonly yes\nappendfsync always\n")
    c = srv.client()
    c.pfadd("sparse", "a", "b", "c")
    c.pfcount("sparse")  # writes its cache into the header
    c.pfadd("dense", *[f"e{i}" for i in range(3000)])
    c.pfmerge("merged", "sparse", "dense")
    c.pfadd("promoted", "x")
    c.execute_command("PFDEBUG", "TODENSE", "promoted")
    expected = {k: c.get(k) for k in ("sparse", "dense", "merged", "promoted")}
    assert expected["sparse"][15] == 0 and expected["merged"][4] == 0
    srv.restart()
    c = srv.client()
    assert {k: c.get(k) for k in expected} == expected
