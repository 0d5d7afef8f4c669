"""The list type: a ``collections.deque`` of bytes that keeps its own byte
count, so ``memory`` is O(1) however long the list is.

Every change to a list's items goes through the count: whoever pushes or
pops adds or subtracts ``item_size(item)`` (commands_lists.py does, and
reports the same delta to the keyspace with ``Keyspace.grow``).  An empty
list never stays in the keyspace (Redis: empty collections vanish); the
command that empties one deletes its key.

Index arithmetic is Redis's (t_list.c): negative indexes count from the
tail, and ranges are clamped the way LRANGE and LTRIM clamp them.
"""

from __future__ import annotations

from collections import deque
from itertools import islice
from typing import Iterable, Iterator

from .types import ValueType, register_type

# Estimated bytes per item beyond its bytes: the bytes object's header (33,
# rounded up by pymalloc) and the deque's slot (8).
ITEM_OVERHEAD = 44
# An empty deque with its first block (sys.getsizeof: 760) and our slot.
LIST_OVERHEAD = 768
REWRITE_BATCH = 64  # items per RPUSH record in an AOF rewrite (as Redis)


class List(deque):  # type: ignore[type-arg]  # (deque[bytes]; a subclass cannot say so at runtime)
    __slots__ = ("nbytes",)

    def __init__(self, items: Iterable[bytes] = ()) -> None:
        super().__init__(items)
        self.nbytes: int = sum(ITEM_OVERHEAD + len(item) for item in self)


def item_size(item: bytes) -> int:
    return ITEM_OVERHEAD + len(item)


def items_size(items: Iterable[bytes]) -> int:
    return sum(ITEM_OVERHEAD + len(item) for item in items)


def clamp_range(start: int, end: int, length: int) -> tuple[int, int] | None:
    """LRANGE's and LTRIM's (start, end) as absolute inclusive indexes, or
    None for an empty range."""
    if start < 0:
        start += length
    if end < 0:
        end += length
    if start < 0:
        start = 0
    if start > end or start >= length:
        return None
    if end >= length:
        end = length - 1
    return start, end


def items_in_range(lst: List, start: int, end: int) -> list[bytes]:
    """Items ``start..end`` (absolute, inclusive), walking from the nearer end."""
    length = len(lst)
    if start > length - 1 - end:
        tail = list(islice(reversed(lst), length - 1 - end, length - start))
        tail.reverse()
        return tail
    return list(islice(lst, start, end + 1))


def positions(lst: List, element: bytes, from_tail: bool, skip: int, count: int,
              maxlen: int) -> list[int]:
    """LPOS: indexes of ``element`` after skipping ``skip`` matches, from
    the tail if ``from_tail``, at most ``count`` (0: all), comparing at most
    ``maxlen`` items (0: all)."""
    length = len(lst)
    out: list[int] = []
    items: Iterator[bytes] = reversed(lst) if from_tail else iter(lst)
    if maxlen:
        items = islice(items, maxlen)
    for i, item in enumerate(items):
        if item == element:
            if skip:
                skip -= 1
                continue
            out.append(length - 1 - i if from_tail else i)
            if len(out) == count:
                break
    return out


def remove(lst: List, element: bytes, count: int) -> list[bytes]:
    """LREM: drop up to |count| items equal to ``element`` (from the tail
    if count < 0, all if 0); returns the removed items."""
    limit = -count if count < 0 else count
    kept: list[bytes] = []
    removed: list[bytes] = []
    items: Iterator[bytes] = reversed(lst) if count < 0 else iter(lst)
    for item in items:
        if item == element and (not limit or len(removed) < limit):
            removed.append(item)
        else:
            kept.append(item)
    if removed:
        if count < 0:
            kept.reverse()
        lst.clear()
        lst.extend(kept)
    return removed


# ------------------------------------------------------------ the type

def list_memory(value: object) -> int:
    assert isinstance(value, List)
    return LIST_OVERHEAD + value.nbytes


def list_encoding(value: object) -> str:
    return "quicklist"  # Redis 7.0 answers this for every list


def list_freeze(value: object) -> object:
    assert isinstance(value, List)
    return FrozenList(value)


class FrozenList(tuple):  # type: ignore[type-arg]
    """A list's items as an AOF rewrite captured them."""
    __slots__ = ()


def list_records(key: bytes, frozen: object) -> list[list[bytes]]:
    assert isinstance(frozen, FrozenList)
    return [[b"RPUSH", key, *frozen[i:i + REWRITE_BATCH]]
            for i in range(0, len(frozen), REWRITE_BATCH)]


LIST = ValueType("list", (List, FrozenList), list_memory, list_encoding, list_freeze,
                 list_records)
register_type(LIST)
