"""The streaming source.  On the driver, latestOffset leases jobs (GETJOB
NOHANG COUNT) and returns an offset naming them; partitions carries them
to the executors; they are ACKed only once Spark has committed the batch.

When is a batch known committed?  Measured on pyspark 4.3: commit(end) of
batch k arrives only after latestOffset of batch k+1, not at all when no
batch k+1 follows, and never for the last batch before stop or the last
batch of trigger(availableNow=True).  But Spark calls latestOffset(start)
with start = the end of the last batch it committed (also after a restart,
from the checkpoint).  So acks happen at the first of:
  - latestOffset(start): acks every batch up to start; it runs at every
    trigger, even one with no new data, and once more at the end of an
    availableNow run, so only a stop between batches leaves one batch;
  - commit(end): the same, when Spark gets there;
  - AckListener (listener.py) on the driver, on the batch's progress event,
    which Spark posts after writing the commit log: covers the batch
    before a stop;
  - a restarted query: start holds the IDs (offsets.py), acked at once.
Anything still leased comes back through the job's RETRY: at-least-once."""

from __future__ import annotations

import sys
import threading
from typing import Any, Iterator, Optional

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows,
                                              SupportsTriggerAvailableNow)

from . import offsets
from .job_rows import PartitionJobs, Row, rows, split
from .lease import LeasedJob, ack, group, lease, queued, renew
from .nodes import parse_nodes
from .offsets import JobsByNode
from .options import MAX_JOBS_PER_BATCH, SourceOptions


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions, body_binary: bool) -> None:
        self.options = options
        self.body_binary = body_binary
        self.nodes = parse_nodes(options.nodes)
        # Driver state, lost with the driver: everything else is in offsets.
        self._cache: dict[int, list[LeasedJob]] = {}  # seq -> jobs, until planned
        self._planned: dict[int, dict[str, Any]] = {}  # seq -> the offset returned
        self._unacked: dict[int, JobsByNode] = {}  # seq -> leased, not yet acked
        self._acked_through = 0
        self._available_now_left: Optional[int] = None
        self._lock = threading.Lock()
        self._renewer: Optional[threading.Thread] = None
        self._stopping = threading.Event()
        self._turn = 0  # which node leases first: rotates

    def __getstate__(self) -> dict[str, Any]:
        # Spark pickles the reader for read() on the executors: they need
        # the options only, never the driver's leases, lock and thread.
        return {"options": self.options, "body_binary": self.body_binary}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"], state["body_binary"])  # type: ignore[misc]

    # ------------------------------------------------------------ offsets

    def initialOffset(self) -> dict:
        return offsets.initial()

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.options.max_jobs_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        # "What is queued at start": a count, since jobs have no position.
        self._available_now_left = queued(self.nodes, self.options.queues,
                                          self.options.socket_timeout_s)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        self._start_renewer()
        self._ack_through(start)
        seq = offsets.seq_of(start) + 1
        if seq in self._planned:  # asked again before the batch ran
            return self._planned[seq]
        want = limit.max_rows if isinstance(limit, ReadMaxRows) else MAX_JOBS_PER_BATCH
        if isinstance(limit, ReadAllAvailable):
            want = MAX_JOBS_PER_BATCH
        if self._available_now_left is not None:
            want = min(want, self._available_now_left)
        if want <= 0:
            return start
        jobs = lease(self.nodes, self.options.queues, want, self.options.socket_timeout_s,
                     self._turn)
        self._turn += 1
        if not jobs:
            return start
        if self._available_now_left is not None:
            self._available_now_left -= len(jobs)
        end = offsets.make(seq, group(jobs))
        with self._lock:
            self._cache[seq] = jobs
            self._planned[seq] = end
            self._unacked[seq] = offsets.jobs_of(end)
        return end

    def commit(self, end: dict) -> None:
        self._ack_through(end)

    def _ack_through(self, committed: dict) -> None:
        """Ack every batch up to ``committed``: Spark has committed it."""
        through = offsets.seq_of(committed)
        with self._lock:
            if through <= self._acked_through:
                return
            batches = {s: j for s, j in self._unacked.items() if s <= through}
            if through not in batches:  # from the checkpoint: not leased by us
                batches[through] = offsets.jobs_of(committed)
        merged: JobsByNode = {}
        for jobs in batches.values():
            for node, ids in jobs.items():
                merged.setdefault(node, []).extend(ids)
        left = ack(merged, self.nodes, self.options.socket_timeout_s)
        with self._lock:
            for s in batches:
                self._unacked.pop(s, None)
                self._planned.pop(s, None)
                self._cache.pop(s, None)
            if left:  # no node reachable: try again next time
                self._unacked[through] = left
            self._acked_through = through
        if left:
            print(f"trisque source: {offsets.count(left)} acks postponed "
                  f"(no node reachable)", file=sys.stderr)

    # ------------------------------------------------------------ batches

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        seq = offsets.seq_of(end)
        if seq == offsets.seq_of(start):
            return []
        with self._lock:
            jobs = self._cache.pop(seq, None)
        if jobs is None:
            # A batch from the checkpoint: replay it from its IDs.
            replay = [(node, job_id) for node, ids in offsets.jobs_of(end).items()
                      for job_id in ids]
            with self._lock:
                self._unacked.setdefault(seq, offsets.jobs_of(end))
            parts = split([], replay, self.options.partitions)
        else:
            parts = split(jobs, [], self.options.partitions)
        return [InputPartition(p) for p in parts]

    def read(self, partition: InputPartition) -> Iterator[Row]:
        part: PartitionJobs = partition.value
        return rows(part, self.nodes, self.options.socket_timeout_s, self.body_binary)

    # ------------------------------------------------------------ leases

    def _start_renewer(self) -> None:
        """WORKING, every leaseRenewSeconds, on what is leased and not acked,
        so a batch longer than the jobs' RETRY is not delivered twice."""
        if self.options.lease_renew_s <= 0 or self._renewer is not None:
            return
        self._renewer = threading.Thread(target=self._renew_loop, daemon=True,
                                         name="trisque-lease-renewer")
        self._renewer.start()

    def _renew_loop(self) -> None:
        while not self._stopping.wait(self.options.lease_renew_s):
            with self._lock:
                merged: JobsByNode = {}
                for jobs in self._unacked.values():
                    for node, ids in jobs.items():
                        merged.setdefault(node, []).extend(ids)
            renew(merged, self.nodes, self.options.socket_timeout_s)

    def stop(self) -> None:
        self._stopping.set()
