"""Blocking GETJOB against a real server: wake-up, timeouts, fairness,
200 waiting consumers, PAUSE out, disconnects."""

import time

import pytest

from tests.harness import wait_for
from tests.server.util import Raw, encode


def blocked(client):
    return client.info("clients")["blocked_clients"]


@pytest.mark.parametrize("getjob", ["GETJOB", "GETJOBS"])
def test_blocked_getjob_served_by_another_client(c, shared, getjob):
    with Raw(shared.port) as consumer:
        consumer.send_command(getjob, "FROM", "q")
        wait_for(lambda: blocked(c) == 1, message="consumer blocked")
        assert consumer.pending() == b""
        job_id = c.execute_command("ADDJOB", "q", "hello", 0)
        assert consumer.reply() == [[b"q", job_id, b"hello"]]
        assert blocked(c) == 0
        assert consumer.call("PING") == b"PONG"


def test_timeout_returns_nil_resp2_and_resp3(c, shared):
    with Raw(shared.port) as r2, Raw(shared.port) as r3, Raw(shared.port) as maps:
        r3.call("HELLO", 3)
        maps.call("HELLO", 3)
        maps.call("CLIENT", "DISQUE-RESP3", "ON")
        start = time.monotonic()
        for raw in (r2, r3, maps):
            raw.send_command("GETJOB", "TIMEOUT", 200, "FROM", "q")
        assert r2.read_line() == b"*-1\r\n"
        elapsed = time.monotonic() - start
        assert 0.19 <= elapsed < 2, elapsed
        assert r3.read_line() == b"_\r\n"  # RESP3's null, with or without
        assert maps.read_line() == b"_\r\n"  # RESP3 types asked for
        # the connections still work and a later job stays queued
        assert r2.call("PING") == b"PONG"
        c.execute_command("ADDJOB", "q", "x", 0)
        assert c.execute_command("QLEN", "q") == 1


def test_redis_py_blocking_getjob_timeout(c):
    start = time.monotonic()
    assert c.execute_command("GETJOB", "TIMEOUT", 100, "FROM", "q") is None
    assert time.monotonic() - start >= 0.09


def test_fair_service_in_arrival_order(c, shared):
    consumers = [Raw(shared.port) for _ in range(5)]
    try:
        for n, consumer in enumerate(consumers):
            consumer.send_command("GETJOB", "FROM", "q")
            wait_for(lambda: blocked(c) == n + 1, message="consumer %d blocked" % n)
        ids = [c.execute_command("ADDJOB", "q", "job%d" % i, 0) for i in range(5)]
        for consumer, job_id in zip(consumers, ids):
            assert consumer.reply()[0][1] == job_id
    finally:
        for consumer in consumers:
            consumer.close()


def test_200_blocked_consumers_all_served(c, shared):
    consumers = [Raw(shared.port) for _ in range(200)]
    try:
        for consumer in consumers:
            consumer.send_command("GETJOB", "TIMEOUT", 20000, "FROM", "many", "other")
        wait_for(lambda: blocked(c) == 200, message="200 consumers blocked")
        stat = c.execute_command("QSTAT", "many")
        assert stat[stat.index(b"blocked") + 1] == 200
        pipe = c.pipeline(transaction=False)
        for i in range(200):
            pipe.execute_command("ADDJOB", "many", "job%d" % i, 0)
        ids = pipe.execute()
        got = [consumer.reply()[0][1] for consumer in consumers]
        assert sorted(got) == sorted(ids)
        assert len(set(got)) == 200
        assert blocked(c) == 0
        assert c.execute_command("QLEN", "many") == 0
    finally:
        for consumer in consumers:
            consumer.close()


def test_paused_out_getjob_blocks_until_unpaused(c, shared):
    job_id = c.execute_command("ADDJOB", "q", "x", 0)
    assert c.execute_command("PAUSE", "q", "out") == b"out"
    with Raw(shared.port) as consumer:
        consumer.send_command("GETJOB", "FROM", "q")
        wait_for(lambda: blocked(c) == 1, message="consumer blocked")
        assert consumer.pending(0.2) == b""
        assert c.execute_command("PAUSE", "q", "none") == b"none"
        assert consumer.reply() == [[b"q", job_id, b"x"]]


def test_disconnected_consumer_gets_nothing(c, shared):
    gone = Raw(shared.port)
    gone.send_command("GETJOB", "FROM", "q")
    wait_for(lambda: blocked(c) == 1, message="consumer blocked")
    gone.close()
    wait_for(lambda: blocked(c) == 0, message="consumer gone")
    c.execute_command("ADDJOB", "q", "x", 0)
    assert c.execute_command("QLEN", "q") == 1


def test_pipelined_commands_wait_behind_blocked_getjob(c, shared):
    with Raw(shared.port) as consumer:
        consumer.send(b"PING\r\n" + encode("GETJOB", "FROM", "q")
                      + encode("ECHO", "after") + encode("PING"))
        assert consumer.reply() == b"PONG"
        wait_for(lambda: blocked(c) == 1, message="consumer blocked")
        assert consumer.pending(0.1) == b""
        job_id = c.execute_command("ADDJOB", "q", "x", 0)
        assert consumer.reply()[0][1] == job_id
        assert consumer.reply() == b"after"
        assert consumer.reply() == b"PONG"


def test_blocked_on_several_queues_served_by_any(c, shared):
    with Raw(shared.port) as consumer:
        consumer.send_command("GETJOB", "TIMEOUT", 5000, "FROM", "a", "b", "c")
        wait_for(lambda: blocked(c) == 1, message="consumer blocked")
        job_id = c.execute_command("ADDJOB", "c", "x", 0)
        assert consumer.reply() == [[b"c", job_id, b"x"]]
        c.execute_command("ADDJOB", "a", "y", 0)
        assert c.execute_command("QLEN", "a") == 1
        assert consumer.pending(0.1) == b""


def test_requeued_job_wakes_blocked_consumer(c, shared):
    job_id = c.execute_command("ADDJOB", "q", "x", 0, "RETRY", 1)
    c.execute_command("GETJOB", "FROM", "q")
    with Raw(shared.port) as consumer:
        consumer.send_command("GETJOB", "TIMEOUT", 5000, "WITHCOUNTERS", "FROM", "q")
        reply = consumer.reply()
        assert reply[0][1] == job_id
        assert reply[0][5:] == [b"additional-deliveries", 1]
