"""SWAPDB, ZMPOP/BZMPOP and LCS against a real node: what the differential
test (test_sort_copy_vs_redis.py) cannot show: clients blocked or
watching across a SWAPDB, BZMPOP woken by a ZADD, and the AOF after
SWAPDB and the STORE forms."""

import threading

import pytest
import redis


def test_swapdb_moves_keys_and_ttls(c, shared):
    c.set("a", "0", ex=100)
    c1 = shared.client(db=1)
    c1.set("b", "1")
    assert c.swapdb(0, 1) is True
    assert c.get("b") == b"1" and c.get("a") is None
    assert c1.get("a") == b"0" and 0 < c1.ttl("a") <= 100
    assert c.dbsize() == 1
    for args, message in [((0, 16), "DB index is out of range"),
                          (("x", 1), "invalid first DB index"),
                          ((0, "99999999999"), "invalid second DB index")]:
        with pytest.raises(redis.ResponseError, match=message):
            c.execute_command("SWAPDB", *args)
    c1.close()


def test_swapdb_wakes_a_blocked_client_and_dirties_watches(c, shared):
    c9 = shared.client(db=9)
    c9.rpush("q", "job")
    got = []
    waiter = threading.Thread(target=lambda: got.append(shared.client().blpop("q", 5)))
    waiter.start()
    for _ in range(500):  # (let the BLPOP block first)
        if int(c.info("clients")["blocked_clients"]) == 1:
            break
        threading.Event().wait(0.01)
    watcher = shared.client()
    with watcher.pipeline() as pipe:
        pipe.watch("w")
        c9.set("w", "x")  # (in db 9: the swap brings it to db 0)
        c.swapdb(0, 9)
        pipe.multi()
        pipe.set("w", "y")
        with pytest.raises(redis.WatchError):
            pipe.execute()
    waiter.join(10)
    assert got == [(b"q", b"job")]
    c9.close()
    watcher.close()


def test_zmpop_and_bzmpop(c, shared):
    c.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert c.zmpop(2, ["none", "z"], max=True, count=2) == [b"z", [[b"c", b"3"], [b"b", b"2"]]]
    assert c.zmpop(1, ["none"], min=True) is None
    got = []
    waiter = threading.Thread(
        target=lambda: got.append(shared.client().bzmpop(5, 2, ["p", "q"], min=True)))
    waiter.start()
    for _ in range(500):
        if int(c.info("clients")["blocked_clients"]) == 1:
            break
        threading.Event().wait(0.01)
    c.zadd("q", {"x": 5})
    waiter.join(10)
    assert got == [[b"q", [[b"x", b"5"]]]]
    assert not c.exists("q")
    with pytest.raises(redis.ResponseError, match="numkeys should be greater than 0"):
        c.execute_command("ZMPOP", "0", "z", "MIN")


def test_lcs(c):
    c.mset({"a": "ohmytext", "b": "mynewtext"})
    assert c.lcs("a", "b") == b"mytext"
    assert c.lcs("a", "b", len=True) == 6
    assert c.execute_command("LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN") == [
        b"matches", [[[4, 7], [5, 8], 4]], b"len", 6]
    c.rpush("l", "x")
    with pytest.raises(redis.ResponseError, match="must contain string values"):
        c.lcs("a", "l")
    with pytest.raises(redis.ResponseError, match="please just use IDX"):
        c.lcs("a", "b", len=True, idx=True)


def test_swapdb_and_stores_survive_a_restart(make_server):
    srv = make_server(config="appendonly yes\nappendfsync always\n")
    c = srv.client()
    c.zadd("z1", {"a": 1, "b": 2})
    c.sadd("s1", "b", "c")
    c.zunionstore("u", {"z1": 2, "s1": 1}, aggregate="MAX")
    c.zmpop(1, ["z1"], min=True)
    c.swapdb(0, 3)
    srv.kill()
    srv.start()
    c3 = srv.client(db=3)
    assert c3.zrange("u", 0, -1, withscores=True) == [(b"c", 1.0), (b"a", 2.0), (b"b", 4.0)]
    assert c3.zrange("z1", 0, -1) == [b"b"]
    assert srv.client().dbsize() == 0
