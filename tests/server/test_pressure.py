"""The pressure protocol (../shared/seeds/pressure-protocol.md.txt, v0.15):
bounded, blocking, exclusive FIFO queues built by clients from LPUSH,
BRPOP, RPOP, SETNX, SET, GET, INCR, INCRBY, EXISTS, LLEN, LTRIM and DEL.

``Pressure`` below is a small client of the protocol written from the
spec's reference command sequences (redis-py, nothing else).  Every
scenario runs against a trisque node and, in the same test, against a
redis-server started by the test, and both must give the same transcript
(what each call returned or raised), which must also be what the spec
says.

Where the spec's pseudo-code is not valid Redis, the prose wins: BRPOP
without a timeout is ``BRPOP key 0``; non-blocking Get's ``RPOP queue
closed 0`` is ``RPOP queue``; the stats keys are ``:stats:*`` as in the
key list (the reference code drops ``stats:``).  No step needs a command
outside lists, strings and keys (pressure uses no MULTI), so nothing is
skipped.
"""

import threading

import pytest
import redis

from tests.harness import wait_for
from tests.server.conftest import REDIS_SERVER

pytestmark = pytest.mark.skipif(
    REDIS_SERVER is None,
    reason="redis-server is not installed (apt-get install redis-server); CI installs it")


class PressureError(Exception):
    pass


class QueueAlreadyExists(PressureError):
    pass


class QueueDoesNotExist(PressureError):
    pass


class QueueClosed(PressureError):
    pass


class QueueInUse(PressureError):
    pass


class QueueFull(PressureError):
    pass


class QueueEmpty(PressureError):
    pass


class Pressure:
    """One client of one pressure queue (its role is taken per call)."""

    def __init__(self, r, name, client_id, prefix="__pressure__"):
        self.r = r
        self.client_id = client_id
        self.q = f"{prefix}:{name}"

    def key(self, suffix):
        return f"{self.q}:{suffix}"

    def _require(self):
        if not self.r.exists(self.key("bound")):
            raise QueueDoesNotExist(self.q)

    def create(self, bound=0):
        if not self.r.setnx(self.key("bound"), bound):
            raise QueueAlreadyExists(self.q)
        for suffix in ("producer_free", "consumer_free", "not_full"):
            self.r.lpush(self.key(suffix), 1)

    def exists(self):
        return bool(self.r.exists(self.key("bound")))

    def length(self):
        self._require()
        return self.r.llen(self.q)

    def closed(self):
        self._require()
        return bool(self.r.exists(self.key("closed")))

    def _after_put(self, data):
        length = self.r.lpush(self.q, data)
        bound = int(self.r.get(self.key("bound")))
        if bound == 0 or length < bound:
            self.r.lpush(self.key("not_full"), 0)
            self.r.ltrim(self.key("not_full"), 0, 0)
        self.r.incr(self.key("stats:produced_messages"))
        self.r.incrby(self.key("stats:produced_bytes"), len(data))

    def put(self, data, timeout=0):
        self._require()
        self.r.brpop(self.key("producer_free"), 0)
        try:
            self.r.set(self.key("producer"), self.client_id)
            if self.r.exists(self.key("closed")):
                raise QueueClosed(self.q)
            if self.r.brpop(self.key("not_full"), timeout) is None:
                raise QueueFull(self.q)
            self._after_put(data)
        finally:
            self.r.lpush(self.key("producer_free"), 0)

    def put_nowait(self, data):
        self._require()
        if self.r.rpop(self.key("producer_free")) is None:
            raise QueueInUse(self.q)
        try:
            self.r.set(self.key("producer"), self.client_id)
            if self.r.exists(self.key("closed")):
                raise QueueClosed(self.q)
            if self.r.rpop(self.key("not_full")) is None:
                raise QueueFull(self.q)
            self._after_put(data)
        finally:
            self.r.lpush(self.key("producer_free"), 0)

    def _after_get(self, data):
        self.r.lpush(self.key("not_full"), 0)
        self.r.ltrim(self.key("not_full"), 0, 0)
        self.r.incr(self.key("stats:consumed_messages"))
        self.r.incrby(self.key("stats:consumed_bytes"), len(data))

    def get(self):
        self._require()
        self.r.brpop(self.key("consumer_free"), 0)
        try:
            self.r.set(self.key("consumer"), self.client_id)
            if self.r.exists(self.key("closed")):
                if self.r.llen(self.q) == 0:
                    raise QueueClosed(self.q)
                res = self.r.brpop(self.q, 0)
            else:
                res = self.r.brpop([self.q, self.key("closed")], 0)
                if res[0].decode() == self.key("closed"):
                    raise QueueClosed(self.q)
            self._after_get(res[1])
            return res[1]
        finally:
            self.r.lpush(self.key("consumer_free"), 0)

    def get_nowait(self):
        self._require()
        if self.r.rpop(self.key("consumer_free")) is None:
            raise QueueInUse(self.q)
        try:
            self.r.set(self.key("consumer"), self.client_id)
            if self.r.exists(self.key("closed")) and self.r.llen(self.q) == 0:
                raise QueueClosed(self.q)
            res = self.r.rpop(self.q)
            if res is None:
                raise QueueEmpty(self.q)
            self._after_get(res)
            return res
        finally:
            self.r.lpush(self.key("consumer_free"), 0)

    def close(self):
        self._require()
        self.r.brpop(self.key("producer_free"), 0)
        try:
            self.r.set(self.key("producer"), self.client_id)
            if self.r.exists(self.key("closed")):
                raise QueueClosed(self.q)
            self.r.lpush(self.key("closed"), 0, 0)
        finally:
            self.r.lpush(self.key("producer_free"), 0)

    def delete(self):
        self._require()
        self.r.delete(self.key("bound"))
        self.r.lpush(self.key("not_full"), 0)
        self.r.lpush(self.key("closed"), 0, 0)
        self.r.brpop(self.key("producer_free"), 0)
        self.r.delete(self.key("producer"), self.key("producer_free"))
        self.r.brpop(self.key("consumer_free"), 0)
        self.r.delete(self.key("consumer"), self.key("consumer_free"))
        self.r.delete(self.key("not_full"), self.key("closed"))
        self.r.delete(*[self.key(f"stats:{s}") for s in (
            "produced_messages", "produced_bytes", "consumed_messages", "consumed_bytes")])
        self.r.delete(self.q)


def outcome(call, *args):
    """What a call gave: its value, or the name of the error it raised."""
    try:
        value = call(*args)
    except PressureError as exc:
        return type(exc).__name__
    return value


def blocked(r):
    return r.info("clients")["blocked_clients"]


def in_thread(fn):
    """Run ``fn`` in a thread; returns (thread, result dict)."""
    result = {}

    def run():
        result["value"] = fn()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def scenario(port, proto):
    """Every operation of the spec, in order; returns the transcript."""
    def connect():
        return redis.Redis(port=port, protocol=proto, socket_timeout=10)
    admin = connect()
    admin.flushall()
    producer = Pressure(connect(), "jobs", "producer-1")
    consumer = Pressure(connect(), "jobs", "consumer-1")
    log = []
    log.append(("exists before create", producer.exists()))
    log.append(("length before create", outcome(producer.length)))
    producer.create(bound=2)
    log.append(("create again", outcome(producer.create, 2)))
    log.append(("bound", admin.get(producer.key("bound"))))
    log.append(("exists", consumer.exists()))
    log.append(("put a", outcome(producer.put, b"a")))
    log.append(("put b", outcome(producer.put, b"bb")))
    log.append(("length", consumer.length()))
    log.append(("put_nowait on a full queue", outcome(producer.put_nowait, b"c")))
    log.append(("put with a timeout on a full queue", outcome(producer.put, b"c", 0.05)))
    log.append(("get", consumer.get()))  # FIFO: LPUSH in, BRPOP out
    log.append(("put_nowait c", outcome(producer.put_nowait, b"ccc")))

    # A producer blocked on the full queue, woken by a consumer's get.
    thread, result = in_thread(lambda: outcome(producer.put, b"dddd"))
    wait_for(lambda: blocked(admin) == 1, message="producer blocked on :not_full")
    log.append(("queue while the producer waits", admin.lrange(producer.q, 0, -1)))
    # Exclusive: the producer role is taken while it waits.
    other = Pressure(connect(), "jobs", "producer-2")
    log.append(("second producer, non-blocking", outcome(other.put_nowait, b"x")))
    log.append(("producer id", admin.get(producer.key("producer"))))
    log.append(("get wakes the producer", consumer.get()))
    thread.join(5)
    log.append(("blocked put returned", result.get("value", "still blocked")))
    log.append(("queue after", admin.lrange(producer.q, 0, -1)))

    # A consumer holding the consumer role (blocked on an empty queue)
    # keeps a second consumer out; a put wakes it.
    log.append(("drain 1", consumer.get()))
    log.append(("drain 2", consumer.get()))
    thread, result = in_thread(consumer.get)
    wait_for(lambda: blocked(admin) == 1, message="consumer blocked on the empty queue")
    second = Pressure(connect(), "jobs", "consumer-2")
    log.append(("second consumer, non-blocking", outcome(second.get_nowait)))
    log.append(("consumer id", admin.get(consumer.key("consumer"))))
    log.append(("put wakes the consumer", outcome(producer.put, b"e")))
    thread.join(5)
    log.append(("blocked get returned", result.get("value", "still blocked")))
    log.append(("get_nowait on an empty queue", outcome(second.get_nowait)))

    log.append(("stats", [admin.get(producer.key(f"stats:{s}")) for s in (
        "produced_messages", "produced_bytes", "consumed_messages", "consumed_bytes")]))

    # Close: puts refused, what is queued still comes out, then Closed.
    log.append(("put f", outcome(producer.put, b"f")))
    log.append(("put g", outcome(producer.put, b"g")))
    log.append(("closed before", consumer.closed()))
    log.append(("close", outcome(producer.close)))
    log.append(("closed after", consumer.closed()))
    log.append(("close again", outcome(producer.close)))
    log.append(("put after close", outcome(producer.put, b"h")))
    log.append(("get after close", outcome(consumer.get)))
    log.append(("get_nowait after close", outcome(consumer.get_nowait)))
    log.append(("get on a drained closed queue", outcome(consumer.get)))

    # A consumer blocked on an open empty queue is woken by close.
    waiting = Pressure(connect(), "jobs2", "consumer-3")
    waiting.create(bound=0)
    thread, result = in_thread(lambda: outcome(waiting.get))
    wait_for(lambda: blocked(admin) == 1, message="consumer blocked on jobs2")
    Pressure(connect(), "jobs2", "producer-3").close()
    thread.join(5)
    log.append(("close wakes a blocked get", result.get("value", "still blocked")))
    log.append(("unbounded put after close", outcome(waiting.put, b"x")))

    # Delete: every key of the queue goes.
    def queue_keys():
        return sorted(admin.keys(producer.q) + admin.keys(producer.q + ":*"))
    log.append(("keys before delete", queue_keys()))
    log.append(("delete", outcome(consumer.delete)))
    log.append(("keys after delete", queue_keys()))
    log.append(("exists after delete", producer.exists()))
    log.append(("put after delete", outcome(producer.put, b"z")))
    return log


EXPECTED = {
    "exists before create": False,
    "length before create": "QueueDoesNotExist",
    "create again": "QueueAlreadyExists",
    "bound": b"2",
    "put_nowait on a full queue": "QueueFull",
    "put with a timeout on a full queue": "QueueFull",
    "get": b"a",
    "queue while the producer waits": [b"ccc", b"bb"],
    "second producer, non-blocking": "QueueInUse",
    "get wakes the producer": b"bb",
    "queue after": [b"dddd", b"ccc"],
    "drain 1": b"ccc",
    "drain 2": b"dddd",
    "second consumer, non-blocking": "QueueInUse",
    "consumer id": b"consumer-1",
    "blocked get returned": b"e",
    "get_nowait on an empty queue": "QueueEmpty",
    "stats": [b"5", b"11", b"5", b"11"],
    "close again": "QueueClosed",
    "put after close": "QueueClosed",
    "get after close": b"f",
    "get_nowait after close": b"g",
    "get on a drained closed queue": "QueueClosed",
    "close wakes a blocked get": "QueueClosed",
    "unbounded put after close": "QueueClosed",
    "keys after delete": [],
    "exists after delete": False,
    "put after delete": "QueueDoesNotExist",
}


@pytest.mark.parametrize("proto", [2, 3])
def test_pressure_protocol_same_as_redis(shared, redis_port, proto):
    ours = scenario(shared.port, proto)
    theirs = scenario(redis_port, proto)
    assert ours == theirs
    got = dict(ours)
    for step, expected in EXPECTED.items():
        assert got[step] == expected, step
    # All 12 keys but the queue list itself, drained (empty lists vanish).
    assert len(got["keys before delete"]) == 11
    assert b"__pressure__:jobs" not in got["keys before delete"]
