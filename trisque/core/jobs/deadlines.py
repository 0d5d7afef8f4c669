"""Every deadline of a node in one structure.

Jobs (delay, requeue, WILLQUEUE, expiry, ack GC) and blocked clients
(GETJOB and ADDJOB timeouts) share it: anything with a ``wake_ms``
attribute.  A node with a million pending jobs still finds the next one to
wake cheaply, and the common changes cost O(1).

How: deadlines mostly arrive in order within a few streams.  Every new job
expires TTL after now, every delivered job is due for requeue RETRY after
now: two sequences that never go back in time, interleaved.  So deadlines
live in up to ``MAX_LANES`` lanes, each a list of items appended in
non-decreasing ``wake_ms`` order.  A new deadline goes at the end of the
lane whose last deadline is the latest not after it: an append.  Removing
one finds it by bisection in its lane; near the head the few before it
shift up, elsewhere it leaves a hole that keeps its deadline (so the item
is freed at once); holes are squeezed out once they are half of a lane.
8 bytes a deadline.

In a cluster the requeue deadlines are jittered (+-250 ms, so that holders
do not all requeue at once): they arrive out of order, and once the lanes
are taken almost none fits one.  Those go to buckets: a dict from the
millisecond to the item due then, or a list of them, and a heap of the
buckets' milliseconds.  The dict is sharded (shards.py): as one dict of
300k milliseconds (RETRY 300 s) it copied itself whole as it grew.  At
tens of thousands of jobs a second dozens share a millisecond, so most
changes are a dict lookup and a list append or removal (found by creation
time, as in a lane); a new millisecond is one heappush (C, O(log n)).  A
removal that empties a bucket leaves its key in the heap (popped once it
reaches the top, so the top is always a live bucket's).  The heap is a
calendar: one small heap per slot of 2**SLOT_BITS ms and a heap of the
slots, so that dropping stale keys once they outnumber the live ones
rebuilds one slot's heap, never all of them (a rebuild of one heap of
100k keys was a stall of milliseconds).  Items due in the same
millisecond may come out in any order.

Lanes and buckets replaced one SortedKeyList of every deadline to make
the common changes cheap (the figures: bench/README.md, "Deadlines").
"""

from heapq import heapify, heappop, heappush
from typing import Any, Final

from mypy_extensions import mypyc_attr

from .shards import ShardedDict

MAX_LANES: Final = 8
SLOT_BITS: Final = 9  # a slot of the buckets' calendar: 512 ms of deadlines
STALE_MIN: Final = 64  # stale keys (or slots) in a heap before it is worth rebuilding
_NO_SLOT: Final = -(1 << 60)  # (no millisecond's slot number)
COMPACT_MIN: Final = 64  # holes in a lane before it is worth squeezing them out
NEAR_HEAD: Final = 32  # a removal this close to the head shifts instead of a hole
# pop_due's answer when nothing is due (most calls): shared, never appended
# to, so such a call makes no list.
_NOTHING_DUE: Final[list[Any]] = []


# acyclic: no reference cycle runs through these attributes, so compiled
# instances carry no GC header and the cyclic GC never walks them (a
# Job inherits this: 16 bytes less per job, and 1M queued jobs add
# nothing to a full collection).  A subclass that holds other objects
# (Client, PendingReply) is GC-tracked as usual.
@mypyc_attr(allow_interpreted_subclasses=True, acyclic=True)  # (PendingReply's, in cluster/)
class Scheduled:
    """Anything with a deadline here: a job, a blocked client, a pending
    reply.  ``wake_ms`` is its deadline while it has one."""

    __slots__ = ("wake_ms",)
    wake_ms: int | None


@mypyc_attr(allow_interpreted_subclasses=True, acyclic=True)  # (tests' stand-ins for jobs)
class Ordered(Scheduled):
    """A scheduled item with a creation time (a job, or the hole one left):
    lanes of jobs created in order are searched by bisection on it."""

    __slots__ = ("_ctime",)
    _ctime: int


@mypyc_attr(acyclic=True)
class _Hole(Ordered):
    """Where a removed item was, away from the head: keeps its deadline (and
    a job's creation time) so the lane stays sorted for bisection."""

    __slots__ = ()

    def __init__(self, wake_ms: int, item: Scheduled) -> None:
        self.wake_ms = wake_ms
        self._ctime = item._ctime if isinstance(item, Ordered) else -1


def _find_in_run(items: list[Any], item: Scheduled, lo: int, hi: int) -> int:
    """Index of ``item`` among ``items[lo:hi]``, which share its deadline,
    or -1.  Hundreds of jobs fetched in the same millisecond share their
    requeue deadline, and list.index compares each.  They were usually
    scheduled in creation order, so try a bisection by job creation time
    first, and check it."""
    if hi - lo > 8 and isinstance(item, Ordered):
        try:
            i = _bisect_ctime(items, item._ctime, lo, hi)
        except (AttributeError, TypeError):  # not all jobs
            pass
        else:
            if i < hi and items[i] is item:
                return i
    # Identity, as list.index would find it (no Scheduled defines __eq__),
    # without its miss: the ValueError's message formats the item's repr
    # (bench/README.md, "The end-to-end tail").
    for i in range(lo, hi):
        if items[i] is item:
            return i
    return -1


NEAR: Final = 8  # how far past the last hole _near looks


def _near(items: list[Any], item: Scheduled, start: int) -> int:
    """Index of ``item`` among the few entries from ``start`` (after the
    last hole made in this lane), or -1.  Jobs leave the middle of a lane
    mostly in the order they joined it: the jobs of a short queue fetched
    one after another, whose expiry deadlines sit behind a million others'
    in the same lane.  Identity tests on the list's pointers touch no job,
    where a bisection reads a dozen jobs' creation times from memory."""
    if start:
        for i in range(start, min(start + NEAR, len(items))):
            if items[i] is item:
                return i
    return -1


def _bisect_ctime(items: list[Any], ctime: int, lo: int, hi: int) -> int:
    """bisect_left on the creation times of ``items[lo:hi]`` (all Ordered).
    Compiled, a native loop: bisect's key= calls a getter that boxes each
    creation time, and a job taken from a short queue on a node holding a
    million others is found near the end of the long expiry lane they share
    (bench/README.md, "A node holding a million")."""
    while lo < hi:
        mid = (lo + hi) >> 1
        other: Ordered = items[mid]
        if other._ctime < ctime:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _bisect_wake(items: list[Any], key: int, lo: int, hi: int, right: bool) -> int:
    """bisect_left (bisect_right with ``right``) on the deadlines of
    ``items[lo:hi]`` (live items and holes: all have one).  Compiled, a
    native loop: bisect's key= called a getter through the generic call
    for every step (~700 instructions a bisection; a removal made two,
    for a blocked client's TIMEOUT or an acked job's GC retry in a lane
    of mixed items)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        other: Scheduled = items[mid]
        wake = other.wake_ms
        if wake is not None and (wake <= key if right else wake < key):
            lo = mid + 1
        else:
            hi = mid
    return lo


class _Lane:
    """Items appended in non-decreasing ``wake_ms`` order.  Entries before
    ``head`` are gone; ``items[head]`` is always live (an empty lane is
    dropped); ``first_ms`` is its deadline, kept here for the scans of
    every lane (next_ms, pop_due: an int read, not the item's boxed
    deadline); ``holes`` counts the _Hole entries after it.  ``by_ctime``:
    every item appended so far was a job created after the one before it
    (jobs expiring, or fetched from one queue), so a job is found by one
    bisection on its creation time."""

    __slots__ = ("items", "head", "first_ms", "holes", "tail", "by_ctime", "last_ctime",
                 "after_hole")
    items: list[Any]  # Scheduled, or None before head
    head: int
    first_ms: int
    holes: int
    after_hole: int  # the index after the last hole made (0: none since compacting)
    tail: int
    by_ctime: bool
    last_ctime: int

    def __init__(self, item: Scheduled, wake_ms: int) -> None:
        self.items = [item]
        self.start(item, wake_ms)

    def start(self, item: Scheduled, wake_ms: int) -> None:
        """The lane's fields for ``item`` alone, first in ``items``."""
        self.head = 0
        self.first_ms = wake_ms
        self.holes = 0
        self.after_hole = 0
        self.tail = wake_ms  # the latest deadline ever appended
        self.by_ctime = isinstance(item, Ordered)  # False: not a job
        self.last_ctime = item._ctime if isinstance(item, Ordered) else -1


@mypyc_attr(acyclic=True)
class _Slot:
    """The buckets due in one slot of 2**SLOT_BITS ms: a heap of their
    milliseconds (some stale: emptied buckets', or a key twice), and the
    set of the live ones (the heap is rebuilt from it, and its top checked
    against it: not a lookup in the buckets a key)."""

    __slots__ = ("keys", "live")
    keys: list[int]
    live: set[int]

    def __init__(self) -> None:
        self.keys = []
        self.live = set()


@mypyc_attr(allow_interpreted_subclasses=True)  # (AOF loading's stand-in, server/aof/load.py)
class Deadlines:
    _lanes: list[_Lane]
    _buckets: ShardedDict[int, Any]
    _slots: dict[int, _Slot]
    _slot_heap: list[int]
    _top: _Slot
    _top_no: int
    _last: _Slot
    _last_no: int
    _keys: list[int]
    _floor: int | None
    _len: int
    _last_ms: int
    _last_box: int | None
    _spare: _Lane | None

    def __init__(self) -> None:
        self._lanes = []
        # The last lane dropped, emptied, for the next one: a lone job's
        # deadline moved (a replica's copy on WORKING, a job fetched) empties
        # its lane and starts one (bench/README.md, "CPU a replicated job").
        self._spare = None
        self._buckets = ShardedDict()  # wake_ms -> the item, or a list of the items, due then
        # wake_ms >> SLOT_BITS -> its _Slot, while it has live buckets (one
        # dict: a slot a 512 ms, ~600 of them for RETRY 300 s)
        self._slots = {}
        self._slot_heap = []  # heap of the slots' numbers; some stale (or twice)
        self._top = _Slot()  # the earliest slot with a live bucket (while any)
        self._top_no = 0
        self._keys = self._top.keys  # its heap: the earliest bucket's wake_ms on top
        # The slot used last, while live: a replica's jittered deadlines
        # (+-250 ms) come and go in one or two slots at a time.
        self._last = self._top
        self._last_no = _NO_SLOT
        self._floor = None  # a deadline before this fits no lane (see set)
        self._len = 0
        # The deadline set last, and one int object for it that its items
        # share: compiled, ``wake_ms`` arrives unboxed and storing it would
        # make a 32-byte int per job (jobs of the same ms expire together).
        self._last_ms = -1
        self._last_box = None

    def __len__(self) -> int:
        return self._len

    def set(self, item: Scheduled, wake_ms: int) -> None:
        """(Re)schedule ``item`` to wake at ``wake_ms``."""
        old = item.wake_ms
        if old is not None:
            if old == wake_ms:
                return
            if self._move_lone(item, old, wake_ms):
                return
            self._remove(item, old)
        else:
            self._len += 1
        if wake_ms != self._last_ms:
            self._last_ms = wake_ms
            self._last_box = wake_ms
        item.wake_ms = self._last_box
        # Lanes are kept latest tail first, so the first that fits is the
        # best fit, and appending there keeps that order.  ``_floor``: all
        # lanes are taken and none fits a deadline before it, so a
        # jittered one leaves the loop at the first lane for its bucket.
        lanes = self._lanes
        for lane in lanes:
            if lane.tail <= wake_ms:
                lane.tail = wake_ms
                lane.items.append(item)
                if lane.by_ctime:  # (inline: the hot path of ADDJOB, GETJOB)
                    if not isinstance(item, Ordered):  # a client or a pending reply
                        lane.by_ctime = False
                        return
                    ctime = item._ctime
                    if ctime > lane.last_ctime:
                        lane.last_ctime = ctime
                    else:
                        lane.by_ctime = False
                return
            floor = self._floor
            if floor is not None and wake_ms < floor:
                break
        else:
            if len(lanes) < MAX_LANES:  # a lane earlier than every tail: goes last
                spare = self._spare
                if spare is None:
                    lanes.append(_Lane(item, wake_ms))
                else:
                    self._spare = None
                    items = spare.items
                    if items:  # (the lone entry's list, kept: see _advance)
                        items[0] = item
                    else:
                        items.append(item)
                    spare.start(item, wake_ms)
                    lanes.append(spare)
                return
            self._floor = lanes[-1].tail  # (tails only rise while lanes stay)
        buckets = self._buckets
        bucket = buckets.get(wake_ms)
        if bucket is None:
            buckets[wake_ms] = item
            self._add_key(wake_ms)
        elif type(bucket) is list:
            bucket.append(item)
        else:
            buckets[wake_ms] = [bucket, item]

    def _move_lone(self, item: Scheduled, old: int, wake_ms: int) -> bool:
        """Move ``item`` from ``old`` to ``wake_ms`` in place if it is alone
        in its lane and the new deadline fits no other lane: the lane it
        would start after leaving this one (last: the earliest tail).  A
        replica's lone copy moves on each WORKING and SETACK; emptied, the
        lane left the lane list (its array freed) and joined it again
        (allocated).  False, nothing changed, otherwise."""
        lanes = self._lanes
        n = len(lanes)
        if n == 0:
            return False
        # Lanes are latest tail first: the other lanes' earliest tail is
        # the last one's, or the one's before it when this lane is last.
        lone = lanes[n - 1]
        if lone.first_ms == old and lone.items[lone.head] is item:
            if lone.head != len(lone.items) - 1:
                return False  # (others after it)
            if n > 1 and lanes[n - 2].tail <= wake_ms:
                return False  # (it would join that lane)
        elif wake_ms < lone.tail:  # (so it fits no lane)
            at = -1
            for i in range(n - 1):
                lane = lanes[i]
                if lane.first_ms == old and lane.items[lane.head] is item:
                    at = i
                    break
            if at < 0:
                return False
            lone = lanes[at]
            if lone.head != len(lone.items) - 1:
                return False
            while at < n - 1:  # (now the earliest tail: last)
                lanes[at] = lanes[at + 1]
                at += 1
            lanes[n - 1] = lone
        else:
            return False
        lone.first_ms = wake_ms
        lone.tail = wake_ms
        lone.holes = 0
        lone.after_hole = 0
        if isinstance(item, Ordered):
            lone.by_ctime = True
            lone.last_ctime = item._ctime
        else:
            lone.by_ctime = False
            lone.last_ctime = -1
        self._floor = None  # (a tail went back)
        if wake_ms != self._last_ms:
            self._last_ms = wake_ms
            self._last_box = wake_ms
        item.wake_ms = self._last_box
        return True

    def cancel(self, item: Scheduled) -> None:
        old = item.wake_ms
        if old is not None:
            self._remove(item, old)
            item.wake_ms = None
            self._len -= 1

    def _remove(self, item: Scheduled, key: int) -> None:
        for lane in self._lanes:
            if key > lane.tail or key < lane.first_ms:
                continue  # (outside the lane's deadlines: none of its entries read)
            items = lane.items
            head = lane.head
            first: Scheduled = items[head]
            if first is item:  # the usual case: the oldest goes first
                items[head] = None
                head += 1
                if head & 1023 and head < len(items):
                    after: Scheduled = items[head]
                    if type(after) is not _Hole:
                        lane.head = head
                        lane.first_ms = after.wake_ms  # type: ignore[assignment]  # (live: has one)
                        return
                self._advance(lane, head)
                return
            if items[-1] is item:  # the newest: a job served or acked as soon as set
                self._pop_tail(lane)
                return
            # Not at a head: before searching lanes, its bucket (jittered
            # deadlines on a cluster node are mostly there).
            if self._buckets.size and self._remove_from_bucket(item, key):
                return
            i = _near(items, item, lane.after_hole)
            if i < 0 and not lane.by_ctime:
                # A lane of mixed items (blocked clients' timeouts, then a
                # job's GC retry): the item is mostly a few entries past
                # the head; identity tests first, not two bisections.
                i = _near(items, item, head + 1)
            if i < 0 and lane.by_ctime:  # (acks out of order) one bisection, not the two below
                if not isinstance(item, Ordered):  # not a job: not in this lane
                    continue
                i = _bisect_ctime(items, item._ctime, head, len(items))
                if i == len(items) or items[i] is not item:
                    # Creation times strictly rise along such a lane (a
                    # hole keeps its job's), so the bisection is the
                    # answer: the job is in another lane or a bucket.
                    continue
            if i < 0:
                lo = _bisect_wake(items, key, head, len(items), False)
                hi = _bisect_wake(items, key, lo, len(items), True)
                i = _find_in_run(items, item, lo, hi)
                if i < 0:
                    continue
            if i - head <= NEAR:
                # (a few: one by one, not a slice assignment's ~650)
                while i > head:
                    items[i] = items[i - 1]
                    i -= 1
                items[head] = None
                lane.head = head + 1
            elif i - head <= NEAR_HEAD:
                items[head + 1:i + 1] = items[head:i]
                items[head] = None
                lane.head = head + 1
            else:
                items[i] = _Hole(key, item)
                lane.after_hole = i + 1
                lane.holes += 1
                if lane.holes >= COMPACT_MIN and 2 * lane.holes > len(items) - head:
                    self._compact(lane)
            return
        if not self._remove_from_bucket(item, key):
            raise ValueError(f"{item!r} is not scheduled at {key}")

    def _pop_tail(self, lane: _Lane) -> None:
        """Drop the lane's last item (not its head) and the holes before
        it; the lane's tail goes back to the deadline now last.  A
        consumer's blocked GETJOB (its TIMEOUT) and a job's deadline set
        and removed in the same request would otherwise leave the tail at
        a deadline no longer there: later, earlier deadlines (the next
        GETJOB's) fit no lane, and the lanes fill with items of every kind,
        whose removals then bisect on deadlines (bench/README.md, "A GETJOB
        waiter on the same node")."""
        items = lane.items
        items.pop()
        while type(items[-1]) is _Hole:  # (the head is live: this stops there)
            items.pop()
            lane.holes -= 1
        last: Scheduled = items[-1]
        tail: int = last.wake_ms  # type: ignore[assignment]  # (a live item or a hole has one)
        lane.tail = tail
        # Lanes stay latest tail first (set's best fit), and a deadline
        # before the old floor may fit this one now.
        lanes = self._lanes
        n = len(lanes)
        i = 0
        while lanes[i] is not lane:  # (identity: list.index is a generic call)
            i += 1
        while i + 1 < n and lanes[i + 1].tail > tail:
            lanes[i] = lanes[i + 1]
            i += 1
        lanes[i] = lane
        self._floor = None

    def _remove_from_bucket(self, item: Scheduled, key: int) -> bool:
        buckets = self._buckets
        bucket = buckets.get(key)
        if bucket is item:
            del buckets[key]
            self._drop_key(key)
            return True
        if type(bucket) is list:
            i = _find_in_run(bucket, item, 0, len(bucket))
            if i >= 0:
                del bucket[i]
                if len(bucket) == 1:
                    buckets[key] = bucket[0]
                return True
        return False

    def _add_key(self, key: int) -> None:
        """A bucket was made for ``key``: its key into its slot's heap."""
        no = key >> SLOT_BITS
        first = self._buckets.size == 1  # (then no slot is left either)
        if no == self._last_no:
            slot = self._last
        else:
            found = self._slots.get(no)
            if found is None:
                slot = _Slot()
                self._slots[no] = slot
                heappush(self._slot_heap, no)
            else:
                slot = found
            self._last = slot
            self._last_no = no
        slot.live.add(key)
        heappush(slot.keys, key)
        if first or no < self._top_no:  # (then it is the slot heap's top)
            self._top = slot
            self._top_no = no
            self._keys = slot.keys

    def _drop_key(self, key: int) -> None:
        """The bucket of ``key`` is gone (emptied or popped): its key stays
        in its slot's heap, stale, until it reaches the top (the top is
        always a live bucket's: next_ms and pop_due read it without a
        lookup) or the stale keys outnumber the live ones (one slot's
        heap rebuilt: at most ~2**SLOT_BITS keys, whatever the node holds)."""
        no = key >> SLOT_BITS
        top = self._top
        if no == self._last_no:
            slot = self._last
        else:
            slot = top if no == self._top_no else self._slots[no]
            self._last = slot
            self._last_no = no
        live = slot.live
        live.discard(key)
        if not live:
            del self._slots[no]  # (its number stays in the slot heap, stale)
            slot.keys.clear()
            self._last_no = _NO_SLOT  # (not live any more)
            heap = self._slot_heap
            if len(heap) > 2 * len(self._slots) + STALE_MIN:
                heap[:] = list(self._slots)  # drop the stale slots
                heapify(heap)
            if slot is top:
                self._settle()
            return
        keys = slot.keys
        if len(keys) > 2 * len(live) + STALE_MIN:
            keys[:] = list(live)  # (in place: _keys may be it)
            heapify(keys)
        elif slot is top and keys[0] == key:
            while keys[0] not in live:  # (a live key is left)
                heappop(keys)

    def _settle(self) -> None:
        """The top slot has no live bucket left: the next one with a live
        bucket becomes the top, its stale keys popped off its heap's top."""
        heap = self._slot_heap
        slots = self._slots
        while heap:
            no = heap[0]
            slot = slots.get(no)
            if slot is None:
                heappop(heap)  # stale: a slot emptied
                continue
            keys = slot.keys
            live = slot.live
            while keys[0] not in live:  # (a live key is left)
                heappop(keys)
            self._top = slot
            self._top_no = no
            self._keys = keys
            return

    def _advance(self, lane: _Lane, head: int) -> None:
        """The entry before ``head`` is gone: move the head past holes, drop
        the lane once it is empty, forget what is behind the head."""
        items = lane.items
        end = len(items)
        while head < end and type(items[head]) is _Hole:
            head += 1
            lane.holes -= 1
        if head == end:
            lanes = self._lanes
            last = len(lanes) - 1
            for i in range(last + 1):
                if lanes[i] is lane:
                    # (the few after it moved up one by one: list.remove is
                    # a slice assignment, ~500 instructions, pop(i) ~240)
                    while i < last:
                        lanes[i] = lanes[i + 1]
                        i += 1
                    lanes.pop()
                    break
            self._floor = None  # room for a new lane
            if end > 1:
                items.clear()
            # else the lone entry's list ([None]) is kept for the next lane:
            # cleared, its next append allocates again (a replica's lone
            # copy empties and starts a lane on each WORKING and SETACK)
            self._spare = lane
            return
        if head >= 1024 and 2 * head > end:
            del items[:head]
            head = 0
        lane.head = head
        first: Scheduled = items[head]
        lane.first_ms = first.wake_ms  # type: ignore[assignment]  # (a live item has one)

    def _compact(self, lane: _Lane) -> None:
        lane.items = [i for i in lane.items[lane.head:] if type(i) is not _Hole]
        lane.head = 0
        lane.holes = 0
        lane.after_hole = 0

    def next_ms(self) -> int | None:
        """The earliest deadline, or None."""
        best: _Lane | None = None
        best_key = 0
        for lane in self._lanes:
            key = lane.first_ms
            if best is None or key < best_key:
                best = lane
                best_key = key
        if self._buckets.size:
            key = self._keys[0]
            if best is None or key < best_key:
                return key
        if best is None:
            return None
        # The head item's own boxed deadline: compiled, boxing the int
        # anew was half the call.
        first: Scheduled = best.items[best.head]
        return first.wake_ms

    def pop_due(self, now_ms: int, limit: int) -> list[Any]:
        """Remove and return up to ``limit`` items due at ``now_ms`` (the
        list is not the caller's to change)."""
        due = _NOTHING_DUE
        buckets = self._buckets
        while len(due) < limit:
            best: _Lane | None = None
            best_key = 0
            for lane in self._lanes:
                key = lane.first_ms
                if best is None or key < best_key:
                    best = lane
                    best_key = key
            if buckets.size:
                key = self._keys[0]
                if best is None or key < best_key:
                    if key > now_ms:
                        break
                    if due is _NOTHING_DUE:
                        due = []
                    self._pop_bucket(key, limit - len(due), due)
                    continue
            if best is None or best_key > now_ms:
                break
            if due is _NOTHING_DUE:
                due = []
            head = best.head
            item: Scheduled = best.items[head]  # (typed: a native write of wake_ms)
            best.items[head] = None
            self._advance(best, head + 1)
            item.wake_ms = None
            self._len -= 1
            due.append(item)
        return due

    def _pop_bucket(self, key: int, room: int, due: list[Any]) -> None:
        """Up to ``room`` items of the earliest bucket (due at ``key``, the
        top of the heap) onto ``due``."""
        buckets = self._buckets
        bucket = buckets[key]
        if type(bucket) is list and len(bucket) > room:
            taken = bucket[:room]
            del bucket[:room]
            if len(bucket) == 1:
                buckets[key] = bucket[0]
        else:  # the whole bucket
            taken = bucket if type(bucket) is list else [bucket]
            del buckets[key]
            self._drop_key(key)
        for entry in taken:
            item: Scheduled = entry  # (typed: a native write of wake_ms)
            item.wake_ms = None
        self._len -= len(taken)
        due.extend(taken)
