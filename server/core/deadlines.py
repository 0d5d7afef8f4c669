"""Every deadline of a node in one structure.

Jobs (delay, requeue, WILLQUEUE, expiry, ack GC) and blocked clients
(GETJOB and ADDJOB timeouts) share it: anything with a ``wake_ms``
attribute.  A node with a million pending jobs still finds the next one to
wake cheaply, and the common changes cost O(1).

How: deadlines mostly arrive in order within a few streams.  Every new job
expires TTL after now, every delivered job is due for requeue RETRY after
now: two sequences that never go back in time, interleaved.  So deadlines
live in up to ``MAX_LANES`` lanes, each a list of items appended in
non-decreasing ``wake_ms`` order, plus a SortedKeyList for the few that fit
no lane (a deadline earlier than the end of every lane, with all lanes
taken).  A new deadline goes at the end of the lane whose last deadline is
the latest not after it: an append.  Removing one finds it by bisection in
its lane; near the head the few before it shift up, elsewhere it leaves a
hole that keeps its deadline (so the item is freed at once); holes are
squeezed out once they are half of a lane.  The earliest deadline is the
smallest lane head or the SortedKeyList's first.  8 bytes a deadline.

Measured against one SortedKeyList for everything (python -m bench and
instruction counts under callgrind): GETJOB, which moves a job from its
expiry to its requeue deadline, went from ~280 to ~60 bytecodes here.
Items due in the same millisecond may come out in a different order than
they were scheduled.
"""

from bisect import bisect_left, bisect_right
from operator import attrgetter

from sortedcontainers import SortedKeyList

MAX_LANES = 8
COMPACT_MIN = 64  # holes in a lane before it is worth squeezing them out
NEAR_HEAD = 32  # a removal this close to the head shifts instead of a hole
_WAKE = attrgetter("wake_ms")
_CTIME = attrgetter("_ctime")  # jobs' creation time, see _find_in_run


class _Hole:
    """Where a removed item was, away from the head: keeps its deadline (and
    a job's creation time) so the lane stays sorted for bisection."""

    __slots__ = ("wake_ms", "_ctime")

    def __init__(self, wake_ms, item):
        self.wake_ms = wake_ms
        self._ctime = getattr(item, "_ctime", None)


def _find_in_run(items, item, lo, hi):
    """Index of ``item`` among ``items[lo:hi]``, which share its deadline,
    or -1.  Hundreds of jobs fetched in the same millisecond share their
    requeue deadline, and list.index compares each (~20 ns apiece).  They
    were usually scheduled in creation order, so try a bisection by job
    creation time first, and check it."""
    if hi - lo > 8:
        try:
            i = bisect_left(items, item._ctime, lo, hi, key=_CTIME)
        except (AttributeError, TypeError):  # not all jobs
            pass
        else:
            if i < hi and items[i] is item:
                return i
    try:
        return items.index(item, lo, hi)
    except ValueError:
        return -1


class _Lane:
    """Items appended in non-decreasing ``wake_ms`` order.  Entries before
    ``head`` are gone; ``items[head]`` is always live (an empty lane is
    dropped); ``holes`` counts the _Hole entries after it.  ``by_ctime``:
    every item appended so far was a job created after the one before it
    (jobs expiring, or fetched from one queue), so a job is found by one
    bisection on its creation time."""

    __slots__ = ("items", "head", "holes", "tail", "by_ctime", "last_ctime")

    def __init__(self, item, wake_ms):
        self.items = [item]
        self.head = 0
        self.holes = 0
        self.tail = wake_ms  # the latest deadline ever appended
        self.last_ctime = getattr(item, "_ctime", None)  # None: not a job
        self.by_ctime = self.last_ctime is not None


class Deadlines:
    def __init__(self):
        self._lanes = []
        self._rest = SortedKeyList(key=_WAKE)
        self._len = 0

    def __len__(self):
        return self._len

    def set(self, item, wake_ms):
        """(Re)schedule ``item`` to wake at ``wake_ms``."""
        old = item.wake_ms
        if old is not None:
            if old == wake_ms:
                return
            self._remove(item, old)
        else:
            self._len += 1
        item.wake_ms = wake_ms
        # Lanes are kept latest tail first, so the first that fits is the
        # best fit, and appending there keeps that order.
        for lane in self._lanes:
            if lane.tail <= wake_ms:
                lane.tail = wake_ms
                lane.items.append(item)
                if lane.by_ctime:  # (inline: the hot path of ADDJOB, GETJOB)
                    try:
                        ctime = item._ctime
                    except AttributeError:  # a client or a pending reply
                        lane.by_ctime = False
                        return
                    if ctime > lane.last_ctime:
                        lane.last_ctime = ctime
                    else:
                        lane.by_ctime = False
                return
        if len(self._lanes) >= MAX_LANES:
            self._rest.add(item)
            return
        self._lanes.append(_Lane(item, wake_ms))  # earlier than every tail: goes last

    def cancel(self, item):
        old = item.wake_ms
        if old is not None:
            self._remove(item, old)
            item.wake_ms = None
            self._len -= 1

    def _remove(self, item, key):
        for lane in self._lanes:
            if key > lane.tail:
                continue
            items = lane.items
            head = lane.head
            first = items[head]
            if first is item:  # the usual case: the oldest goes first
                items[head] = None
                head += 1
                if head & 1023 and head < len(items) and items[head].__class__ is not _Hole:
                    lane.head = head
                else:
                    self._advance(lane, head)
                return
            if key < first.wake_ms:
                continue
            i = -1
            if lane.by_ctime:  # out-of-order acks: ~20% of their CPU before
                try:
                    i = bisect_left(items, item._ctime, head, key=_CTIME)
                except AttributeError:  # not a job: not in this lane
                    continue
                if i == len(items) or items[i] is not item:
                    i = -1
            if i < 0:
                lo = bisect_left(items, key, head, key=_WAKE)
                hi = bisect_right(items, key, lo, key=_WAKE)
                i = _find_in_run(items, item, lo, hi)
                if i < 0:
                    continue
            if i - head <= NEAR_HEAD:
                items[head + 1:i + 1] = items[head:i]
                items[head] = None
                lane.head = head + 1
            else:
                items[i] = _Hole(key, item)
                lane.holes += 1
                if lane.holes >= COMPACT_MIN and 2 * lane.holes > len(items) - head:
                    self._compact(lane)
            return
        self._remove_rest(item, key)

    def _remove_rest(self, item, key):
        """SortedKeyList.remove, minus its Python loop over equal keys
        (jobs added in the same millisecond share an expiry)."""
        rest = self._rest
        pos = bisect_left(rest._maxes, key)
        if pos < len(rest._maxes):
            keys = rest._keys[pos]
            start = bisect_left(keys, key)
            try:
                idx = rest._lists[pos].index(item, start, bisect_right(keys, key))
            except ValueError:
                pass  # the equal keys run on into the next sublist
            else:
                rest._delete(pos, idx)
                return
        rest.remove(item)

    def _advance(self, lane, head):
        """The entry before ``head`` is gone: move the head past holes, drop
        the lane once it is empty, forget what is behind the head."""
        items = lane.items
        end = len(items)
        while head < end and items[head].__class__ is _Hole:
            head += 1
            lane.holes -= 1
        if head == end:
            self._lanes.remove(lane)
            return
        if head >= 1024 and 2 * head > end:
            del items[:head]
            head = 0
        lane.head = head

    def _compact(self, lane):
        lane.items = [i for i in lane.items[lane.head:] if i.__class__ is not _Hole]
        lane.head = 0
        lane.holes = 0

    def next_ms(self):
        """The earliest deadline, or None."""
        best = None
        for lane in self._lanes:
            key = lane.items[lane.head].wake_ms
            if best is None or key < best:
                best = key
        rest = self._rest
        if rest:
            key = rest[0].wake_ms
            if best is None or key < best:
                best = key
        return best

    def pop_due(self, now_ms, limit):
        """Remove and return up to ``limit`` items due at ``now_ms``."""
        due = []
        rest = self._rest
        while len(due) < limit:
            best = None
            best_key = None
            for lane in self._lanes:
                key = lane.items[lane.head].wake_ms
                if best is None or key < best_key:
                    best = lane
                    best_key = key
            if rest and (best is None or rest[0].wake_ms < best_key):
                if rest[0].wake_ms > now_ms:
                    break
                item = rest.pop(0)
            else:
                if best is None or best_key > now_ms:
                    break
                head = best.head
                item = best.items[head]
                best.items[head] = None
                self._advance(best, head + 1)
            item.wake_ms = None
            self._len -= 1
            due.append(item)
        return due
