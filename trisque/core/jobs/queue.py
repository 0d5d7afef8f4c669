"""A named queue: jobs in creation-time order (within each priority level,
highest level first), and the clients waiting on it."""

from collections import deque
from itertools import chain, islice
from operator import attrgetter
from typing import Any, Final, Iterator

from sortedcontainers import SortedKeyList

from .job import Job
from .policy import DEFAULT_PRIORITY, MAX_PRIORITY

PAUSED_IN: Final = 1  # (Final: compiled, a constant, not a globals lookup)
PAUSED_OUT: Final = 2
PAUSED_ALL: Final = PAUSED_IN | PAUSED_OUT
PAUSE_NAMES = {0: "none", PAUSED_IN: "in", PAUSED_OUT: "out", PAUSED_ALL: "all"}

# What a queue of one job costs beyond the job, by RSS, compiled (python -m
# bench scale --part queues; bench/README.md "Scale"): maxmemory counts it
# with the name.
QUEUE_OVERHEAD: Final = 600


_CTIME = attrgetter("_ctime")  # ctime less a constant (see Job): same order
SMALL_FIFO: Final = 1024  # remove from the middle of a FIFO this short in place
SMALL_LIST: Final = 32  # a FIFO this short is a list (pop(0) moves at most 256 bytes)


class JobList:
    """A queue's jobs in creation-time (ctime) order, oldest first.

    Jobs nearly always join at the tail (a new job is the newest) and leave
    at the head (GETJOB takes the oldest).  A deque does both in O(1), in
    less memory and time than a SortedKeyList (bench/README.md, "Queues").
    So the list is a FIFO until a job joins anywhere but the tail (a
    requeue, a job from another node) or leaves from the middle of a long
    queue (DEQUEUE, an ack, expiry out of order); then it becomes a
    SortedKeyList, O(log n) for everything, until it is empty again.
    Either way it reads like a sorted list: len, iteration, indexing and
    slicing, oldest first.

    The FIFO is a plain list up to SMALL_LIST jobs and a deque past that,
    until it empties: an empty deque costs 760 bytes, a list 56, and most
    queues of a node with many hold a few jobs (bench/README.md, "Scale").

    Priorities (docs/lifecycle.md): the jobs of one level, whichever it
    is, are a FIFO (or sorted) list as above, ``_level`` saying which;
    once a job of another level joins, ``_sorted`` holds a ``Levels`` (one
    JobList per level, read highest level first) until the list is empty
    again.  A queue whose jobs all have the same level never takes that
    branch: plain jobs, or all at PRIORITY 7, take the same fast path.
    """

    __slots__ = ("_fifo", "_sorted", "_level", "_tail", "_append", "_popleft")
    _fifo: list[Job] | deque[Job]
    _sorted: Any  # a SortedKeyList of Job, a Levels, or None
    _level: int  # the level of all its jobs while not a Levels
    # For add() and pop(0) on a deque without a generic item read and method
    # calls (compiled): the newest FIFO job's _ctime while _fifo holds jobs,
    # and the deque's bound append and popleft (None while _fifo is a list).
    _tail: int
    _append: Any
    _popleft: Any

    def __init__(self) -> None:
        self._fifo = []
        self._sorted = None
        self._level = DEFAULT_PRIORITY
        self._tail = 0
        self._append = None
        self._popleft = None

    def __len__(self) -> int:
        s = self._sorted
        return len(self._fifo) if s is None else len(s)

    def __bool__(self) -> bool:
        # (compiled, ``if queue.jobs`` calls this natively, not len's
        # generic slot; a deque is never empty: drained, it is a list again)
        s = self._sorted
        if s is None:
            fifo = self._fifo
            return not isinstance(fifo, list) or len(fifo) > 0
        return bool(s)

    def __iter__(self) -> Iterator[Job]:
        s = self._sorted
        return iter(self._fifo if s is None else s)

    def __reversed__(self) -> Iterator[Job]:
        s = self._sorted
        return reversed(self._fifo if s is None else s)

    def __getitem__(self, key: Any) -> Any:
        s = self._sorted
        if s is not None:
            return s[key]
        fifo = self._fifo
        if key.__class__ is not slice or isinstance(fifo, list):
            return fifo[key]
        size = len(fifo)
        start, stop, step = key.indices(size)
        if step != 1:
            return list(fifo)[key]
        if stop <= start:
            return []
        if start > size - stop:  # nearer the tail: walk from there
            picked = list(islice(reversed(fifo), size - stop, size - start))
            picked.reverse()
            return picked
        return list(islice(fifo, start, stop))

    def add(self, job: Job) -> None:
        s = self._sorted
        level = job._common.level if job._rare is None else level_of(job)
        if s is None:
            ctime = job._ctime
            fifo = self._fifo
            append = self._append
            if append is None and isinstance(fifo, list):  # (compiled: native list calls)
                if not fifo:
                    self._level = level
                    self._tail = ctime
                    fifo.append(job)
                    return
                if level == self._level and self._tail < ctime:
                    self._tail = ctime
                    if len(fifo) < SMALL_LIST:
                        fifo.append(job)
                    else:
                        grown = self._fifo = deque(fifo)
                        self._append = grown.append
                        self._popleft = grown.popleft
                        grown.append(job)
                    return
            elif append is not None and level == self._level and self._tail < ctime:
                # a deque (never empty: drained, it is a list again)
                self._tail = ctime
                append(job)
                return
            if level == self._level:
                s = self._make_sorted()
            else:
                s = self._make_levels()
        elif level != self._level and s.__class__ is not Levels:
            s = self._make_levels()
        s.add(job)

    def pop(self, index: int = -1) -> Job:
        s = self._sorted
        if s is None:
            fifo = self._fifo
            if isinstance(fifo, list):
                taken = fifo.pop(index)
                if index and fifo:
                    self._tail = fifo[-1]._ctime
                return taken
            if index == 0:
                taken = self._popleft()
            elif index == -1:
                taken = fifo.pop()
            else:
                taken = fifo[index]
                del fifo[index]
            if not fifo:
                self._fifo = []  # drained: small again
                self._append = self._popleft = None
            elif index:
                self._tail = fifo[-1]._ctime
            return taken
        job: Job = s.pop(index)  # (sortedcontainers is untyped)
        if not s:
            self._sorted = None
        return job

    def remove(self, job: Job) -> None:
        s = self._sorted
        if s is None:
            fifo = self._fifo
            if isinstance(fifo, list):
                fifo.remove(job)  # ValueError if absent, as SortedKeyList
                if fifo:
                    self._tail = fifo[-1]._ctime
                return
            if len(fifo) <= SMALL_FIFO:
                fifo.remove(job)
                if not fifo:
                    self._fifo = []
                    self._append = self._popleft = None
                else:
                    self._tail = fifo[-1]._ctime
                return
            if fifo[0] is job:
                fifo.popleft()
                return
            if fifo[-1] is job:
                fifo.pop()
                self._tail = fifo[-1]._ctime  # (longer than SMALL_FIFO: not empty)
                return
            s = self._make_sorted()
        s.remove(job)
        if not s:
            self._sorted = None

    def _make_sorted(self) -> Any:
        s = self._sorted = SortedKeyList(self._fifo, key=_CTIME)
        self._fifo = []
        self._append = self._popleft = None
        return s

    def _make_levels(self) -> "Levels":
        """A job of another level joins: the list becomes a Levels."""
        one = JobList()  # what the list held: all of one level
        one._fifo, one._sorted, one._level = self._fifo, self._sorted, self._level
        one._tail, one._append, one._popleft = self._tail, self._append, self._popleft
        s = self._sorted = Levels(one)
        self._fifo = []
        self._append = self._popleft = None
        return s

    def add_any(self, job: Job) -> None:
        """add() (which reads the job's level now)."""
        self.add(job)

    def levels(self) -> list[tuple[int, int]] | None:
        """(level, jobs) highest first, if jobs of a level other than the
        default are here; else None."""
        s = self._sorted
        if s.__class__ is Levels:
            found: list[tuple[int, int]] = s.levels()
            return found
        if self._level != DEFAULT_PRIORITY and len(self):
            return [(self._level, len(self))]
        return None


def level_of(job: Job) -> int:
    """The job's priority level (policy.py): the default unless set.  A
    policy of the job's own (in ``_rare``) is read afresh: it may change."""
    rare = job._rare
    if rare is not None:
        policy = rare.get("policy")
        if policy is not None:
            level: int = policy.priority
            return level or DEFAULT_PRIORITY
    return job._common.level


class Levels:
    """A queue's jobs by priority level: one JobList per level that has had
    jobs, each in ctime order; read (iteration, indexing, pop(0)) highest
    level first, so GETJOB, QPEEK and federation's YOURJOBS all take high
    levels first."""

    __slots__ = ("lists", "size")
    lists: list[JobList | None]  # index: the level (0 unused); None: never used
    size: int

    def __init__(self, first: JobList) -> None:
        lists: list[JobList | None] = [None] * (MAX_PRIORITY + 1)
        lists[first._level] = first
        self.lists = lists
        self.size = len(first)

    def _used(self) -> list[JobList]:
        """The levels' lists, highest level first."""
        return [jobs for jobs in reversed(self.lists) if jobs is not None]

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[Job]:
        return chain.from_iterable(self._used())

    def __reversed__(self) -> Iterator[Job]:
        used = self._used()
        used.reverse()
        return chain.from_iterable(reversed(jobs) for jobs in used)

    def __getitem__(self, key: Any) -> Any:
        size = self.size
        if key.__class__ is slice:
            start, stop, step = key.indices(size)
            if step != 1:
                return list(self)[key]
            if stop <= start:
                return []
            if start > size - stop:
                picked = list(islice(reversed(self), size - stop, size - start))
                picked.reverse()
                return picked
            return list(islice(iter(self), start, stop))
        index: int = key
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("queue index out of range")
        for jobs in self._used():
            if index < len(jobs):
                return jobs[index]
            index -= len(jobs)
        raise IndexError("queue index out of range")

    def levels(self) -> list[tuple[int, int]]:
        """(level, jobs) of every level holding jobs, highest first."""
        return [(level, len(jobs)) for level, jobs in reversed(list(enumerate(self.lists)))
                if jobs]

    def add(self, job: Job) -> None:
        level = level_of(job)
        jobs = self.lists[level]
        if jobs is None:
            jobs = self.lists[level] = JobList()
            jobs._level = level
        jobs.add(job)
        self.size += 1

    def pop(self, index: int = -1) -> Job:
        if index == 0 or index == -1:
            used = self._used()
            if index == -1:
                used.reverse()
            for jobs in used:
                if jobs:
                    self.size -= 1
                    return jobs.pop(index)
            raise IndexError("pop from an empty queue")
        job: Job = self[index]
        self.remove(job)
        return job

    def remove(self, job: Job) -> None:
        jobs = self.lists[level_of(job)]
        if jobs is None:
            raise ValueError("job not in queue")
        jobs.remove(job)
        self.size -= 1


class Queue:
    __slots__ = (
        "name", "jobs", "blocked", "paused", "ctime_s", "atime_s",
        "jobs_in", "jobs_out", "acks", "nacks", "dead_letters", "consumer_ms",
        # federation (cluster/federation.py)
        "import_from", "import_buckets", "needjobs_bcast_ms",
        "needjobs_bcast_attempt", "needjobs_adhoc_ms", "needjobs_adhoc_attempt",
    )
    name: bytes
    jobs: JobList
    blocked: dict[Any, None]
    paused: int
    ctime_s: int
    atime_s: int
    jobs_in: int
    jobs_out: int
    acks: int
    nacks: int
    dead_letters: int
    consumer_ms: int
    import_from: dict[str, int] | None  # None until a job is imported
    import_buckets: Any
    needjobs_bcast_ms: int
    needjobs_bcast_attempt: int
    needjobs_adhoc_ms: int
    needjobs_adhoc_attempt: int

    def __init__(self, name: bytes, now_s: int) -> None:
        self.name = name
        # FIFO by ctime: creation time, not arrival, so requeued jobs keep
        # their place among the others.
        self.jobs = JobList()
        self.blocked = {}  # clients waiting in GETJOB, in arrival order
        self.paused = 0
        self.ctime_s = now_s
        self.atime_s = now_s
        self.jobs_in = 0
        self.jobs_out = 0
        self.consumer_ms = 0  # when a GETJOB last asked for it (requeue.py)
        self.acks = 0  # ACKJOBs here of its jobs (while the queue exists)
        self.nacks = 0
        self.dead_letters = 0  # its jobs moved to their dead-letter queue here
        self.import_from = None  # node id -> ms of its last YOURJOBS (made on the first)
        self.import_buckets = None
        self.needjobs_bcast_ms = 0
        self.needjobs_bcast_attempt = 0
        self.needjobs_adhoc_ms = 0
        self.needjobs_adhoc_attempt = 0

    def __len__(self) -> int:
        return len(self.jobs)

    def levels(self) -> list[tuple[int, int]] | None:
        """(level, jobs) highest first, if jobs of a level other than the
        default are queued; else None (a plain queue)."""
        return self.jobs.levels()

    def pause_name(self) -> str:
        return PAUSE_NAMES[self.paused]
