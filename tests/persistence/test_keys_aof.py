"""Keys in the AOF with real processes: with ``appendfsync always`` every
key write whose reply came back survives kill -9 (also across a rewrite in
the middle of the load); TTLs and dbs come back; keys that expired while
the node was down stay gone."""

import threading
import time

import pytest
import redis

from tests.harness import wait_for
from tests.persistence.util import kill9_under_load


class KeyLoad:
    """Threads writing their own keys, remembering every acknowledged write."""

    def __init__(self, server, threads=4):
        self.server = server
        self.stop = threading.Event()
        self.acked = [dict() for _ in range(threads)]  # key -> last acked value
        self.counters = [0] * threads  # last acked INCR reply
        self.inflight = [None] * threads  # the key of the write without a reply yet
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(threads)]
        for t in self.threads:
            t.start()

    def run(self, i):
        c = self.server.client(socket_timeout=5)
        n = 0
        try:
            while not self.stop.is_set():
                n += 1
                key = f"t{i}:{n % 200}"
                self.inflight[i] = key
                if n % 7 == 0:
                    c.delete(key)
                    self.acked[i].pop(key, None)
                elif n % 5 == 0:
                    self.counters[i] = c.incr(f"counter{i}")
                else:
                    value = f"{n}".encode()
                    c.set(key, value, ex=100000) if n % 2 else c.append(key, value)
                    if not n % 2:
                        value = c.get(key)
                    self.acked[i][key] = value
        except (redis.ConnectionError, redis.TimeoutError):
            pass  # killed

    def wait(self, writes):
        wait_for(lambda: sum(len(a) for a in self.acked) + sum(self.counters) >= writes,
                 timeout=30, message=f"{writes} writes")

    def join(self):
        self.stop.set()
        for t in self.threads:
            t.join(10)


def check(server, load):
    c = server.client()
    for i, acked in enumerate(load.acked):
        for key, value in acked.items():
            # (The last write sent may have landed without its reply.)
            if key != load.inflight[i]:
                assert c.get(key) == value, key
        counter = int(c.get(f"counter{i}") or 0)
        assert load.counters[i] <= counter <= load.counters[i] + 1
    return c


@pytest.mark.parametrize("rewrite", [False, True], ids=["plain", "mid-rewrite"])
def test_kill9_keeps_every_acknowledged_key(make_server, rewrite):
    server, load = kill9_under_load(make_server, KeyLoad, 2000, rewrite)
    c = check(server, load)
    assert c.info("keyspace")["db0"]["keys"] > 0


def test_dbs_ttls_and_expired_keys_come_back_right(make_server):
    server = make_server(config="appendonly yes\nappendfsync always\n")
    c = server.client()
    c.set("far", "v", ex=1000)
    c.set("soon", "v", px=300)
    c.execute_command("SELECT", 4)  # (redis-py keeps one connection: same db)
    c.set("in4", "x")
    c.incrbyfloat("f", "10.5")
    c.execute_command("INCRBYFLOAT", "f", "0.1")
    time.sleep(0.5)  # "soon" expires before the crash (or while down)
    server.kill()
    server.start()
    c = server.client()
    assert c.get("soon") is None and c.exists("soon") == 0
    assert 990 <= c.ttl("far") <= 1000
    assert c.get("in4") is None
    c.execute_command("SELECT", 4)
    assert c.get("in4") == b"x" and c.get("f") == b"10.6"
    c.execute_command("BGREWRITEAOF")
    wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0)
    server.kill()
    server.start()
    c = server.client()
    assert 990 <= c.ttl("far") <= 1000
    c.execute_command("SELECT", 4)
    assert c.get("f") == b"10.6"
