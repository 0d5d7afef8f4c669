"""Lists in the AOF with real processes: with ``appendfsync always`` every
list write whose reply came back survives kill -9, plain and with a rewrite
in the middle of the load, and so does every pop a blocked BLPOP was served
with (its reply goes out only once the pop is on disk)."""

import threading
from collections import deque

import pytest
import redis

from tests.harness import wait_for


class ListLoad:
    """Threads changing lists of their own, keeping a model of each from
    the replies; ``inflight`` is the one op whose reply never came."""

    def __init__(self, server, threads=3):
        self.server = server
        self.stop = threading.Event()
        self.models = [(deque(), deque()) for _ in range(threads)]
        self.inflight = [None] * threads
        self.ops = [0] * threads
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(threads)]
        # A consumer blocked on "bq", fed by a producer: served pops.
        self.pushed = []
        self.consumed = []
        self.push_inflight = None
        self.threads.append(threading.Thread(target=self.produce, daemon=True))
        self.threads.append(threading.Thread(target=self.consume, daemon=True))
        for t in self.threads:
            t.start()

    def run(self, i):
        c = self.server.client(socket_timeout=5)
        key, key2 = f"l{i}", f"m{i}"
        main, second = self.models[i]
        n = 0
        try:
            while not self.stop.is_set():
                n += 1
                value = b"%d" % n
                if n % 3 == 0 and main:
                    self.inflight[i] = ("LPOP",)
                    assert c.lpop(key) == main[0]
                    main.popleft()
                elif n % 13 == 0 and main:
                    self.inflight[i] = ("RPOPLPUSH",)
                    assert c.rpoplpush(key, key2) == main[-1]
                    second.appendleft(main.pop())
                elif n % 11 == 0:
                    self.inflight[i] = ("LTRIM",)
                    c.ltrim(key, 0, 19)
                    while len(main) > 20:
                        main.pop()
                else:
                    self.inflight[i] = ("RPUSH", value)
                    assert c.rpush(key, value) == len(main) + 1
                    main.append(value)
                self.inflight[i] = None
                self.ops[i] += 1
        except (redis.ConnectionError, redis.TimeoutError):
            pass  # killed

    def produce(self):
        c = self.server.client(socket_timeout=5)
        n = 0
        try:
            while not self.stop.is_set():
                n += 1
                self.push_inflight = b"b%d" % n
                c.rpush("bq", self.push_inflight)
                self.pushed.append(self.push_inflight)
                self.push_inflight = None
        except (redis.ConnectionError, redis.TimeoutError):
            pass

    def consume(self):
        c = self.server.client(socket_timeout=5)
        try:
            while not self.stop.is_set():
                got = c.blpop("bq", 1)
                if got is not None:
                    self.consumed.append(got[1])
        except (redis.ConnectionError, redis.TimeoutError):
            pass

    def wait(self, ops):
        wait_for(lambda: sum(self.ops) >= ops and len(self.consumed) > 50,
                 timeout=30, message=f"{ops} list writes")

    def join(self):
        self.stop.set()
        for t in self.threads:
            t.join(10)


def with_inflight(models, op):
    """The models had the op without a reply landed (it may have)."""
    main, second = deque(models[0]), deque(models[1])
    if op is None:
        return main, second
    if op[0] == "LPOP" and main:
        main.popleft()
    elif op[0] == "RPOPLPUSH" and main:
        second.appendleft(main.pop())
    elif op[0] == "LTRIM":
        while len(main) > 20:
            main.pop()
    elif op[0] == "RPUSH":
        main.append(op[1])
    return main, second


def check(server, load):
    c = server.client()
    for i, models in enumerate(load.models):
        state = (deque(c.lrange(f"l{i}", 0, -1)), deque(c.lrange(f"m{i}", 0, -1)))
        assert state in ((models[0], models[1]), with_inflight(models, load.inflight[i])), i
    after = c.lrange("bq", 0, -1)
    pushed = load.pushed + ([load.push_inflight] if load.push_inflight else [])
    assert not set(after) & set(load.consumed)  # a served pop stays popped
    # What is left: the pushes not consumed, in order; one of them may have
    # been popped for the consumer without its reply arriving.
    left = [v for v in pushed if v not in set(load.consumed)]
    assert after == left or (after == left[1:]) or (
        load.push_inflight and after == left[:-1]) or after == left[1:-1], (after[:5], left[:5])
    return c


@pytest.mark.parametrize("rewrite", [False, True], ids=["plain", "mid-rewrite"])
def test_kill9_keeps_every_acknowledged_list_write(make_server, rewrite):
    server = make_server(config="appendonly yes\nappendfsync always\n")
    load = ListLoad(server)
    load.wait(1500)
    if rewrite:
        server.client().bgrewriteaof()
        load.wait(3000)
    server.kill()
    load.join()
    server.start()
    c = check(server, load)
    assert c.info("keyspace")["db0"]["keys"] > 0
    # And once more after a rewrite of what came back.
    c.bgrewriteaof()
    wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0)
    server.kill()
    server.start()
    check(server, load)
