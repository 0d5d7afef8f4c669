"""The sorted set type: a ``ZSet`` holds member -> score (a dict, for
ZSCORE in O(1)) and the (score, member) pairs in order (a
sortedcontainers ``SortedList``, for ranks and ranges in O(log n)): the
two halves of Redis's skiplist encoding.

Order is Redis's: by score, then by member bytes (memcmp).

Redis 7.0 keeps a small zset as a listpack (at most
``zset-max-listpack-entries`` = 128 members of at most
``zset-max-listpack-value`` = 64 bytes: encoding_limits.py) and converts it to a skiplist for
good past either bound.  ``listpack`` records that: OBJECT ENCODING
answers from it, ZSCAN returns a listpack zset whole, and a listpack
stores a score as d2string's text, which turns -0 into 0 (the skiplist
keeps -0).

Lex ranges assume every score is equal (Redis says the result is
undefined otherwise): with equal scores they bisect; with mixed scores
they filter every member, in score order.
"""

from __future__ import annotations

import math
from typing import Iterator, Protocol, overload

from sortedcontainers import SortedList

from .encoding_limits import LIMITS
from .types import ValueType, register_type

ZSET_OVERHEAD = 480  # the object, its dict and SortedList, before any member
# Per member: a dict entry and index slot (~36), the bytes header (~40),
# the float (24), the (score, member) tuple (56) and its list slot (8).
MEMBER_OVERHEAD = 164
RECORD_MEMBERS = 64  # members per ZADD record of an AOF rewrite

Pair = tuple[float, bytes]


class ScoreOrder(Protocol):
    """What a ZSet uses of its SortedList of pairs (sortedcontainers is
    untyped).  A bisect may take ``(score,)``, which sorts before every
    member of that score."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Pair]: ...

    @overload
    def __getitem__(self, index: int) -> Pair: ...

    @overload
    def __getitem__(self, index: slice) -> list[Pair]: ...

    def __delitem__(self, index: slice) -> None: ...

    def add(self, value: Pair) -> None: ...

    def remove(self, value: Pair) -> None: ...

    def bisect_left(self, value: Pair | tuple[float]) -> int: ...

    def bisect_right(self, value: Pair | tuple[float]) -> int: ...


class ZSet:
    __slots__ = ("scores", "order", "nbytes", "listpack", "deletions")

    def __init__(self, listpack: bool = True) -> None:
        self.scores: dict[bytes, float] = {}
        self.order: ScoreOrder = SortedList()
        self.nbytes = 0  # MEMBER_OVERHEAD + len(member), summed
        self.listpack = listpack
        self.deletions = 0  # members removed so far (ZSCAN cursors)

    def __len__(self) -> int:
        return len(self.scores)

    def __eq__(self, other: object) -> bool:
        """Same members with the same scores (what tests compare)."""
        return isinstance(other, ZSet) and self.scores == other.scores

    __hash__ = None  # type: ignore[assignment]  # mutable

    def insert(self, member: bytes, score: float) -> None:
        """Add a member that is not there yet."""
        if self.listpack:
            if len(self.scores) + 1 > LIMITS.zset_entries or len(member) > LIMITS.zset_value:
                self.listpack = False
            else:
                score += 0.0  # -0 -> 0, as the listpack's text
        self.scores[member] = score
        self.order.add((score, member))
        self.nbytes += MEMBER_OVERHEAD + len(member)

    def update(self, member: bytes, score: float) -> None:
        """Give a present member a new score."""
        if self.listpack:
            score += 0.0
        self.order.remove((self.scores[member], member))
        self.order.add((score, member))
        self.scores[member] = score

    def remove(self, member: bytes) -> bool:
        score = self.scores.pop(member, None)
        if score is None:
            return False
        self.order.remove((score, member))
        self.nbytes -= MEMBER_OVERHEAD + len(member)
        self.deletions += 1
        return True

    def remove_range(self, start: int, stop: int) -> int:
        """Remove the members ranked start..stop-1; how many."""
        pairs = self.order[start:stop]
        del self.order[start:stop]
        scores = self.scores
        for _, member in pairs:
            del scores[member]
            self.nbytes -= MEMBER_OVERHEAD + len(member)
        self.deletions += len(pairs)
        return len(pairs)

    def rank(self, member: bytes) -> int | None:
        score = self.scores.get(member)
        if score is None:
            return None
        return self.order.bisect_left((score, member))

    # ------------------------------------------------------ score ranges

    def score_start(self, low: float, exclusive: bool) -> int:
        """The rank of the first member with score >= low (> if exclusive)."""
        if exclusive:
            if low == math.inf:
                return len(self.order)
            low = math.nextafter(low, math.inf)
        return self.order.bisect_left((low,))  # (x,) sorts before (x, any member)

    def score_stop(self, high: float, exclusive: bool) -> int:
        """One past the rank of the last member with score <= high (< if
        exclusive)."""
        if not exclusive:
            if high == math.inf:
                return len(self.order)
            high = math.nextafter(high, math.inf)
        return self.order.bisect_left((high,))

    # -------------------------------------------------------- lex ranges

    def lex_ranks(self, low: tuple[int, bytes, bool],
                  high: tuple[int, bytes, bool]) -> list[int] | tuple[int, int]:
        """The members in a lex range (scores.parse_lex_bound's bounds): a
        (start, stop) rank span when every score is equal, else the list
        of the ranks in range."""
        order = self.order
        if not order:
            return (0, 0)
        first, last = order[0][0], order[-1][0]
        if first == last:
            return (self._lex_edge(first, low, True), self._lex_edge(first, high, False))
        return [i for i, (_, member) in enumerate(order)
                if _lex_gte(member, low) and _lex_lte(member, high)]

    def _lex_edge(self, score: float, bound: tuple[int, bytes, bool], is_low: bool) -> int:
        kind, value, exclusive = bound
        if kind:
            return 0 if kind < 0 else len(self.order)
        if is_low == exclusive:  # low exclusive, or high inclusive: past equal ones
            return self.order.bisect_right((score, value))
        return self.order.bisect_left((score, value))

    def pairs(self) -> Iterator[Pair]:
        return iter(self.order)


def _lex_gte(member: bytes, bound: tuple[int, bytes, bool]) -> bool:
    kind, value, exclusive = bound
    if kind:
        return kind < 0
    return member > value if exclusive else member >= value


def _lex_lte(member: bytes, bound: tuple[int, bytes, bool]) -> bool:
    kind, value, exclusive = bound
    if kind:
        return kind > 0
    return member < value if exclusive else member <= value


class FrozenZSet(tuple[Pair, ...]):  # ((score, member), ...)
    """A sorted set captured for an AOF rewrite."""
    __slots__ = ()


def zset_memory(value: object) -> int:
    assert isinstance(value, ZSet)
    return ZSET_OVERHEAD + value.nbytes


def zset_encoding(value: object) -> str:
    assert isinstance(value, ZSet)
    return "listpack" if value.listpack else "skiplist"


def zset_freeze(value: object) -> object:
    assert isinstance(value, ZSet)
    return FrozenZSet(value.order)


def zset_records(key: bytes, frozen: object) -> list[list[bytes]]:
    assert isinstance(frozen, FrozenZSet)
    out = []
    for i in range(0, len(frozen), RECORD_MEMBERS):
        argv = [b"ZADD", key]
        for score, member in frozen[i:i + RECORD_MEMBERS]:
            argv += (b"%.17g" % score, member)
        out.append(argv)
    return out


def zset_copy(value: object) -> object:
    assert isinstance(value, ZSet)
    out = ZSet(listpack=value.listpack)
    out.scores = dict(value.scores)
    out.order = SortedList(value.order)
    out.nbytes = value.nbytes
    return out


ZSET = ValueType("zset", (ZSet, FrozenZSet), zset_memory, zset_encoding, zset_freeze,
                 zset_records, zset_copy)
register_type(ZSET)
