"""Deadlines with jittered deadlines (a replica's requeue times, RETRY from
now +-250 ms): they arrive out of order, fill every lane and then go to
the buckets keyed by millisecond.  Checked against a plain model under
random operations, and at a million pending deadlines."""

import random
import time

import pytest

from trisque.core.jobs.deadlines import (
    MAX_LANES, SLOT_BITS, STALE_MIN, Deadlines, Ordered, Scheduled)


class Item(Scheduled):
    """A deadline and nothing else (as a blocked client or a pending reply)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name
        self.wake_ms = None

    def __repr__(self):
        return f"<{self.name} {self.wake_ms}>"


class JobItem(Ordered):
    """A deadline and a creation time, as a job: lanes bisect these."""

    __slots__ = ("name",)

    def __init__(self, name, ctime):
        self.name = name
        self.wake_ms = None
        self._ctime = ctime

    def __repr__(self):
        return f"<{self.name} {self.wake_ms} c{self._ctime}>"


def take_every_lane(deadlines, model, far_ms):
    """Fill every lane with a far deadline of its own (``far_ms`` down):
    the deadlines set after it go to the buckets."""
    for n in range(MAX_LANES):
        far = Item(f"far{n}")
        deadlines.set(far, far_ms - n)
        model[far] = far_ms - n


def check(deadlines, model):
    assert len(deadlines) == len(model)
    assert deadlines.next_ms() == (min(model.values()) if model else None)
    for item, wake in model.items():
        assert item.wake_ms == wake
    check_lanes(deadlines)
    check_calendar(deadlines)


def check_lanes(deadlines):
    """Each lane's head is live, its first_ms the head's deadline, its tail
    its last entry's, its live entries in deadline order; lanes latest tail
    first."""
    tails = []
    for lane in deadlines._lanes:
        live = lane.items[lane.head:]
        assert live and live[0] is not None and lane.first_ms == live[0].wake_ms
        assert all(item is not None for item in live)
        assert lane.tail == live[-1].wake_ms
        wakes = [item.wake_ms for item in live]
        assert wakes == sorted(wakes)
        tails.append(lane.tail)
    assert tails == sorted(tails, reverse=True)


def check_calendar(deadlines):
    """Every live bucket has its key in its slot's heap, every slot with a
    live bucket its number in the slots' heap; the top is the earliest
    bucket's; stale keys and slots stay bounded."""
    buckets = list(deadlines._buckets)
    slots = dict(deadlines._slots.items())
    assert sorted(slots) == sorted({k >> SLOT_BITS for k in buckets})
    assert set(slots) <= set(deadlines._slot_heap)
    assert len(deadlines._slot_heap) <= 2 * len(slots) + STALE_MIN + 1
    for no, slot in slots.items():
        mine = [k for k in buckets if k >> SLOT_BITS == no]
        assert slot.live == set(mine)
        assert set(mine) <= set(slot.keys)
        assert all(k >> SLOT_BITS == no for k in slot.keys)
        assert len(slot.keys) <= 2 * len(slot.live) + STALE_MIN + 1
    if buckets:
        assert deadlines._keys is deadlines._top.keys
        assert deadlines._keys[0] == min(buckets)
        assert deadlines._top is slots[min(buckets) >> SLOT_BITS]


def pop_and_check(deadlines, model, now, limit):
    due = deadlines.pop_due(now, limit)
    expected = [w for w in model.values() if w <= now]
    assert len(due) == min(limit, len(expected))
    keys = [model[i] for i in due]
    assert keys == sorted(keys)
    if due:
        assert keys[-1] <= now
        left = [w for i, w in model.items() if i.wake_ms is not None]
        assert not left or min(left) >= keys[-1]
    for item in due:
        assert item.wake_ms is None
        del model[item]
    return due


@pytest.mark.parametrize("seed", range(12))
def test_jittered_deadlines_match_a_reference_model(seed):
    rng = random.Random(seed)
    deadlines = Deadlines()
    model = {}
    # jobs (with a creation time, in creation order) and waiters (none)
    items = [JobItem(f"j{n}", n) for n in range(1500)] + [Item(f"w{n}") for n in range(60)]
    now = 10_000
    retry = rng.choice([50, 300, 3000])
    most_buckets = 0
    if seed % 2:  # every lane taken at once: all but later deadlines go to buckets
        for n in range(MAX_LANES):
            far = Item(f"far{n}")
            deadlines.set(far, 10**9 - n)
            model[far] = 10**9 - n
    for step in range(5000):
        op = rng.random()
        item = rng.choice(items)
        if op < 0.6:
            if rng.random() < 0.15:
                wake = now + 5 * retry  # an expiry: an ordered stream
            else:
                wake = now + retry + rng.randrange(-250, 250)  # jittered requeue
            deadlines.set(item, wake)
            model[item] = wake
        elif op < 0.8:
            deadlines.cancel(item)
            model.pop(item, None)
            assert item.wake_ms is None
        elif op < 0.83:
            # many due in the same ms, cut by a small limit
            pop_and_check(deadlines, model, now, rng.choice([1, 2, 5]))
        else:
            now += rng.randrange(0, 20)
            pop_and_check(deadlines, model, now, rng.choice([1, 3, 50, 10**6]))
        if step % 10 == 0:
            check(deadlines, model)
        else:
            assert len(deadlines) == len(model) and item.wake_ms == model.get(item)
        most_buckets = max(most_buckets, len(deadlines._buckets))
    assert len(deadlines._lanes) <= MAX_LANES
    assert most_buckets > (40 if seed % 2 else 10), "the jittered deadlines never reached the buckets"
    pop_and_check(deadlines, model, 10**12, 10**7)
    assert not model and len(deadlines) == 0 and deadlines.next_ms() is None
    assert not deadlines._buckets and not deadlines._lanes


def test_a_bucket_holds_every_item_due_in_its_millisecond():
    deadlines = Deadlines()
    fill = [Item(f"f{n}") for n in range(MAX_LANES)]
    for n, item in enumerate(fill):  # every lane taken, tails late
        deadlines.set(item, 100_000 - n)
    same = [JobItem(n, n) for n in range(50)]
    for item in same:
        deadlines.set(item, 5000)
    assert len(deadlines._buckets[5000]) == 50
    for item in same[10:40]:  # found by creation time, then shifted out
        deadlines.cancel(item)
    deadlines.cancel(same[0])
    assert deadlines.pop_due(4999, 100) == []
    first = deadlines.pop_due(5000, 7)
    assert [i.name for i in first] == list(range(1, 8))
    rest = deadlines.pop_due(5000, 100)
    assert [i.name for i in rest] == [8, 9] + list(range(40, 50))
    assert 5000 not in deadlines._buckets
    assert deadlines.next_ms() == 100_000 - MAX_LANES + 1
    assert len(deadlines) == MAX_LANES


def test_removed_buckets_leave_no_lasting_keys():
    # Every deadline in a millisecond of its own, then cancelled (acked
    # long before their requeue): the heap is rebuilt, not left to grow.
    deadlines = Deadlines()
    for n in range(MAX_LANES):
        deadlines.set(Item(f"f{n}"), 10**9 - n)
    rng = random.Random(5)
    live = []
    for n in range(20_000):
        item = Item(n)
        deadlines.set(item, rng.randrange(10**6))
        live.append(item)
        if len(live) > 100:
            deadlines.cancel(live.pop(rng.randrange(len(live))))
        if n % 97 == 0:  # (slots empty at random: the slots' heap is rebuilt)
            check_calendar(deadlines)
    assert len(deadlines._buckets) <= 100
    check_calendar(deadlines)
    due = deadlines.pop_due(10**6, 10**6)
    assert sorted(map(id, due)) == sorted(map(id, live))
    assert [i.wake_ms for i in due] == [None] * len(due)


def test_a_million_jittered_deadlines_stay_fast():
    # A replica holding a million jobs copied at 40 a millisecond, each
    # due RETRY later +-250 ms; a third acked (cancelled) in any order,
    # then everything comes due.  Every operation stays O(log n): the
    # whole test takes a few seconds (quadratic work would take hours).
    rng = random.Random(1)
    n = 1_000_000
    jitter = rng.choices(range(-250, 250), k=n)
    items = [JobItem(i, i) for i in range(n)]
    deadlines = Deadlines()
    start = time.process_time()
    for i, item in enumerate(items):
        deadlines.set(item, 300_000 + i // 40 + jitter[i])
    cancelled = rng.sample(items, n // 3)
    for item in cancelled:
        deadlines.cancel(item)
    assert len(deadlines) == n - len(cancelled)
    assert len(deadlines._buckets) < 30_000  # 40 a millisecond share one
    count = 0
    last = 0
    now = 299_000
    while len(deadlines):
        now += 100
        due = deadlines.pop_due(now, 10_000)
        for item in due:
            assert last <= item.name // 40 + 300_000 + jitter[item.name] <= now
        if due:
            last = max(last, 300_000 + due[-1].name // 40 + jitter[due[-1].name])
        count += len(due)
    elapsed = time.process_time() - start
    assert count == n - len(cancelled)
    assert all(item.wake_ms is None for item in items)
    assert elapsed < 60, elapsed


def test_jobs_leaving_the_middle_of_a_long_lane_in_order():
    """A short queue's jobs expire behind a long queue's in one lane; taken
    one after another they leave holes found next to the last one (with
    other jobs between them, and a compaction on the way), and the lane
    still gives back exactly the rest, in order."""
    deadlines = Deadlines()
    model = {}
    jobs = [JobItem(f"j{n}", n) for n in range(3000)]
    for job in jobs:  # created in order, same TTL: one lane, by creation time
        deadlines.set(job, 1_000_000 + job._ctime)
        model[job] = 1_000_000 + job._ctime
    assert len(deadlines._lanes) == 1
    lane = deadlines._lanes[0]
    # the "short queue": every third job past the first thousand, taken in
    # order; a few out of order and a few twice (already gone)
    taken = jobs[1000::3]
    order = taken[:50] + taken[60:] + taken[50:60][::-1] + taken[:5]
    for job in order:
        deadlines.cancel(job)
        model.pop(job, None)
        assert job.wake_ms is None
    assert lane.holes or lane.head == 0  # (holes, or squeezed out by a compaction)
    check(deadlines, model)
    due = pop_and_check(deadlines, model, 10**12, 10**6)
    assert [job.name for job in due] == [job.name for job in jobs if job not in set(taken)]
    assert not model and len(deadlines) == 0


def test_a_deadline_removed_as_soon_as_set_gives_its_lane_back():
    """A consumer blocked in GETJOB TIMEOUT on the node where jobs are
    added: each job's requeue deadline is set and removed (acked) before
    the consumer's next timeout is set.  The lane's tail goes back with the
    removed deadline, so the timeouts keep to one lane, and each removal is
    at a lane's head or tail, not a bisection among the other kind.  Now
    and then a job is acked later (a removal from the middle of a lane):
    the model still holds."""
    rng = random.Random(3)
    deadlines = Deadlines()
    model = {}
    consumers = [Item(f"c{n}") for n in range(8)]
    now = 1_000_000
    for c in consumers:  # blocked, oldest first
        deadlines.set(c, now + 100)
        model[c] = now + 100
    late = []  # jobs acked a few cycles after they were served
    for n in range(3000):
        now += rng.randrange(0, 3)
        job = JobItem(f"j{n}", n)
        served = consumers.pop(0)  # the oldest waiter gets the job
        deadlines.cancel(served)
        del model[served]
        deadlines.set(job, now + 300_000 + rng.randrange(-250, 250))  # requeue (jittered)
        model[job] = job.wake_ms
        if n < 2000 or n % 50:
            deadlines.cancel(job)  # ACKJOB
            del model[job]
        else:
            late.append(job)
        if len(late) > 3:
            deadlines.cancel(late[0])
            del model[late.pop(0)]
        deadlines.set(served, now + 100)  # GETJOB blocks again
        model[served] = now + 100
        consumers.append(served)
        for lane in deadlines._lanes:
            assert lane.tail == lane.items[-1].wake_ms
        tails = [lane.tail for lane in deadlines._lanes]
        assert tails == sorted(tails, reverse=True)
        if n == 1999:  # only the consumers' timeouts, in one lane
            assert len(deadlines._lanes) == 1 and not deadlines._buckets
            assert len(deadlines._lanes[0].items) - deadlines._lanes[0].head == 8
        if n % 100 == 0:
            check(deadlines, model)
    check(deadlines, model)
    pop_and_check(deadlines, model, 10**12, 10**6)
    assert not model and len(deadlines) == 0


def test_a_lone_deadline_moved_again_and_again_reuses_its_lane():
    """A replica's lone copy: each WORKING moves its deadline, which
    empties its lane and starts another.  The emptied lane is kept and
    reused, empty: no item of before is still in it, the deadlines come
    out in order, and a clients' lane beside it is not disturbed."""
    deadlines = Deadlines()
    model = {}
    client = Item("client")
    deadlines.set(client, 10_000_000)
    model[client] = 10_000_000
    jobs = [JobItem(f"j{n}", n) for n in range(3)]
    now = 1_000
    for step in range(200):
        now += 7
        job = jobs[step % 3]
        wake = now + (step * 37) % 500  # forward and back, one job at a time
        deadlines.set(job, wake)
        model[job] = wake
        if step % 3 == 2:  # the three leave in turn: lanes empty and start
            for other in jobs:
                deadlines.cancel(other)
                del model[other]
        for lane in deadlines._lanes:
            live = lane.items[lane.head:]
            assert live and all(item is not None for item in live)
            assert lane.tail == live[-1].wake_ms
        spare = deadlines._spare
        # (a lone entry's list is kept for the next lane, emptied: [None])
        assert spare is None or (spare.items in ([], [None]) and spare not in deadlines._lanes)
        check(deadlines, model)
    due = pop_and_check(deadlines, model, 10**12, 10**6)
    assert due[-1] is client and not model and len(deadlines) == 0


def test_a_lone_deadline_moves_in_its_lane_unless_another_fits_it():
    """A job alone in its lane (a replica's copy on WORKING and SETACK),
    moved forward and back, keeps its lane, last (the earliest tail), with
    the new deadline as its head's and tail.  A deadline at or after
    another lane's tail joins that lane instead, as it would have after
    leaving its own."""
    deadlines = Deadlines()
    model = {}
    client = Item("client")
    deadlines.set(client, 5_000)  # a lane of its own, tail 5,000
    model[client] = 5_000
    job = JobItem("j", 1)
    deadlines.set(job, 1_000)  # before the client's tail: a second lane, last
    model[job] = 1_000
    lanes = list(deadlines._lanes)
    assert len(lanes) == 2 and lanes[1].items[lanes[1].head] is job
    for wake in (2_000, 900, 4_999, 3_000):  # moved within its lane, forward and back
        deadlines.set(job, wake)
        model[job] = wake
        assert deadlines._lanes == lanes and deadlines._spare is None
        assert lanes[1].first_ms == lanes[1].tail == wake
        check(deadlines, model)
    other = JobItem("k", 2)  # after the job's tail: joins its lane
    deadlines.set(other, 3_500)
    model[other] = 3_500
    assert lanes[1].items[-1] is other
    deadlines.set(job, 3_200)  # no longer alone: out of its lane, into another or a new one
    model[job] = 3_200
    check(deadlines, model)
    deadlines.cancel(other)
    del model[other]
    check(deadlines, model)
    lone = [lane for lane in deadlines._lanes if lane.items[lane.head] is job]
    assert len(lone) == 1
    deadlines.set(job, 6_000)  # after the client's tail: joins the client's lane
    model[job] = 6_000
    assert len(deadlines._lanes) == 1 and deadlines._lanes[0].items[-1] is job
    check(deadlines, model)
    due = pop_and_check(deadlines, model, 10**6, 10)
    assert due == [client, job] and not model and len(deadlines) == 0


@pytest.mark.parametrize("seed", range(4))
def test_no_deadline_lost_or_out_of_order_across_the_calendars_rebuilds(seed):
    """A replica's stream, jittered (+-250 ms) and acked out of order, long
    enough that buckets empty in every slot: slots' heaps and the heap of
    slots drop their stale keys many times over (and slots empty and come
    back).  Every deadline still comes out once, in order, none before its
    time nor left behind."""
    rng = random.Random(seed)
    deadlines = Deadlines()
    model = {}
    take_every_lane(deadlines, model, 10**12)  # the stream goes to the buckets
    retry = rng.choice([3_000, 20_000])
    live = []
    wakes = {}  # every item's last deadline, kept after it is popped
    popped = 0
    last = 0
    now = 0
    for step in range(30_000):
        now += rng.randrange(0, 3)
        job = JobItem(f"j{step}", step)
        wake = now + retry + rng.randrange(-250, 250)
        deadlines.set(job, wake)
        model[job] = wakes[job] = wake
        live.append(job)
        if rng.random() < 0.7:  # acked, any of the recent ones
            gone = live.pop(rng.randrange(max(0, len(live) - 500), len(live)))
            if gone.wake_ms is not None:
                deadlines.cancel(gone)
                del model[gone]
        if rng.random() < 0.01:  # a burst of moves (WORKING) into an early slot
            for moved in rng.sample(live, min(20, len(live))):
                if moved.wake_ms is not None:
                    wake = now + rng.randrange(0, 2000)
                    deadlines.set(moved, wake)
                    model[moved] = wakes[moved] = wake
        if step % 7 == 0:
            due = pop_and_check(deadlines, model, now, rng.choice([1, 10, 1000]))
            for item in due:  # in order across calls too
                assert last <= wakes[item] <= now
                last = wakes[item]
            popped += len(due)
        if step % 1000 == 0:
            check(deadlines, model)
    check(deadlines, model)
    assert popped > 1000, "the stream never came due"
    pop_and_check(deadlines, model, 10**12, 10**7)
    assert not model and len(deadlines) == 0 and deadlines.next_ms() is None
    assert not deadlines._buckets and not deadlines._slot_heap and not deadlines._slots
