"""One database of the keyspace: its keys, their expiry times, and the
bookkeeping that goes with them (memory, deletions for SCAN cursors, the
expiry heap).

``keys`` maps a key (bytes, binary safe) to its value; the value's Python
class is its type (types.py).  ``expires`` maps the keys that have a TTL to
their absolute expiry time in unix milliseconds, as Redis's ``db->expires``.

Active expiry needs the keys in expiry order.  Redis samples its hash table
by bucket; a Python dict has neither random access nor a cursor that
survives changes, so the keys with a TTL also sit in a heap of
``(when_ms, key)``.  Entries are never removed from the heap when a TTL
changes or a key goes: an entry counts only while ``expires[key]`` still
equals its time (lazy deletion), and the heap is rebuilt from ``expires``
once stale entries outnumber live ones, so it stays within twice the live
size.  ``when_sum`` (the sum of every expiry time) gives INFO's avg_ttl
exactly, in O(1).
"""

from __future__ import annotations

from heapq import heapify, heappush
from typing import Protocol

HEAP_SLACK = 64  # stale heap entries tolerated before a rebuild is considered


class Watcher(Protocol):
    """What ``Keyspace.touched`` marks: a WATCH on one key
    (transactions.WatchedKey)."""

    dirty: bool


class Db:
    __slots__ = ("id", "keys", "expires", "heap", "when_sum", "memory",
                 "deletions", "watched")

    def __init__(self, db_id: int) -> None:
        self.id = db_id
        self.keys: dict[bytes, object] = {}
        self.expires: dict[bytes, int] = {}
        self.heap: list[tuple[int, bytes]] = []
        self.when_sum = 0  # sum of expires' values (avg_ttl)
        self.memory = 0  # estimated bytes held by this db's keys
        self.deletions = 0  # keys removed so far (scan cursors never skip one)
        # Keys some client WATCHes -> its watchers (MULTI/EXEC, later): a
        # write calls Keyspace.touched only while this is non-empty.
        self.watched: dict[bytes, list[Watcher]] = {}

    def set_expire(self, key: bytes, when_ms: int) -> bool:
        """Give ``key`` (present) an expiry time; True if it had none."""
        expires = self.expires
        old = expires.get(key)
        expires[key] = when_ms
        self.when_sum += when_ms
        heap = self.heap
        heappush(heap, (when_ms, key))
        if old is not None:
            self.when_sum -= old
            if len(heap) > 2 * len(expires) + HEAP_SLACK:
                self.rebuild_heap()
            return False
        return True

    def remove_expire(self, key: bytes) -> bool:
        """Drop ``key``'s expiry time; True if it had one.  (Its heap entry
        goes stale; see the module's docstring.)"""
        when = self.expires.pop(key, None)
        if when is None:
            return False
        self.when_sum -= when
        if len(self.heap) > 2 * len(self.expires) + HEAP_SLACK:
            self.rebuild_heap()
        return True

    def rebuild_heap(self) -> None:
        heap = [(when, key) for key, when in self.expires.items()]
        heapify(heap)
        self.heap = heap

    def clear(self) -> dict[bytes, object]:
        """Empty the db; returns the old key dict (for a lazy free)."""
        old = self.keys
        self.keys = {}
        self.expires = {}
        self.heap = []
        self.when_sum = 0
        self.memory = 0
        self.deletions += len(old)
        return old
