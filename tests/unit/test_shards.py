"""Dicts in shards (core/jobs/shards.py) under the deadlines' buckets and
the idempotency index: the dict operations agree with a plain dict's;
consecutive milliseconds spread over every shard; and across the shards'
growth no deadline is lost or comes out of order, and no idempotency key
is forgotten."""

import random

from trisque.core.jobs import idempotency
from tests.unit.test_deadlines import Item, JobItem, take_every_lane
from trisque.core.jobs.deadlines import MAX_LANES, Deadlines
from trisque.core.jobs.shards import SHARDS, ShardedDict


def test_sharded_dict_agrees_with_a_dict():
    rng = random.Random(2)
    sharded = ShardedDict()
    model = {}
    keys = [rng.randrange(-10**13, 10**13) for _ in range(300)] + list(range(1000))
    keys += [(b"q%d" % n, b"key%d" % n) for n in range(300)]
    for step in range(20_000):
        key = rng.choice(keys)
        op = rng.random()
        if op < 0.5:
            sharded[key] = model[key] = step
        elif op < 0.8:
            if key in model:
                del sharded[key]
                del model[key]
            assert key not in sharded
        else:
            assert sharded.get(key) == model.get(key)
            assert (key in sharded) == (key in model)
            if key in model:
                assert sharded[key] == model[key]
        assert len(sharded) == len(model) and bool(sharded) == bool(model)
    assert sorted(map(repr, sharded)) == sorted(map(repr, model))
    assert dict(sharded.items()) == model
    assert sorted(sharded.values()) == sorted(model.values())
    assert sum(len(shard) for shard in sharded.shards) == len(model)


def test_consecutive_milliseconds_spread_over_every_shard():
    # A replica's bucket keys: one a millisecond over RETRY's span.  Every
    # shard takes its share, so none is the one big dict of before.
    sharded = ShardedDict()
    start = 1_700_000_000_000
    for ms in range(start, start + 100 * SHARDS):
        sharded[ms] = ms
    assert len(sharded.shards) == SHARDS
    assert {len(shard) for shard in sharded.shards} == {100}
    # and a shard's keys differ in their low bits (its table's index)
    for shard in sharded.shards[:8]:
        assert len({key & 255 for key in shard}) > 50


def check_lanes(deadlines):
    for lane in deadlines._lanes:
        assert lane.first_ms == lane.items[lane.head].wake_ms
    if deadlines._buckets:  # the heap's top is a live bucket's
        assert deadlines._keys[0] in deadlines._buckets
        assert deadlines._keys[0] == min(deadlines._buckets)


def test_deadlines_keep_their_order_across_the_buckets_growth():
    """A replica's jittered requeue deadlines over 150k milliseconds
    (every shard's dict grows through several sizes), a third cancelled
    in any order, some moved: every deadline left comes out once, in
    order, when due, never before."""
    rng = random.Random(7)
    deadlines = Deadlines()
    model = {}
    take_every_lane(deadlines, model, 10**13)  # the jittered ones go to buckets
    now = 1_700_000_000_000
    jobs = []
    for n in range(150_000):
        job = JobItem(n, n)
        wake = now + n + 300_000 + rng.randrange(-250, 250)
        deadlines.set(job, wake)
        model[job] = wake
        jobs.append(job)
        if n % 3 == 0:
            gone = jobs.pop(rng.randrange(len(jobs)))
            deadlines.cancel(gone)
            del model[gone]
        if n % 7 == 1:
            moved = rng.choice(jobs)
            wake = now + n + 300_000 + rng.randrange(-250, 250)
            deadlines.set(moved, wake)
            model[moved] = wake
        if n % 5000 == 0:
            check_lanes(deadlines)
            assert deadlines.next_ms() == min(model.values())
    assert len(deadlines._buckets) > 60_000  # ~240 a shard: each grew through 5 sizes
    assert len(deadlines) == len(model)
    clock = now + 299_000
    last = 0
    rounds = 0
    while len(model) > MAX_LANES:
        rounds += 1
        clock += rng.randrange(1, 400)
        due = deadlines.pop_due(clock, rng.choice([5, 100, 10**6]))
        wakes = [model.pop(item) for item in due]
        assert wakes == sorted(wakes)
        assert not wakes or (last <= wakes[0] and wakes[-1] <= clock)
        assert all(item.wake_ms is None for item in due)
        if wakes:
            last = wakes[-1]
        if rounds % 25 == 0 or len(model) <= MAX_LANES:
            early = min(model.values())
            assert early > clock or len(due) in (5, 100)  # nothing due left behind
            assert deadlines.next_ms() == early
            check_lanes(deadlines)
    assert len(deadlines) == MAX_LANES and not deadlines._buckets


def test_emptied_buckets_at_the_top_leave_the_heap_at_once():
    """Buckets emptied by removals (jobs acked before their requeue) while
    later ones stay: the heap's top is always a live bucket's, so next_ms
    and pop_due read it without a lookup."""
    rng = random.Random(11)
    deadlines = Deadlines()
    for n in range(MAX_LANES):
        deadlines.set(Item(f"f{n}"), 10**13 - n)
    items = [Item(n) for n in range(3000)]
    model = {}
    for item in items:
        wake = rng.randrange(10_000, 20_000)
        deadlines.set(item, wake)
        model[item] = wake
    # the earliest go first, then any: each removal may empty the top bucket
    for item in sorted(items, key=lambda i: model[i])[:1000] + rng.sample(items, 1500):
        if item in model:
            deadlines.cancel(item)
            del model[item]
            check_lanes(deadlines)
            assert deadlines.next_ms() == min(model.values())
    due = deadlines.pop_due(20_000, 10**6)
    assert [i.wake_ms for i in due] == [None] * len(due)
    assert sorted(map(id, due)) == sorted(map(id, model))


def test_idempotency_keys_all_found_across_the_index_growth():
    index = idempotency.IdempotencyIndex()
    n = 60_000
    for i in range(n):
        assert index.add_live(b"q%d" % (i % 7), b"order-%d" % i, b"id%d" % i) > 0
    assert len(index) == n
    for i in range(0, n, 2):  # half complete: tombstones until their TTL
        assert index.retire(b"q%d" % (i % 7), b"order-%d" % i, b"id%d" % i, 1000 + i) == 0
    assert len(index.live) == len(index.gone) == n // 2
    for i in range(n):
        assert index.find(b"q%d" % (i % 7), b"order-%d" % i, 999) == b"id%d" % i
        assert index.find(b"q%d" % ((i + 1) % 7), b"order-%d" % i, 999) is None
    assert sorted(t[3] for t in index.tombstones()) == list(range(1000, 1000 + n, 2))
    assert index.expire(999 + n // 2) < 0  # the first half of the tombstones
    assert len(index.gone) == n // 4
    assert index.find(b"q0", b"order-0", 1000 + n // 2) is None
    assert index.find(b"q%d" % ((n - 2) % 7), b"order-%d" % (n - 2), 0) == b"id%d" % (n - 2)
