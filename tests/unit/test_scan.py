"""The scan cursor (core/jobs/scan.py) on plain dicts: every element
present for the whole scan is returned, with deletions and additions in
between, with and without snapshots, and O(COUNT) work per call."""

import random

import pytest

from trisque.core.jobs import scan as scan_module
from trisque.core.jobs.scan import scan


class Tracked(dict):
    """A dict that counts how many entries iteration walked."""

    walked = 0

    def values(self):
        for value in super().values():
            Tracked.walked += 1
            yield value


def full_scan(mapping, deletions_ref, count, mutate=None, rng=None):
    cursor, seen, calls = 0, [], 0
    while True:
        cursor, found = scan(mapping, cursor, count, False, lambda v: True,
                             deletions_ref[0])
        seen += found
        calls += 1
        assert calls < 100000
        if mutate:
            mutate()
        if cursor == 0:
            return seen, calls


@pytest.mark.parametrize("size", [10, 999, 1001, 5000])
@pytest.mark.parametrize("count", [1, 7, 100])
def test_every_survivor_returned_with_churn(size, count):
    rng = random.Random(size * 31 + count)
    mapping = {b"k%06d" % i: b"k%06d" % i for i in range(size)}
    deletions = [0]
    original = set(mapping)
    removed = set()
    added = [0]

    live = list(mapping)

    def mutate():
        for _ in range(min(3, len(live))):
            i = rng.randrange(len(live))
            live[i], live[-1] = live[-1], live[i]
            key = live.pop()
            del mapping[key]
            deletions[0] += 1
            removed.add(key)
        for _ in range(2):
            key = b"new%06d" % added[0]
            added[0] += 1
            mapping[key] = key
            live.append(key)

    seen, calls = full_scan(mapping, deletions, count, mutate)
    assert original - removed <= set(seen)  # never skipped
    assert all(k in original or k.startswith(b"new") for k in seen)


def test_snapshot_makes_each_call_cheap():
    mapping = Tracked((i, i) for i in range(50000))
    Tracked.walked = 0
    seen, calls = full_scan(mapping, [0], 100)
    assert sorted(seen) == list(range(50000))
    # values() is never walked: the snapshot is sliced, O(COUNT) per call
    assert Tracked.walked == 0
    assert calls == 500


def test_finished_scan_drops_its_snapshot():
    before = len(scan_module._snapshots)
    mapping = {i: i for i in range(5000)}
    full_scan(mapping, [0], 1000)
    assert len(scan_module._snapshots) == before


def test_evicted_snapshot_falls_back_without_skipping():
    mapping = {i: i for i in range(5000)}
    deletions = [0]
    cursor, first = scan(mapping, 0, 100, False, lambda v: True, 0)
    assert cursor >> 52  # a snapshot cursor
    # other scans push ours out of the LRU
    others = [{i: i for i in range(20)} for _ in range(scan_module.MAX_SNAPSHOTS + 1)]
    for other in others:
        scan(other, 0, 10, False, lambda v: True, 0)
    # meanwhile elements before and after the position are deleted
    for key in list(mapping)[:50] + list(mapping)[4000:4010]:
        del mapping[key]
        deletions[0] += 1
    seen = list(first)
    while cursor:
        cursor, found = scan(mapping, cursor, 100, False, lambda v: True, deletions[0])
        assert cursor >> 52 == 0 or cursor == 0  # now a plain dict cursor
        seen += found
    assert set(mapping) <= set(seen)


def test_reused_snapshot_id_is_not_trusted():
    mapping = {i: i for i in range(3000)}
    cursor, first = scan(mapping, 0, 100, False, lambda v: True, 0)
    snap_id = cursor >> 52
    # forge the same snapshot id with other deletion bits
    forged = (snap_id << 52) | (5 << 32) | (cursor & 0xFFFFFFFF)
    _, found = scan(mapping, forged, 100, False, lambda v: True, 5)
    assert len(found) == 100  # served from the dict, not the snapshot


def test_busyloop_and_negative_count_return_everything_at_once():
    mapping = {i: i for i in range(3000)}
    assert scan(mapping, 0, 10, True, lambda v: True, 0) == (0, list(range(3000)))
    assert scan(mapping, 0, -1, False, lambda v: True, 0) == (0, list(range(3000)))


def test_cursor_fits_64_bits():
    mapping = {i: i for i in range(5000)}
    cursor = 0
    for _ in range(5000):
        cursor, _ = scan(mapping, cursor, 3, False, lambda v: True, 2**40)
        assert 0 <= cursor < 2**64
        if not cursor:
            break
