"""The packed list (core/keyspace/lists.py's List: plain ends,
packed nodes in the middle) against a Python list doing the same calls."""

from __future__ import annotations

import random

import pytest

from trisque.core.keyspace.lists import NODE_BYTES, PACK, List, items_size


def _item(rng: random.Random, n: int) -> bytes:
    roll = rng.random()
    if roll < 0.02:
        return b""
    if roll < 0.04:
        return b"B%d" % n * (NODE_BYTES // 4)  # bigger than a node
    return b"%d" % n * rng.randint(1, 4)


def _check(lst: List, model: list[bytes], rng: random.Random) -> None:
    assert len(lst) == len(model)
    assert bool(lst) == bool(model)
    assert list(lst) == model
    assert list(reversed(lst)) == model[::-1]
    assert lst.packed == sum(len(lens) for _, lens in lst.mid)
    if model:
        for _ in range(3):
            i = rng.randrange(-len(model), len(model))
            assert lst[i] == model[i]
        a = rng.randrange(len(model) + 1)
        b = rng.randrange(a, len(model) + 1)
        assert lst.slice(a, b) == model[a:b]


@pytest.mark.parametrize("seed", range(12))
def test_packed_list_is_a_list(seed: int) -> None:
    rng = random.Random(seed)
    lst, model = List(), []
    n = 0
    for step in range(3000):
        n += 1
        op = rng.random()
        if op < 0.25:
            item = _item(rng, n)
            lst.append(item)
            model.append(item)
        elif op < 0.45:
            item = _item(rng, n)
            lst.appendleft(item)
            model.insert(0, item)
        elif op < 0.50:
            items = [_item(rng, n * 1000 + i) for i in range(rng.randint(0, 5 * PACK))]
            lst.extend(items)
            model.extend(items)
        elif op < 0.55:
            items = [_item(rng, n * 1000 + i) for i in range(rng.randint(0, 5 * PACK))]
            lst.extendleft(items)
            model[0:0] = items[::-1]
        elif op < 0.70:
            if model:
                assert lst.pop() == model.pop()
            else:
                with pytest.raises(IndexError):
                    lst.pop()
        elif op < 0.85:
            if model:
                assert lst.popleft() == model.pop(0)
            else:
                with pytest.raises(IndexError):
                    lst.popleft()
        elif op < 0.90 and model:
            i = rng.randrange(-len(model), len(model))
            item = _item(rng, n)
            lst[i] = item
            model[i] = item
        elif op < 0.93:
            i = rng.randint(0, len(model))
            item = _item(rng, n)
            lst.insert(i, item)
            model.insert(i, item)
        elif op < 0.95 and model:
            target = rng.choice(model)
            assert lst.index(target) == model.index(target)
        elif op < 0.96:
            a = rng.randint(0, len(model))
            b = rng.randint(a, len(model))
            kept = lst.slice(a, b)
            lst.replace(kept)
            model = model[a:b]
        if step % 50 == 0:
            _check(lst, model, rng)
    _check(lst, model, rng)
    assert lst == List(model)
    assert List(model).nbytes == items_size(model)


def test_long_list_is_packed() -> None:
    lst = List()
    for i in range(10000):
        lst.append(b"i:%010d" % i)
    assert len(lst.tail) < 2 * PACK and len(lst.head) == 0
    assert lst.packed == 10000 - len(lst.tail)
    assert all(len(data) <= NODE_BYTES for data, _ in lst.mid)
    assert len(lst.mid) < 10000 * 12 // NODE_BYTES + 2
    assert lst[5000] == b"i:%010d" % 5000
    assert [lst.popleft() for _ in range(10000)] == [b"i:%010d" % i for i in range(10000)]
    assert not lst
