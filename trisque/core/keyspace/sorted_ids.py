"""A sorted set of stream IDs (ints) cut in chunks: a consumer group's PEL
in ID order, which Redis keeps in a radix tree.

One flat sorted list made each XACK a memmove of the IDs after the acked
one (the oldest is usually acked first): O(n) in the PEL's length, a
lagging group's acks then cost more than the rest of the command.  Chunks
of at most ``2 * CHUNK`` IDs bound that memmove; ``maxes`` (each chunk's
last ID) finds the chunk by bisection.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import Final, Iterator

CHUNK: Final = 256


class SortedIds:
    __slots__ = ("chunks", "maxes", "length")

    def __init__(self, ids: list[int] | None = None) -> None:
        """``ids`` sorted, distinct."""
        self.chunks: list[list[int]] = []
        self.maxes: list[int] = []
        self.length = 0
        if ids:
            for i in range(0, len(ids), CHUNK):
                chunk = ids[i:i + CHUNK]
                self.chunks.append(chunk)
                self.maxes.append(chunk[-1])
            self.length = len(ids)

    def __len__(self) -> int:
        return self.length

    def add(self, entry_id: int) -> None:
        """Insert ``entry_id`` (not already in)."""
        maxes = self.maxes
        self.length += 1
        if not maxes:
            self.chunks.append([entry_id])
            maxes.append(entry_id)
            return
        k = bisect_left(maxes, entry_id)
        if k == len(maxes):  # (the usual case: a newer ID than all)
            k -= 1
            chunk = self.chunks[k]
            chunk.append(entry_id)
            maxes[k] = entry_id
        else:
            chunk = self.chunks[k]
            insort(chunk, entry_id)
        if len(chunk) > 2 * CHUNK:
            self.chunks.insert(k + 1, chunk[CHUNK:])
            del chunk[CHUNK:]
            maxes.insert(k, chunk[-1])

    def remove(self, entry_id: int) -> None:
        """Remove ``entry_id`` (known to be in)."""
        maxes = self.maxes
        k = bisect_left(maxes, entry_id)
        chunk = self.chunks[k]
        del chunk[bisect_left(chunk, entry_id)]
        self.length -= 1
        if not chunk:
            del self.chunks[k]
            del maxes[k]
        elif maxes[k] != chunk[-1]:
            maxes[k] = chunk[-1]

    def first(self) -> int:
        return self.chunks[0][0]

    def last(self) -> int:
        return self.maxes[-1]

    def since(self, start: int) -> Iterator[int]:
        """The IDs >= ``start``, in order (not to be changed meanwhile)."""
        chunks = self.chunks
        k = bisect_left(self.maxes, start)
        if k < len(chunks):
            chunk = chunks[k]
            for i in range(bisect_left(chunk, start), len(chunk)):
                yield chunk[i]
            for j in range(k + 1, len(chunks)):
                yield from chunks[j]

    def take(self, start: int, limit: int) -> list[int]:
        """At most ``limit`` IDs >= ``start`` (0: all), in order, copied."""
        out: list[int] = []
        for entry_id in self.since(start):
            if limit and len(out) == limit:
                break
            out.append(entry_id)
        return out

    def without(self, gone: dict[int, None]) -> SortedIds:
        """A copy without the IDs of ``gone``."""
        return SortedIds([i for i in self.since(0) if i not in gone])
