"""Streams on a real server: what the differential test
(test_streams_vs_redis.py) cannot send to both servers alike: ``*`` IDs
from the clock, blocking XREAD / XREADGROUP woken by XADD (first come
first served, a deleted key, a destroyed group, CLIENT UNBLOCK, timeouts),
MULTI/EXEC and Lua scripts, WRONGTYPE and malformed input, and kill -9
restarts that must bring back every stream, group, consumer and PEL entry
(from the AOF as logged, and after an AOF rewrite)."""

import re
import threading
import time

import hiredis
import pytest
import redis

from tests.harness import wait_for
from tests.server.util import Raw


def assert_error(reply, text):
    assert isinstance(reply, hiredis.ReplyError) and text in str(reply), reply


def blocked_count(client):
    return client.info("clients")["blocked_clients"]


def test_xadd_star_ids_grow_from_the_clock(c):
    before_ms = int(time.time() * 1000)
    first = c.xadd("s", {"a": 1})
    ms, seq = map(int, first.split(b"-"))
    assert before_ms - 1000 <= ms <= int(time.time() * 1000) + 1000
    ids = [c.xadd("s", {"n": i}) for i in range(50)]
    parsed = [tuple(map(int, i.split(b"-"))) for i in [first] + ids]
    assert parsed == sorted(parsed) and len(set(parsed)) == 51
    assert c.xlen("s") == 51
    # A last ID in the future: "*" continues from it, sequence + 1.
    c.xadd("f", {"a": 1}, id="99999999999999-5")
    assert c.xadd("f", {"a": 2}) == b"99999999999999-6"
    assert c.xadd("f", {"a": 3}, id="99999999999999-*") == b"99999999999999-7"
    c.xadd("m", {"a": 1}, id="5-18446744073709551615")
    with pytest.raises(redis.ResponseError, match="equal or smaller"):
        c.xadd("m", {"a": 1}, id="5-*")
    c.xadd("max", {"a": 1}, id="18446744073709551615-18446744073709551615")
    with pytest.raises(redis.ResponseError, match="exhausted the last possible ID"):
        c.xadd("max", {"a": 1})


def test_replies_resp2_and_resp3(any_c):
    r = any_c
    r.xadd("s", {"f": "v"}, id="1-1")
    r.xgroup_create("s", "g", id="0")
    got = r.xreadgroup("g", "alice", {"s": ">"})
    if r.proto == 3:
        assert got == {b"s": [[(b"1-1", {b"f": b"v"})]]}
    else:
        assert got == [[b"s", [(b"1-1", {b"f": b"v"})]]]
    assert r.xpending("s", "g")["pending"] == 1
    info = r.xinfo_stream("s")
    assert info["length"] == 1 and info["groups"] == 1
    assert info["first-entry"] == (b"1-1", {b"f": b"v"})
    assert r.xread({"s": "$"}) in ([], {}, None)


def test_wrongtype_and_bad_input_keep_the_connection(c):
    c.set("str", "x")
    for call in (lambda: c.xadd("str", {"a": 1}), lambda: c.xrange("str"),
                 lambda: c.xlen("str"), lambda: c.xread({"str": "0"}),
                 lambda: c.xgroup_create("str", "g", mkstream=True)):
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            call()
    c.xadd("s", {"a": 1}, id="1-1")
    for bad in ("1-x", "abc", "-1", "1--1", "18446744073709551616", "", "(", "1-" + "9" * 200):
        with pytest.raises(redis.ResponseError, match="Invalid stream ID"):
            c.execute_command("XDEL", "s", bad)
    with pytest.raises(redis.ResponseError, match="NOGROUP"):
        c.xreadgroup("nope", "c", {"s": ">"})
    with pytest.raises(redis.ResponseError, match="BUSYGROUP"):
        c.xgroup_create("s", "g")
        c.xgroup_create("s", "g")
    with pytest.raises(redis.ResponseError, match="unknown subcommand 'FOO'"):
        c.execute_command("XGROUP", "FOO")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'xgroup|create'"):
        c.execute_command("XGROUP", "CREATE", "s")
    assert c.ping() is True
    assert c.xlen("s") == 1


def test_blocked_xread_woken_by_xadd_fifo(shared, c):
    readers = [Raw(shared.port) for _ in range(3)]
    try:
        for n, reader in enumerate(readers):
            reader.send_command("XREAD", "BLOCK", 0, "STREAMS", "s", "$")
            wait_for(lambda: blocked_count(c) == n + 1, message=f"reader {n} blocked")
        c.xadd("s", {"f": "v"}, id="5-1")
        # every plain reader gets the entry (XREAD consumes nothing)
        for reader in readers:
            assert reader.reply() == [[b"s", [[b"5-1", [b"f", b"v"]]]]]
        assert blocked_count(c) == 0
    finally:
        for reader in readers:
            reader.close()


def test_blocked_xreadgroup_served_first_come_first_served(shared, c):
    c.xgroup_create("s", "g", id="$", mkstream=True)
    readers = [Raw(shared.port) for _ in range(3)]
    try:
        for n, reader in enumerate(readers):
            reader.send_command("XREADGROUP", "GROUP", "g", f"c{n}", "COUNT", 1, "BLOCK", 0,
                                "STREAMS", "s", ">")
            wait_for(lambda: blocked_count(c) == n + 1, message=f"reader {n} blocked")
        c.xadd("s", {"n": 0}, id="1-0")
        assert readers[0].reply() == [[b"s", [[b"1-0", [b"n", b"0"]]]]]
        assert blocked_count(c) == 2
        pipe = c.pipeline(transaction=False)
        pipe.xadd("s", {"n": 1}, id="2-0")
        pipe.xadd("s", {"n": 2}, id="3-0")
        pipe.execute()
        assert readers[1].reply() == [[b"s", [[b"2-0", [b"n", b"1"]]]]]
        assert readers[2].reply() == [[b"s", [[b"3-0", [b"n", b"2"]]]]]
        pending = c.xpending_range("s", "g", "-", "+", 10)
        assert [(p["message_id"], p["consumer"]) for p in pending] == [
            (b"1-0", b"c0"), (b"2-0", b"c1"), (b"3-0", b"c2")]
    finally:
        for reader in readers:
            reader.close()


def test_blocked_xreadgroup_key_deleted_group_destroyed(shared, c):
    c.xgroup_create("s", "g", id="$", mkstream=True)
    with Raw(shared.port) as reader:
        reader.send_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", 0, "STREAMS", "s", ">")
        wait_for(lambda: blocked_count(c) == 1, message="blocked")
        c.delete("s")
        assert_error(reader.reply(), "UNBLOCKED the stream key no longer")
        c.xgroup_create("s", "g", id="$", mkstream=True)
        reader.send_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", 0, "STREAMS", "s", ">")
        wait_for(lambda: blocked_count(c) == 1, message="blocked again")
        c.set("s", "now a string")  # (overwritten: as deleted)
        assert_error(reader.reply(), "UNBLOCKED")
        c.delete("s")
        c.xgroup_create("s", "g", id="$", mkstream=True)
        reader.send_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", 0, "STREAMS", "s", ">")
        wait_for(lambda: blocked_count(c) == 1, message="blocked a third time")
        c.xgroup_destroy("s", "g")
        assert_error(reader.reply(), "NOGROUP the consumer group this client")
        # A plain XREAD waits on through a deletion.
        reader.send_command("XREAD", "BLOCK", 0, "STREAMS", "s", "$")
        wait_for(lambda: blocked_count(c) == 1, message="xread blocked")
        c.delete("s")
        time.sleep(0.05)
        assert blocked_count(c) == 1
        c.xadd("s", {"a": 1}, id="9-9")
        assert reader.reply() == [[b"s", [[b"9-9", [b"a", b"1"]]]]]


def test_block_timeout_and_client_unblock(shared, c):
    start = time.monotonic()
    assert c.xread({"s": "$"}, block=100) in (None, [])
    assert time.monotonic() - start >= 0.09
    other = shared.client()
    client_id = other.client_id()
    result = {}

    def read():
        try:
            result["got"] = other.xread({"s": "$"}, block=0)
        except redis.ResponseError as exc:
            result["got"] = str(exc)
    for how, expected in (("TIMEOUT", None), ("ERROR", "UNBLOCKED client unblocked via "
                                                        "CLIENT UNBLOCK")):
        t = threading.Thread(target=read)
        t.start()
        wait_for(lambda: blocked_count(c) == 1, message="blocked")
        assert c.client_unblock(client_id, error=how == "ERROR") is True
        t.join(5)
        assert result["got"] in ((None, []) if expected is None else (expected,))
    other.close()
    with pytest.raises(redis.ResponseError, match="timeout is negative"):
        c.execute_command("XREAD", "BLOCK", -1, "STREAMS", "s", "$")


def test_multi_exec_and_lua(c):
    pipe = c.pipeline(transaction=True)
    pipe.xadd("s", {"a": 1}, id="1-1")
    pipe.xgroup_create("s", "g", id="0")
    pipe.xreadgroup("g", "c", {"s": ">"}, block=0)  # (no blocking inside EXEC)
    pipe.xack("s", "g", "1-1")
    assert pipe.execute() == [b"1-1", True, [[b"s", [(b"1-1", {b"a": b"1"})]]], 1]
    script = """
        local id = redis.call('XADD', KEYS[1], '2-1', 'b', ARGV[1])
        local got = redis.call('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', KEYS[1], '>')
        redis.call('XACK', KEYS[1], 'g', id)
        return {id, got[1][2][1][2][2], redis.call('XLEN', KEYS[1])}
    """
    assert c.eval(script, 1, "s", "hello") == [b"2-1", b"hello", 2]
    with pytest.raises(redis.ResponseError, match="not allowed with BLOCK option from scripts"):
        c.eval("return redis.call('XREAD', 'BLOCK', 0, 'STREAMS', 's', '$')", 0)
    # An XADD in a transaction wakes a blocked reader after EXEC.
    assert c.xpending("s", "g")["pending"] == 0


def test_restart_keeps_streams_groups_and_pel(make_server):
    srv = make_server(config="appendonly yes\n")
    r = srv.client()
    for i in range(300):
        r.xadd("s", {"f": "v%d" % i, "n": i})
    r.xadd("t", {"x": "y"}, id="7-7")
    r.xdel("t", "7-7")
    r.xgroup_create("s", "g1", id="0")
    r.xgroup_create("s", "g2", id="$")
    r.xreadgroup("g1", "alice", {"s": ">"}, count=20)
    r.xreadgroup("g1", "bob", {"s": ">"}, count=5, noack=True)
    r.xreadgroup("g1", "alice", {"s": "0"}, count=3)  # history: counts go up
    first = r.xrange("s", count=1)[0][0]
    r.xclaim("s", "g1", "carol", 0, [first])
    r.xautoclaim("s", "g1", "dave", 0, "0", count=2)
    r.xack("s", "g1", r.xrange("s", count=12)[11][0])
    r.xgroup_createconsumer("s", "g2", "idle")
    r.xtrim("s", maxlen=250, approximate=True)
    r.xdel("s", r.xrange("s", count=30)[29][0])  # in the PEL or not: kept as it was

    def state():
        return [r.execute_command("XINFO", "STREAM", "s", "FULL", "COUNT", 0),
                r.execute_command("XINFO", "STREAM", "t", "FULL"),
                r.xinfo_groups("s"), r.xrange("s")]
    before = state()
    srv.kill()
    srv.start()
    r = srv.client()
    after = state()
    assert after[1:] == before[1:]
    assert _strip_seen(after[0]) == _strip_seen(before[0])
    r.bgrewriteaof()
    wait_for(lambda: r.info("persistence")["aof_rewrite_in_progress"] == 0,
             message="rewrite done")
    srv.kill()
    srv.start()
    r = srv.client()
    after = state()
    assert after[1:] == before[1:]
    assert _strip_seen(after[0]) == _strip_seen(before[0])


def _strip_seen(full):
    """XINFO STREAM FULL without the consumers' seen-time (when a consumer
    last acted: after a restart, when its records were replayed)."""
    return re.sub(r"b'seen-time', \d+", "b'seen-time', T", repr(full))


def test_dump_restore_and_copy_keep_groups_and_pel(c):
    c.xadd("s", {"a": 1}, id="1-1")
    c.xadd("s", {"a": 2}, id="2-1")
    c.xgroup_create("s", "g", id="0")
    c.xreadgroup("g", "alice", {"s": ">"})
    c.xdel("s", "1-1")  # pending, no longer in the stream: kept
    c.restore("s2", 0, c.dump("s"))
    assert c.copy("s", "s3") is True
    want = _strip_seen(c.execute_command("XINFO", "STREAM", "s", "FULL"))
    for key in ("s2", "s3"):
        assert _strip_seen(c.execute_command("XINFO", "STREAM", key, "FULL")) == want
    assert c.xack("s2", "g", "1-1", "2-1") == 2 and c.xpending("s", "g")["pending"] == 2


def test_history_reread_starts_after_the_id_given(c):
    c.xgroup_create("s", "g", id="$", mkstream=True)
    c.xadd("s", {"k": "v"}, id="667-0")
    assert c.xreadgroup("g", "c", {"s": ">"}) == [[b"s", [(b"667-0", {b"k": b"v"})]]]
    for after, want in (("0", [(b"667-0", {b"k": b"v"})]), ("666", [(b"667-0", {b"k": b"v"})]),
                        ("667", []), ("667-0", []), ("700", [])):
        assert c.xreadgroup("g", "c", {"s": after}, block=0) == [[b"s", want]], after
    assert c.xpending_range("s", "g", "-", "+", 10)[0]["times_delivered"] == 3
