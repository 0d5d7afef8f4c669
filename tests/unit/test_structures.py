"""The two ordered structures behind the hot path, against plain reference
models under random operations: Deadlines (lanes + millisecond buckets) and a
queue's JobList (a list while short, a deque while long, until it must be
sorted)."""

import random

import pytest

from trisque.core.jobs.deadlines import MAX_LANES, Deadlines, Scheduled
from trisque.core.jobs.job import ACTIVE, CTIME_EPOCH, Job
from collections import deque

from trisque.core.jobs.queue import SMALL_FIFO, SMALL_LIST, JobList

from .test_deadlines import Item, JobItem, check as check_deadlines  # (what both read)


@pytest.mark.parametrize("seed", range(12))
def test_deadlines_match_a_reference_model(seed):
    rng = random.Random(seed)
    deadlines = Deadlines()
    model = {}  # item -> wake_ms
    items = [Item(f"i{n}") for n in range(300)]
    now = 1000
    streams = [0, 0, 0]  # monotonic producers, as TTL and RETRY deadlines are
    for step in range(6000):
        op = rng.random()
        item = rng.choice(items)
        if op < 0.45:
            k = rng.randrange(len(streams))
            streams[k] = max(streams[k], now) + rng.randrange(3)
            wake = streams[k] + 500 * (k + 1)
            if rng.random() < 0.2:
                wake = now + rng.randrange(2000)  # out of order
            deadlines.set(item, wake)
            model[item] = wake
        elif op < 0.7:
            deadlines.cancel(item)
            model.pop(item, None)
            assert item.wake_ms is None
        else:
            now += rng.randrange(40)
            limit = rng.choice([1, 3, 1000])
            due = deadlines.pop_due(now, limit)
            expected = sorted((w, id(i)) for i, w in model.items() if w <= now)
            assert len(due) == min(limit, len(expected))
            keys = [model[i] for i in due]
            assert keys == sorted(keys)
            assert all(k <= now for k in keys)
            # nothing left behind is earlier than what came out
            if due:
                rest = [w for i, w in model.items() if i not in due]
                assert not rest or min(rest) >= keys[-1]
            for i in due:
                assert i.wake_ms is None
                del model[i]
        for i, w in model.items():
            assert i.wake_ms == w
        check_deadlines(deadlines, model)
    assert len(deadlines._lanes) <= MAX_LANES


def test_deadlines_free_removed_items_at_once():
    deadlines = Deadlines()
    items = [Item(n) for n in range(5000)]
    for n, item in enumerate(items):
        deadlines.set(item, 10_000 + n // 10)
    for item in items[100:4900]:  # from the middle, as out-of-order acks
        deadlines.cancel(item)
    lane = deadlines._lanes[0]
    live = [i for i in lane.items[lane.head:] if isinstance(i, Item)]
    assert len(live) == 200
    assert len(lane.items) < 1000  # holes were squeezed out
    assert not [i for i in lane.items if isinstance(i, Item) and i not in live]
    assert [i.name for i in deadlines.pop_due(10**9, 10**6)] == (
        list(range(100)) + list(range(4900, 5000)))
    assert len(deadlines) == 0 and deadlines.next_ms() is None


class Waiter(Scheduled):
    """A deadline that is no job (a blocked client): no creation time."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name
        self.wake_ms = None


@pytest.mark.parametrize("seed", range(6))
def test_deadlines_find_jobs_by_creation_time_and_the_rest_by_deadline(seed):
    # Jobs fetched in creation order share deadlines (same millisecond) and
    # are cancelled in any order, as acks from many clients; a ctime bisect
    # finds them.  Waiters with deadlines in the same range, jobs appended
    # out of creation order and reschedules must still be found.
    rng = random.Random(seed)
    deadlines = Deadlines()
    model = {}
    jobs = [JobItem(n, n) for n in range(2000)]
    for job in jobs:
        wake = 5000 + job.name // 40
        deadlines.set(job, wake)
        model[job] = wake
    assert deadlines._lanes[0].by_ctime
    waiters = [Waiter(f"w{n}") for n in range(50)]
    for waiter in waiters:
        wake = rng.randrange(5000, 5040)  # other lanes, within the jobs' range
        deadlines.set(waiter, wake)
        model[waiter] = wake
    victims = rng.sample(jobs, 1200) + rng.sample(waiters, 30)
    rng.shuffle(victims)
    for item in victims:
        if rng.random() < 0.1 and item in jobs:
            wake = rng.randrange(5000, 5040)  # rescheduled instead
            deadlines.set(item, wake)
            model[item] = wake
        else:
            deadlines.cancel(item)
            del model[item]
        assert item.wake_ms == model.get(item)
        check_deadlines(deadlines, model)
    assert deadlines._lanes[0].by_ctime
    due = deadlines.pop_due(10**9, 10**6)
    assert sorted(map(id, due)) == sorted(map(id, model))
    keys = [model[i] for i in due]
    assert keys == sorted(keys)


def job_item(name, ctime):
    """A real Job (what a JobList holds), named by its ID; its ``_ctime``
    is ``ctime``."""
    return Job(str(name).encode(), b"q", b"", ACTIVE, 1, ctime + CTIME_EPOCH, 0, 0, 0)


@pytest.mark.parametrize("seed", range(8))
def test_joblist_matches_a_sorted_model(seed):
    rng = random.Random(seed)
    jobs = JobList()
    model = []
    ctime = 0
    pool = []
    for step in range(4000):
        op = rng.random()
        if op < 0.5 or not model:
            if pool and rng.random() < 0.1:
                job = pool.pop(rng.randrange(len(pool)))  # a requeue: older
            else:
                ctime += 1
                job = job_item(step, ctime)
            jobs.add(job)
            model.append(job)
            model.sort(key=lambda j: j._ctime)
        elif op < 0.75:
            job = jobs.pop(0)
            assert job is model.pop(0)
            pool.append(job)
        elif op < 0.9:
            job = rng.choice(model)
            jobs.remove(job)
            model.remove(job)
            pool.append(job)
        else:
            with pytest.raises(ValueError):
                jobs.remove(job_item("absent", -1))
        assert len(jobs) == len(model)
        assert bool(jobs) == bool(model)
        if step % 50 == 0:
            assert list(jobs) == model
            assert list(reversed(jobs)) == model[::-1]
            for count in (1, 3, len(model), len(model) + 2):
                assert jobs[:count] == model[:count]
                assert jobs[-count:] == model[-count:]
            if model:
                assert jobs[0] is model[0] and jobs[-1] is model[-1]


def test_joblist_stays_a_deque_in_fifo_use_and_sorts_when_it_must():
    jobs = JobList()
    items = [job_item(n, n) for n in range(SMALL_FIFO + 10)]
    for item in items:
        jobs.add(item)
    assert jobs._sorted is None
    jobs.remove(items[0])  # the head: still a deque
    assert jobs.pop(0) is items[1]
    assert jobs._sorted is None
    jobs.remove(items[500])  # the middle of a long queue: sorted from now on
    assert jobs._sorted is not None
    jobs.add(items[0])  # older than all: goes first
    assert jobs[0] is items[0]
    while jobs:
        jobs.pop(0)
    assert jobs._sorted is None  # empty: back to a deque
    jobs.add(items[5])
    jobs.add(items[3])  # out of order
    assert list(jobs) == [items[3], items[5]]


def test_joblist_is_a_list_while_short_a_deque_while_long():
    jobs = JobList()
    items = [job_item(n, n) for n in range(SMALL_LIST + 2)]
    for item in items[:SMALL_LIST]:
        jobs.add(item)
    assert jobs._fifo.__class__ is list  # a one-job queue costs 56 bytes, not 760
    jobs.add(items[SMALL_LIST])
    assert jobs._fifo.__class__ is deque
    assert list(jobs) == items[:SMALL_LIST + 1]
    assert jobs[1:3] == items[1:3] and jobs[-1] is items[SMALL_LIST]
    assert jobs.pop(-1) is items[SMALL_LIST]
    jobs.remove(items[3])
    while len(jobs) > 1:
        jobs.pop(0)
    assert jobs._fifo.__class__ is deque  # no flapping at the boundary
    assert jobs.pop(0) is items[-3]
    assert jobs._fifo.__class__ is list  # drained: small again
    jobs.add(items[0])
    jobs.remove(items[0])
    assert not jobs and jobs._fifo.__class__ is list


@pytest.mark.parametrize("seed", range(6))
def test_joblist_around_the_small_size_matches_a_sorted_model(seed):
    """Sizes around SMALL_LIST, so the FIFO changes form often, with every
    kind of removal (head, tail, middle) on both forms."""
    rng = random.Random(seed)
    jobs = JobList()
    model = []
    ctime = 0
    target = SMALL_LIST
    for step in range(3000):
        if step % 200 == 0:
            target = rng.choice((0, 3, SMALL_LIST, SMALL_LIST + 5, 2 * SMALL_LIST))
        if len(model) < target or not model or rng.random() < 0.3:
            ctime += 1
            job = job_item(step, ctime)
            jobs.add(job)
            model.append(job)
        else:
            index = rng.choice((0, 0, 0, -1, rng.randrange(len(model))))
            if rng.random() < 0.5:
                assert jobs.pop(index) is model.pop(index)
            else:
                job = model.pop(index)
                jobs.remove(job)
        assert len(jobs) == len(model)
        if step % 7 == 0:
            assert list(jobs) == model
            assert list(reversed(jobs)) == model[::-1]
            assert jobs[1:-1] == model[1:-1] and jobs[::2] == model[::2]
            if model:
                assert jobs[0] is model[0] and jobs[-1] is model[-1]
        if not model:
            assert jobs._fifo.__class__ is list


@pytest.mark.parametrize("size", (5, SMALL_LIST + 5, SMALL_FIFO + 5))
def test_joblist_keeps_its_tail_through_removals(size):
    """A list, a short deque, a long one: once its newest job leaves (pop
    from the tail, remove), a job between the new newest and the one gone
    still joins the FIFO at its tail; one older than the newest sorts."""
    items = [job_item(n, 10 * n) for n in range(size)]
    for take in ("pop", "remove"):
        jobs = JobList()
        for item in items:
            jobs.add(item)
        gone = jobs.pop(-1) if take == "pop" else items[-1]
        if take == "remove":
            jobs.remove(gone)
        assert gone is items[-1] and jobs._sorted is None
        between = job_item("between", 10 * (size - 1) - 5)
        jobs.add(between)
        assert jobs._sorted is None  # no sort: it is the newest
        assert list(jobs) == items[:-1] + [between]
        jobs.remove(between)
        older = job_item("older", 10 * (size - 2) - 5)
        jobs.add(older)
        assert list(jobs) == items[:-2] + [older, items[-2]]
