"""Two Redis queue protocols run unchanged against trisque and against
redis-server, with the same results: rfq (../shared/seeds/rfq-readme.txt:
publish, consume, commit, harvest; publish and commit as MULTI/EXEC
pipelines, harvest under WATCH as redis-py's transaction helper issues it)
and antirez's circular reliable queue in Lua (reliable-queues-lua: one
list, the consumer's script rotates the tail to the head marking it
'<id>*<unixtime>', a timed-out item is re-stamped by a second script,
done items leave with LREM)."""

import threading
import uuid

import pytest
import redis

from tests.harness import wait_for
from tests.server.conftest import REDIS_SERVER


class Rfq:
    """The rfq protocol, as its README writes it, with redis-py."""

    def __init__(self, client, topic):
        self.r = client
        self.prefix = f"rfq:{topic}:"
        self.backlog = self.prefix + "backlog"
        self.nextlog = self.prefix + "nextlog"

    def publish(self, message, msg_id):
        with self.r.pipeline(transaction=True) as pipe:  # MULTI HSET LPUSH EXEC
            pipe.hset(self.prefix + "message:" + msg_id, mapping=message)
            pipe.lpush(self.backlog, msg_id)
            pipe.execute()
        return msg_id

    def consume(self):
        msg_id = self.r.rpoplpush(self.backlog, self.nextlog)
        if msg_id is None:
            return None, None
        msg_id = msg_id.decode()
        return msg_id, self.r.hgetall(self.prefix + "message:" + msg_id)

    def commit(self, msg_id):
        with self.r.pipeline(transaction=True) as pipe:  # MULTI LREM DEL EXEC
            pipe.lrem(self.nextlog, 0, msg_id)
            pipe.delete(self.prefix + "message:" + msg_id)
            pipe.execute()

    def harvest(self, interfere=None):
        """Every message in the nextlog back to the backlog, atomically:
        WATCH nextlog, read it, MULTI, move, EXEC (retried on a conflict)."""
        def move(pipe):
            items = pipe.lrange(self.nextlog, 0, -1)
            if interfere is not None:
                interfere()
            pipe.multi()
            for item in items:
                pipe.lpush(self.backlog, item)
                pipe.lrem(self.nextlog, 0, item)
            return items
        return self.r.transaction(move, self.nextlog, value_from_callable=True)


def rfq_flow(client):
    client.flushall()
    q = Rfq(client, "ndvi")
    ids = [uuid.UUID(int=i).hex for i in range(1, 6)]
    for i, msg_id in enumerate(ids):
        q.publish({"v": "1", "op": f"tile{i}"}, msg_id)
    log = [("backlog", client.lrange(q.backlog, 0, -1))]
    got = [q.consume() for _ in range(3)]
    log.append(("consumed", got))
    q.commit(got[0][0])  # consumer 1 commits; 2 and 3 crash
    log.append(("nextlog", client.lrange(q.nextlog, 0, -1)))
    other = redis.Redis(port=client.connection_pool.connection_kwargs["port"])
    touched = []

    def interfere():  # once: another consumer takes a message meanwhile
        if not touched:
            touched.append(other.rpoplpush(q.backlog, q.nextlog))
    log.append(("harvested", q.harvest(interfere)))
    log.append(("touched", touched))
    log.append(("after", client.lrange(q.backlog, 0, -1), client.lrange(q.nextlog, 0, -1)))
    while True:
        msg_id, message = q.consume()
        if msg_id is None:
            break
        q.commit(msg_id)
        log.append(("done", msg_id, message))
    log.append(("keys", sorted(client.keys("*"))))
    return log


CONSUME = """
local item = redis.call('rpop', KEYS[1])
if not item then return false end
if not string.find(item, '*', 1, true) then
  item = item .. '*' .. ARGV[1]
end
redis.call('lpush', KEYS[1], item)
return item
"""
RESTAMP = """
local removed = redis.call('lrem', KEYS[1], 1, ARGV[1])
if removed == 0 then return false end
local new = string.match(ARGV[1], '^[^*]+') .. '*' .. ARGV[2]
redis.call('lpush', KEYS[1], new)
return new
"""


def circular_queue_flow(client):
    """Producers LPUSH ids; consumers run the rotation script with their
    'now'; an item stamped more than 10 s ago is re-stamped; done -> LREM."""
    client.flushall()
    consume = client.register_script(CONSUME)
    restamp = client.register_script(RESTAMP)
    for i in range(1, 6):
        client.lpush("queue", str(i))
    log = []
    processing = {}
    now = 1332014784
    for _ in range(3):  # three workers take 1, 2, 3; worker of 2 dies
        item = consume(keys=["queue"], args=[now]).decode()
        processing[item] = now
        log.append(("got", item))
    client.lrem("queue", 1, "1*%d" % now)  # 1 done
    client.lrem("queue", 1, "3*%d" % now)  # 3 done
    now += 5
    seen = []
    for _ in range(4):  # a full turn: 4, 5 fresh; 2 stamped and young
        item = consume(keys=["queue"], args=[now]).decode()
        seen.append(item)
        if "*" in item and now - int(item.split("*")[1]) < 10:
            continue  # still being processed: skip it
        client.lrem("queue", 1, item)  # processed
    log.append(("turn", seen))
    now += 20  # 2 timed out: re-stamped by the second script, then processed
    item = consume(keys=["queue"], args=[now]).decode()
    new = restamp(keys=["queue"], args=[item, now])
    log.append(("restamped", item, new))
    client.lrem("queue", 1, new)
    log.append(("left", client.lrange("queue", 0, -1), client.exists("queue")))
    log.append(("evalsha", client.evalsha(consume.sha, 1, "queue", now)))
    return log


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not installed")
@pytest.mark.parametrize("flow", [rfq_flow, circular_queue_flow], ids=["rfq", "circular"])
@pytest.mark.parametrize("proto", [2, 3])
def test_same_results_as_redis(shared, redis_port, flow, proto):
    mine = flow(shared.client(protocol=proto))
    theirs = flow(redis.Redis(port=redis_port, protocol=proto))
    assert mine == theirs
    assert mine[-1][0] in ("keys", "evalsha")


def rfq_under_load(connect):
    """4 consumers (half of them crash before commit of every 5th message)
    and a harvester looping under WATCH, until every message is committed
    and both lists are empty in one MULTI read. Returns (committed ids,
    published ids, whether the queues drained). They run until that state,
    not until the last commit: a crashed duplicate of a committed message
    still waits in the nextlog then, and a harvest begun before the last
    commit moves it back after it (redis-server does the same)."""
    c = connect()
    c.flushall()
    q = Rfq(c, "load")
    ids = [uuid.uuid1().hex for _ in range(300)]
    for i, msg_id in enumerate(ids):
        q.publish({"n": str(i)}, msg_id)
    committed = []
    stop = threading.Event()

    def consumer(k):
        mine = Rfq(connect(), "load")
        n = 0
        while not stop.is_set():
            msg_id, _ = mine.consume()
            if msg_id is None:
                continue
            n += 1
            if k % 2 and n % 5 == 0:
                continue  # "crashes": never commits; the harvester brings it back
            mine.commit(msg_id)
            committed.append(msg_id)

    def harvester():
        mine = Rfq(connect(), "load")
        while not stop.is_set():
            mine.harvest()

    def drained():
        with c.pipeline(transaction=True) as pipe:
            pipe.llen(q.backlog)
            pipe.llen(q.nextlog)
            return pipe.execute() == [0, 0] and set(committed) == set(ids)

    threads = [threading.Thread(target=consumer, args=(k,)) for k in range(4)]
    threads.append(threading.Thread(target=harvester))
    for t in threads:
        t.start()
    try:
        wait_for(drained, timeout=60, message="all committed, both lists empty")
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    return set(committed), set(ids), drained()


def test_rfq_concurrent_consumers_and_harvester(shared):
    """Every message is committed (at least once: a message harvested while
    its consumer was about to commit goes round again, as rfq says), and
    once drained the lists stay empty: nothing comes back after the end."""
    committed, ids, still_drained = rfq_under_load(shared.client)
    assert committed == ids and still_drained
    assert not [k for k in shared.client().keys("rfq:load:*")]


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not installed")
def test_rfq_under_load_ends_the_same_on_redis(redis_port):
    """The same run against redis-server: the test's ending holds there."""
    committed, ids, still_drained = rfq_under_load(lambda: redis.Redis(port=redis_port))
    assert committed == ids and still_drained
