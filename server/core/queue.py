"""A named queue: jobs in creation-time order, and the clients waiting on it."""

from operator import attrgetter

from sortedcontainers import SortedKeyList

PAUSED_IN = 1
PAUSED_OUT = 2
PAUSED_ALL = PAUSED_IN | PAUSED_OUT
PAUSE_NAMES = {0: "none", PAUSED_IN: "in", PAUSED_OUT: "out", PAUSED_ALL: "all"}

QUEUE_OVERHEAD = 600  # bytes per queue, for maxmemory accounting


class Queue:
    __slots__ = (
        "name", "jobs", "blocked", "paused", "ctime_s", "atime_s",
        "jobs_in", "jobs_out",
        # federation (cluster/federation.py)
        "import_from", "import_buckets", "needjobs_bcast_ms",
        "needjobs_bcast_attempt", "needjobs_adhoc_ms", "needjobs_adhoc_attempt",
    )

    def __init__(self, name, now_s):
        self.name = name
        # FIFO by ctime: creation time, not arrival, so requeued jobs keep
        # their place among the others.
        self.jobs = SortedKeyList(key=attrgetter("ctime"))
        self.blocked = {}  # clients waiting in GETJOB, in arrival order
        self.paused = 0
        self.ctime_s = now_s
        self.atime_s = now_s
        self.jobs_in = 0
        self.jobs_out = 0
        self.import_from = {}  # node id -> ms of its last YOURJOBS
        self.import_buckets = None
        self.needjobs_bcast_ms = 0
        self.needjobs_bcast_attempt = 0
        self.needjobs_adhoc_ms = 0
        self.needjobs_adhoc_attempt = 0

    def __len__(self):
        return len(self.jobs)

    def pause_name(self):
        return PAUSE_NAMES[self.paused]
