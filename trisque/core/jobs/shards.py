"""A dict in SHARDS dicts: a dict grows by copying all of itself into a
table twice its size, a stall as long as the dict is big (milliseconds at
a few 100k keys), and one with deletions copies itself again each time
its free slots run out; a shard's copy is 1/SHARDS of that.  The node's
jobs by ID shard on the ID's own random characters (registry.py);
``ShardedDict`` is for other keys: the deadlines' buckets by millisecond
(deadlines.py), idempotency keys (idempotency.py).
"""

from itertools import chain
from typing import Final, Generic, Iterator, TypeVar

from mypy_extensions import i64

SHARD_BITS: Final = 8
SHARDS: Final = 1 << SHARD_BITS
MASK: Final = SHARDS - 1

K = TypeVar("K")
V = TypeVar("V")


class DictShards(Generic[K, V]):
    """Iteration over dicts in shards, shard by shard (each in its
    insertion order).  A tuple of them, not a list: once its dicts hold
    no tracked object (jobs, ints) the collector stops walking it."""

    shards: tuple[dict[K, V], ...]

    def __iter__(self) -> Iterator[K]:
        return chain.from_iterable(self.shards)

    def values(self) -> Iterator[V]:
        return chain.from_iterable([shard.values() for shard in self.shards])

    def items(self) -> Iterator[tuple[K, V]]:
        return chain.from_iterable([shard.items() for shard in self.shards])


class ShardedDict(DictShards[K, V]):
    """key -> value in SHARDS dicts, the shard from the key's hash (its
    low bits folded with the next ones: consecutive milliseconds spread
    over every shard, and a shard's keys still differ in their low bits,
    which index its table).  ``size`` counted as it goes: ``if`` on it is
    on the deadlines' every call."""

    size: int

    def __init__(self) -> None:
        self.shards = tuple([{} for _ in range(SHARDS)])
        self.size = 0

    def shard(self, key: K) -> dict[K, V]:
        h: i64 = hash(key)
        return self.shards[(h ^ (h >> SHARD_BITS)) & MASK]

    def get(self, key: K) -> V | None:
        return self.shard(key).get(key)

    def __getitem__(self, key: K) -> V:
        return self.shard(key)[key]

    def __setitem__(self, key: K, value: V) -> None:
        shard = self.shard(key)
        before = len(shard)
        shard[key] = value
        self.size += len(shard) - before

    def __delitem__(self, key: K) -> None:
        del self.shard(key)[key]
        self.size -= 1

    def __contains__(self, key: K) -> bool:
        return key in self.shard(key)

    def __len__(self) -> int:
        return self.size

    def __bool__(self) -> bool:
        return self.size > 0
