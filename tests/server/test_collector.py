"""The collector's premise (shell/collector.py): a node makes no reference
cycles in steady state, so its old generation is never collected on its
own (a full pass would walk every job and stall every client).  A node
that started creating cycles would leak them: these tests fail first.

DEBUG GC runs a full pass on demand and reports what it found;
collected_since_start counts what every collection freed since start-up."""

import re
import socket

import redis

from tests.cluster.conftest import build_cluster
from tests.harness import Server


def debug_gc(client):
    text = client.execute_command("DEBUG", "GC")
    text = text.decode() if isinstance(text, bytes) else text
    return {k: float(v) for k, v in re.findall(r"(\w+):([\d.]+)", text)}


def cycles_made(client, churn):
    """Cyclic garbage the node's collections found while ``churn`` ran."""
    before = debug_gc(client)
    churn()
    after = debug_gc(client)
    return after["collected_since_start"] - before["collected_since_start"]


def churn_one_node(port, rounds):
    long_lived = [redis.Redis(port=port) for _ in range(50)]
    for c in long_lived:
        c.ping()
    for i in range(rounds):
        c = redis.Redis(port=port, protocol=3 if i % 2 else 2)
        job = c.execute_command("ADDJOB", "q", "body", 0)
        c.execute_command("GETJOB", "NOHANG", "FROM", "q")
        c.execute_command("ACKJOB", job)
        c.execute_command("GETJOB", "TIMEOUT", 10, "FROM", "empty")
        c.set(f"k{i % 10}", "v")
        c.blpop(["nolist"], timeout=0.01)
        sub = c.pubsub()
        sub.subscribe("ch")
        c.publish("ch", "m")
        sub.unsubscribe("ch")
        sub.close()
        with c.pipeline() as tx:
            tx.incr("n").get("n").execute()
        c.eval("return redis.call('get', KEYS[1])", 1, "k1")
        try:
            c.execute_command("NOSUCHCOMMAND")
        except redis.ResponseError:
            pass
        c.close()
        raw = socket.create_connection(("127.0.0.1", port))
        raw.sendall(b"*1\r\n$4\r\nPING\r\n*x\r\n")  # a protocol error closes it
        raw.recv(100)
        raw.close()
    streams_and_functions(redis.Redis(port=port), rounds)
    for c in long_lived:  # clients that lived through many young collections
        c.execute_command("ADDJOB", "q2", "b", 0)
        c.close()


LIBRARY = "#!lua name=lib{n}\nredis.register_function('f{n}', function() return {n} end)"


def streams_and_functions(c, rounds):
    """Streams with pending entries and Lua libraries, made and dropped
    every way there is (a consumer group's PEL and a library's functions
    are where back-pointers would make cycles)."""
    for i in range(rounds):
        key = f"s{i}"
        c.xadd(key, {"f": "v"})
        c.xadd(key, {"f": "w"})
        c.xgroup_create(key, "g", id="0")
        c.xreadgroup("g", "alice", {key: ">"}, count=1)
        c.xreadgroup("g", "bob", {key: ">"}, count=1)
        c.xclaim(key, "g", "carol", 0, [c.xrange(key)[0][0]])
        if i % 3 == 0:
            c.xgroup_delconsumer(key, "g", "bob")
        elif i % 3 == 1:
            c.xgroup_destroy(key, "g")
        c.delete(key)  # the stream goes with its groups and pending entries
        c.function_load(LIBRARY.format(n=i % 5), replace=True)
        if i % 7 == 0:
            c.function_delete(f"lib{i % 5}")
    c.function_flush()


def test_a_node_makes_no_reference_cycles():
    server = Server().start()
    try:
        with server.client() as c:
            made = cycles_made(c, lambda: churn_one_node(server.port, 150))
            assert made <= 3, f"{made} objects in reference cycles: the node now makes cycles"
            info = c.info("stats")
            assert info["gc_pauses"] > 0  # young collections ran and were timed
            assert float(info["gc_pause_ms_max"]) > 0
    finally:
        server.cleanup()


def test_replicated_jobs_make_no_reference_cycles():
    cluster = build_cluster(2)
    try:
        def churn():
            for i in range(100):
                job = cluster[0].execute_command("ADDJOB", "r", "body", 0, "REPLICATE", 2)
                cluster[1].execute_command("GETJOB", "TIMEOUT", 2000, "FROM", "r")
                cluster[1].execute_command("ACKJOB", job)
        before = [debug_gc(c)["collected_since_start"] for c in cluster.clients]
        churn()
        after = [debug_gc(c)["collected_since_start"] for c in cluster.clients]
        assert all(a - b <= 3 for a, b in zip(after, before)), (before, after)
    finally:
        cluster.close()
