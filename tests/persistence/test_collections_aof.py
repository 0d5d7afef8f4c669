"""Hashes, sets and sorted sets in the AOF with real processes: with
``appendfsync always`` every acknowledged write survives kill -9, also
across a rewrite in the middle of the load (which writes each value as
HSET/SADD/ZADD records of up to 64 items); SPOP's random effect comes back
as it happened (it is logged as the SREM of what was popped)."""

import threading

import pytest
import redis

from tests.harness import wait_for
from tests.persistence.util import aof_records, kill9_under_load


class CollectionLoad:
    """Threads each writing a hash, a set and a sorted set of their own,
    remembering the state every acknowledged reply implies."""

    def __init__(self, server, threads=3):
        self.server = server
        self.stop = threading.Event()
        self.hashes = [dict() for _ in range(threads)]
        self.sets = [set() for _ in range(threads)]
        self.zsets = [dict() for _ in range(threads)]
        self.writes = [0] * threads
        self.inflight = [None] * threads  # (kind, member) of the write without a reply
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
                member = f"m{n % 300}".encode()
                kind = n % 6
                self.inflight[i] = (kind, member)
                if kind == 0:
                    c.hset(f"h{i}", member, n)
                    self.hashes[i][member] = str(n).encode()
                elif kind == 1:
                    if c.hdel(f"h{i}", member):
                        self.hashes[i].pop(member, None)
                elif kind == 2:
                    c.sadd(f"s{i}", member)
                    self.sets[i].add(member)
                elif kind == 3:
                    popped = c.spop(f"s{i}")
                    if popped is not None:
                        self.sets[i].discard(popped)
                elif kind == 4:
                    score = c.zincrby(f"z{i}", 1.5, member)
                    self.zsets[i][member] = score
                else:
                    if c.zrem(f"z{i}", member):
                        self.zsets[i].pop(member, None)
                self.inflight[i] = None
                self.writes[i] += 1
        except (redis.ConnectionError, redis.TimeoutError):
            pass  # killed

    def wait(self, writes):
        wait_for(lambda: sum(self.writes) >= writes, timeout=60, message=f"{writes} writes")

    def join(self):
        self.stop.set()
        for t in self.threads:
            t.join(10)


def check(server, load):
    """Every acknowledged member is there as acknowledged; the last write
    of each thread may have landed without its reply."""
    c = server.client()
    for i in range(len(load.threads)):
        kind, last = load.inflight[i] or (None, None)
        hashes = c.hgetall(f"h{i}")
        for field, value in load.hashes[i].items():
            assert field == last or hashes.get(field) == value, (i, field)
        assert set(hashes) - set(load.hashes[i]) <= {last}
        members = c.smembers(f"s{i}")
        if kind == 3:  # an SPOP without its reply: any one member may be gone
            assert members <= load.sets[i] and len(load.sets[i] - members) <= 1, i
        else:
            assert members ^ load.sets[i] <= {last}, i
        scores = dict(c.zrange(f"z{i}", 0, -1, withscores=True))
        for member, score in load.zsets[i].items():
            assert member == last or scores.get(member) == score, (i, member)
        assert set(scores) - set(load.zsets[i]) <= {last}
    return c


@pytest.mark.parametrize("rewrite", [False, True], ids=["plain", "mid-rewrite"])
def test_kill9_keeps_every_acknowledged_member(make_server, rewrite):
    server, load = kill9_under_load(make_server, CollectionLoad, 1500, rewrite)
    c = check(server, load)
    assert c.info("keyspace")["db0"]["keys"] >= 6


def test_rewrite_writes_values_compactly_and_encodings_come_back(make_server):
    server = make_server(config="appendonly yes\nappendfsync always\n")
    c = server.client()
    c.hset("h", mapping={f"f{i}": i for i in range(200)})
    c.hset("small", "a", "1")
    c.sadd("ints", *range(100))
    c.sadd("s", *[f"m{i}" for i in range(150)])
    c.zadd("z", {f"m{i}": i / 3 for i in range(150)})
    c.zadd("neg", {"a": -0.0, "b": float("inf")})
    popped = c.spop("s", 10)
    c.bgrewriteaof()
    wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0)
    records = aof_records(server)
    hset = [argv for argv in records if argv[:2] == [b"HSET", b"h"]]
    assert [len(argv) for argv in hset] == [2 + 128, 2 + 128, 2 + 128, 2 + 16]  # 64 fields each
    assert sum(len(argv) - 2 for argv in records if argv[:2] == [b"SADD", b"s"]) == 140
    assert max(len(argv) for argv in records if argv[:2] == [b"ZADD", b"z"]) == 2 + 128
    server.kill()
    server.start()
    c = server.client()
    assert c.hgetall("h") == {f"f{i}".encode(): str(i).encode() for i in range(200)}
    assert c.object("encoding", "h") == b"hashtable"
    assert c.object("encoding", "small") == b"listpack"
    assert c.smembers("ints") == {str(i).encode() for i in range(100)}
    assert c.object("encoding", "ints") == b"intset"
    assert c.scard("s") == 140 and not set(popped) & c.smembers("s")
    assert c.zrange("z", 0, -1, withscores=True) == [(f"m{i}".encode(), i / 3) for i in range(150)]
    assert c.zscore("neg", "b") == float("inf")

