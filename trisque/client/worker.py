"""``Worker``: a consumer loop that runs a handler per queue on threads.

Each of ``concurrency`` threads takes one job at a time (GETJOB from every
handled queue), runs the queue's handler, then:

- the handler returned: ACKJOB (to the job's creator first);
- the handler raised: never an ACK.  ``on_failure(client, job, error)``
  decides; the default, ``nack_on_failure``, NACKs the job so that it is
  delivered again at once.  This is the hook for a dead-letter policy.

Heartbeats.  A job that runs longer than ``first_heartbeat_s`` gets a
WORKING, which postpones its requeue by its RETRY and answers that RETRY;
then another WORKING every ``heartbeat_fraction`` of it (half by default),
so a long job is not delivered twice while it runs.  At-most-once jobs
(RETRY 0, an even ID suffix) get none.  A -TOOLATE (half the job's TTL
passed) or -NOJOB ends the heartbeats of that job.

Shutdown.  ``stop()`` (or SIGTERM/SIGINT while ``run()`` runs in the main
thread) stops taking jobs: a job GETJOB brings after that is NACKed at
once.  The jobs in hand may finish (and be ACKed) within
``shutdown_timeout_s``; at that deadline the ones still running are
NACKed, their handlers' outcome ignored, and ``run()`` returns (their
threads are daemons: the process may exit).

The asyncio twin is ``AsyncWorker`` (async_worker.py); both keep their
jobs in hand in ``JobsInHand``.
"""

import logging
import signal
import threading
import time
from dataclasses import dataclass
from types import FrameType
from typing import Any, Callable, Final, Mapping, Optional

from trisque.client.errors import NoJobError, TooLateError, TrisqueError
from trisque.client.replies import Job
from trisque.client.sync import Client

log = logging.getLogger("trisque.client.worker")

Handler = Callable[[Job], None]
FailurePolicy = Callable[[Client, Job, BaseException], None]

NO_HEARTBEAT: Final = float("inf")
HEARTBEAT_TICK_S: Final = 0.1  # how often the heartbeat loop looks at the jobs in hand
ERROR_BACKOFF_S: Final = (0.1, 2.0)  # first and largest pause after a failed GETJOB


def nack_on_failure(client: Client, job: Job, error: BaseException) -> None:
    """The default failure policy: give the job back at once (NACK)."""
    client.nack(job.id)


def has_retry(job_id: str) -> bool:
    """Odd TTL digits at the end of the ID: the job may be requeued."""
    try:
        return int(job_id[-4:], 16) & 1 == 1
    except ValueError:
        return False


@dataclass
class InHand:
    job: Job
    taken_at: float
    next_heartbeat_at: float
    abandoned: bool = False  # NACKed at the shutdown deadline: ignore the outcome


class JobsInHand:
    """The jobs a worker is running, and when each needs a WORKING.
    Thread-safe: the consumer threads and the heartbeat loop share it."""

    first_heartbeat_s: float
    heartbeat_fraction: float
    _jobs: dict[str, InHand]
    _lock: threading.Lock

    def __init__(self, first_heartbeat_s: float, heartbeat_fraction: float) -> None:
        if not 0 < heartbeat_fraction < 1:
            raise ValueError("heartbeat_fraction must be between 0 and 1")
        self.first_heartbeat_s = first_heartbeat_s
        self.heartbeat_fraction = heartbeat_fraction
        self._jobs = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._jobs)

    def take(self, job: Job, now_s: float) -> None:
        beat = now_s + self.first_heartbeat_s if has_retry(job.id) else NO_HEARTBEAT
        with self._lock:
            self._jobs[job.id] = InHand(job, now_s, beat)

    def finish(self, job_id: str) -> bool:
        """The job's handler is done: whether its outcome still counts
        (False once the job was abandoned at the shutdown deadline)."""
        with self._lock:
            entry = self._jobs.pop(job_id, None)
        return entry is not None and not entry.abandoned

    def due(self, now_s: float) -> list[str]:
        with self._lock:
            return [job_id for job_id, entry in self._jobs.items()
                    if not entry.abandoned and entry.next_heartbeat_at <= now_s]

    def beaten(self, job_id: str, retry_s: Optional[int], now_s: float) -> None:
        """A WORKING answered ``retry_s`` (None: it failed for good)."""
        with self._lock:
            entry = self._jobs.get(job_id)
            if entry is None:
                return
            if retry_s is None or retry_s <= 0:
                entry.next_heartbeat_at = NO_HEARTBEAT
            else:
                entry.next_heartbeat_at = now_s + retry_s * self.heartbeat_fraction

    def abandon_all(self) -> list[Job]:
        """Mark every job in hand abandoned; the jobs, to NACK."""
        with self._lock:
            entries = [e for e in self._jobs.values() if not e.abandoned]
            for entry in entries:
                entry.abandoned = True
        return [entry.job for entry in entries]


class Worker:
    """Runs ``handlers[queue](job)`` for the jobs of each queue (module
    docstring: ACK, NACK, heartbeats, shutdown)."""

    client: Client
    handlers: dict[str, Handler]
    concurrency: int
    on_failure: FailurePolicy
    shutdown_timeout_s: float
    poll_ms: int
    in_hand: JobsInHand
    _stopping: threading.Event
    _threads: list[threading.Thread]

    def __init__(self, client: Client, handlers: Mapping[str, Handler], *,
                 concurrency: int = 1, on_failure: FailurePolicy = nack_on_failure,
                 shutdown_timeout_s: float = 30.0, first_heartbeat_s: float = 0.4,
                 heartbeat_fraction: float = 0.5, poll_ms: int = 1000) -> None:
        if not handlers:
            raise ValueError("a worker needs at least one queue handler")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.client = client
        self.handlers = dict(handlers)
        self.concurrency = concurrency
        self.on_failure = on_failure
        self.shutdown_timeout_s = shutdown_timeout_s
        self.poll_ms = poll_ms
        self.in_hand = JobsInHand(first_heartbeat_s, heartbeat_fraction)
        self._stopping = threading.Event()
        self._threads = []

    def stop(self) -> None:
        """Stop taking jobs; run() then finishes or NACKs the jobs in hand.
        Safe from a signal handler and from any thread."""
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def run(self, install_signal_handlers: bool = True) -> None:
        """Work until stop() or SIGTERM/SIGINT, then shut down (module
        docstring).  Signal handlers are installed only from the main
        thread, and restored on return."""
        previous: dict[int, Any] = {}
        if install_signal_handlers and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, self._on_signal)
        try:
            self._threads = [threading.Thread(target=self._consume, daemon=True,
                                              name=f"trisque-worker-{i}")
                             for i in range(self.concurrency)]
            beats = threading.Thread(target=self._heartbeats, daemon=True,
                                     name="trisque-worker-heartbeats")
            for thread in self._threads:
                thread.start()
            beats.start()
            while not self._stopping.wait(0.2):
                pass
            self._shutdown()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)

    def _on_signal(self, signum: int, frame: Optional[FrameType]) -> None:
        log.info("signal %d: stopping, finishing the jobs in hand", signum)
        self.stop()

    def _shutdown(self) -> None:
        deadline = time.monotonic() + self.shutdown_timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        abandoned = self.in_hand.abandon_all()
        if abandoned:
            log.warning("shutdown deadline: NACKing %d job(s) still running", len(abandoned))
            try:
                self.client.nack(*(job.id for job in abandoned))
            except TrisqueError as e:  # requeued after their RETRY anyway
                log.error("NACK at shutdown failed: %s", e)

    def _consume(self) -> None:
        queues = list(self.handlers)
        backoff_s = ERROR_BACKOFF_S[0]
        while not self._stopping.is_set():
            try:
                jobs = self.client.get_jobs(queues, timeout_ms=self.poll_ms, withcounters=True)
            except TrisqueError as e:
                log.warning("GETJOB failed: %s", e)
                self._stopping.wait(backoff_s)
                backoff_s = min(backoff_s * 2, ERROR_BACKOFF_S[1])
                continue
            backoff_s = ERROR_BACKOFF_S[0]
            for job in jobs:
                if self._stopping.is_set():
                    self._give_back(job)
                else:
                    self._handle(job)

    def _give_back(self, job: Job) -> None:
        try:
            self.client.nack(job.id)
        except TrisqueError as e:
            log.error("NACK of %s failed: %s", job.id, e)

    def _handle(self, job: Job) -> None:
        self.in_hand.take(job, time.monotonic())
        error: Optional[BaseException] = None
        try:
            self.handlers[job.queue](job)
        except Exception as e:
            error = e
            log.exception("handler for %s failed on job %s", job.queue, job.id)
        if not self.in_hand.finish(job.id):
            return  # NACKed at the shutdown deadline already
        try:
            if error is None:
                self.client.ack(job.id)
            else:
                self.on_failure(self.client, job, error)
        except Exception as e:  # the job comes back after its RETRY
            log.error("settling job %s failed: %s", job.id, e)

    def _heartbeats(self) -> None:
        # Until stopped with no job in hand (jobs finishing after stop()
        # still need their WORKING).
        while not (self._stopping.is_set() and not len(self.in_hand)):
            time.sleep(HEARTBEAT_TICK_S)
            for job_id in self.in_hand.due(time.monotonic()):
                try:
                    retry_s: Optional[int] = self.client.working(job_id)
                except (TooLateError, NoJobError) as e:
                    log.warning("no more WORKING for %s: %s", job_id, e)
                    retry_s = None
                except TrisqueError as e:
                    log.warning("WORKING for %s failed, trying again: %s", job_id, e)
                    continue
                self.in_hand.beaten(job_id, retry_s, time.monotonic())
