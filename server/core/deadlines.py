"""Every deadline of a node in one ordered structure.

Jobs (delay, requeue, WILLQUEUE, expiry, ack GC) and blocked clients
(GETJOB and ADDJOB timeouts) share it: anything with a ``wake_ms``
attribute.  Insert, remove and pop-earliest are O(log n), so a node with a
million pending jobs still finds the next one to wake cheaply.
"""

from bisect import bisect_left, bisect_right
from operator import attrgetter

from sortedcontainers import SortedKeyList


class Deadlines:
    def __init__(self):
        self._items = SortedKeyList(key=attrgetter("wake_ms"))

    def __len__(self):
        return len(self._items)

    def set(self, item, wake_ms):
        """(Re)schedule ``item`` to wake at ``wake_ms``."""
        if item.wake_ms is not None:
            if item.wake_ms == wake_ms:
                return
            self._remove(item)
        item.wake_ms = wake_ms
        self._items.add(item)

    def cancel(self, item):
        if item.wake_ms is not None:
            self._remove(item)
            item.wake_ms = None

    def _remove(self, item):
        """SortedKeyList.remove, minus its Python loop over equal keys:
        hundreds of jobs added in the same millisecond share an expiry, so
        find ours among them with list.index (C) instead."""
        items = self._items
        key = item.wake_ms
        pos = bisect_left(items._maxes, key)
        if pos < len(items._maxes):
            keys = items._keys[pos]
            start = bisect_left(keys, key)
            try:
                idx = items._lists[pos].index(item, start, bisect_right(keys, key))
            except ValueError:
                pass  # the equal keys run on into the next sublist
            else:
                items._delete(pos, idx)
                return
        items.remove(item)

    def next_ms(self):
        """The earliest deadline, or None."""
        items = self._items
        return items[0].wake_ms if items else None

    def pop_due(self, now_ms, limit):
        """Remove and return up to ``limit`` items due at ``now_ms``."""
        items = self._items
        due = []
        while items and len(due) < limit and items[0].wake_ms <= now_ms:
            item = items.pop(0)
            item.wake_ms = None
            due.append(item)
        return due
