"""Lists and blocking list commands over redis-py (RESP2 and RESP3) against
a real trisque-server: the Python values clients get, 100 clients blocked
on one list served in the order they blocked, fractional timeouts, several
keys, wake-ups by another client's push, a blocked client that goes away,
and CLIENT UNBLOCK."""

import socket
import threading
import time

import pytest
import redis

from tests.harness import wait_for


def blocked_count(c):
    return c.info("clients")["blocked_clients"]


def test_lists_as_redis_py_sees_them(any_c):
    c = any_c
    assert c.rpush("l", "a", "b", "c") == 3 and c.lpush("l", "z") == 4
    assert c.lrange("l", 0, -1) == [b"z", b"a", b"b", b"c"]
    assert c.lpop("l") == b"z" and c.rpop("l", 2) == [b"c", b"b"]
    assert c.lpop("nokey") is None and c.lpop("nokey", 2) is None
    assert c.rpushx("nokey", "v") == 0 and c.llen("l") == 1
    assert c.linsert("l", "AFTER", "a", "b") == 2 and c.lindex("l", -1) == b"b"
    assert c.lset("l", 0, "A") is True and c.lpos("l", "b") == 1
    assert c.lpos("l", "b", count=0) == [1] and c.lpos("l", "x") is None
    assert c.lmove("l", "m", "LEFT", "RIGHT") == b"A" and c.rpoplpush("l", "m") == b"b"
    assert c.exists("l") == 0 and c.lrange("m", 0, -1) == [b"b", b"A"]
    assert c.lmpop(2, "l", "m", direction="RIGHT", count=5) == [b"m", [b"A", b"b"]]
    assert c.lmpop(1, "m", direction="LEFT") is None
    c.rpush("t", *range(10))
    assert c.ltrim("t", 2, -3) is True and c.lrem("t", 0, 5) == 1
    assert c.lrange("t", 0, -1) == [b"2", b"3", b"4", b"6", b"7"]
    assert c.type("t") == b"list" and c.object("encoding", "t") == b"quicklist"
    c.set("s", "v")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        c.lpush("s", "x")
    with pytest.raises(redis.ResponseError, match="^timeout is negative$"):
        c.blpop("t", -1)
    with pytest.raises(redis.ResponseError, match="^timeout is not a float or out of range$"):
        c.execute_command("BLPOP", "t", "nan")


def test_blocking_returns_and_timeouts(any_c):
    c = any_c
    c.rpush("b", "1")
    assert c.blpop(["a", "b"], 0) in ([b"b", b"1"], (b"b", b"1"))
    start = time.monotonic()
    assert c.blpop(["a"], 0.1) is None  # RESP3: Redis 7 sends _, redis-py gives None
    assert c.brpoplpush("a", "d", 0.05) is None
    assert c.blmove("a", "d", 0.05, "LEFT", "RIGHT") is None
    assert c.blmpop(0.05, 2, "a", "x", direction="LEFT", count=2) is None
    elapsed = time.monotonic() - start
    assert 0.25 <= elapsed < 2, elapsed


def test_raw_resp3_timeout_is_a_resp3_null(shared):
    with socket.create_connection(("127.0.0.1", shared.port), timeout=5) as s:
        s.sendall(b"HELLO 3\r\n")
        time.sleep(0.1)
        s.recv(65536)
        s.sendall(b"BLPOP nokey 0.01\r\nBRPOPLPUSH nokey d 0.01\r\n")
        data = b""
        while data.count(b"\r\n") < 2:
            data += s.recv(100)
        assert data == b"_\r\n_\r\n"


def test_wake_by_push_from_another_client(shared, any_c):
    c = any_c
    other = shared.client()
    result = {}

    def consume():
        result["got"] = c.brpop(["q1", "q2"], 0)
    t = threading.Thread(target=consume)
    t.start()
    wait_for(lambda: blocked_count(other) == 1, message="consumer blocked")
    assert other.lpush("q2", "hello") == 1
    t.join(5)
    assert tuple(result["got"]) == (b"q2", b"hello")
    assert other.exists("q2") == 0
    other.close()


def test_hundred_clients_blocked_on_one_list_served_in_order(shared):
    admin = shared.client()
    admin.execute_command("DEBUG", "FLUSHALL")
    clients = [shared.client() for _ in range(100)]
    results = [None] * 100
    threads = []
    for i, client in enumerate(clients):
        def consume(i=i, client=client):
            results[i] = client.brpop("q", 0)
        t = threading.Thread(target=consume)
        t.start()
        threads.append(t)
        # The next blocks only once this one is blocked: a known order.
        wait_for(lambda: blocked_count(admin) == i + 1, message=f"client {i} blocked")
    assert admin.lpush("q", *[f"item{i}" for i in range(100)]) == 100
    for t in threads:
        t.join(10)
    assert [tuple(r) for r in results] == [(b"q", b"item%d" % i) for i in range(100)]
    assert admin.exists("q") == 0 and blocked_count(admin) == 0
    for client in clients:
        client.close()
    admin.close()


def test_blocked_client_gone_and_client_unblock(shared):
    admin = shared.client()
    admin.execute_command("DEBUG", "FLUSHALL")
    # A blocked client that disconnects leaves no waiter behind.
    with socket.create_connection(("127.0.0.1", shared.port)) as s:
        s.sendall(b"BLPOP gone 0\r\n")
        wait_for(lambda: blocked_count(admin) == 1, message="raw client blocked")
    wait_for(lambda: blocked_count(admin) == 0, message="raw client gone")
    admin.rpush("gone", "kept")
    assert admin.lrange("gone", 0, -1) == [b"kept"]
    # CLIENT UNBLOCK: as a timeout, or with an error.
    c = shared.client()
    client_id = c.client_id()
    result = {}

    def consume():
        try:
            result["got"] = c.blpop("never", 0)
        except redis.ResponseError as exc:
            result["got"] = str(exc)
    for how, expected in (("TIMEOUT", None), ("ERROR", "UNBLOCKED client unblocked via CLIENT UNBLOCK")):
        t = threading.Thread(target=consume)
        t.start()
        wait_for(lambda: blocked_count(admin) == 1, message="blocked")
        assert admin.client_unblock(client_id, error=how == "ERROR") is True
        t.join(5)
        assert result["got"] == expected
    assert admin.client_unblock(client_id) is False
    c.close()
    admin.close()


def test_pipelined_commands_wait_behind_a_blocked_one(shared):
    admin = shared.client()
    admin.execute_command("DEBUG", "FLUSHALL")
    with socket.create_connection(("127.0.0.1", shared.port), timeout=5) as s:
        s.sendall(b"BLPOP k 0\r\nPING\r\n")
        wait_for(lambda: blocked_count(admin) == 1, message="blocked")
        admin.rpush("k", "v")
        data = b""
        while not data.endswith(b"+PONG\r\n"):
            data += s.recv(100)
        assert data == b"*2\r\n$1\r\nk\r\n$1\r\nv\r\n+PONG\r\n"
    admin.close()
