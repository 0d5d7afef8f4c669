"""``AsyncWorker``: Worker's rules (worker.py) on asyncio tasks.

``concurrency`` consumer tasks each take one job at a time and await the
queue's coroutine handler; a heartbeat task sends the WORKINGs.  Shutdown:
``stop()``, or SIGTERM/SIGINT (installed on the running loop when
possible), then the jobs in hand may finish within ``shutdown_timeout_s``;
at the deadline the tasks still running are cancelled and their jobs
NACKed (a cancelled handler is a job not done: never ACKed).
"""

import asyncio
import logging
import signal
import time
from typing import Awaitable, Callable, Mapping, Optional

from trisque.client.aio import AsyncClient
from trisque.client.errors import NoJobError, TooLateError, TrisqueError
from trisque.client.replies import Job
from trisque.client.worker import ERROR_BACKOFF_S, HEARTBEAT_TICK_S, JobsInHand

log = logging.getLogger("trisque.client.worker")

AsyncHandler = Callable[[Job], Awaitable[None]]
AsyncFailurePolicy = Callable[[AsyncClient, Job, BaseException], Awaitable[None]]


async def nack_on_failure(client: AsyncClient, job: Job, error: BaseException) -> None:
    """The default failure policy: give the job back at once (NACK)."""
    await client.nack(job.id)


class AsyncWorker:
    """Runs ``await handlers[queue](job)`` for the jobs of each queue."""

    client: AsyncClient
    handlers: dict[str, AsyncHandler]
    concurrency: int
    on_failure: AsyncFailurePolicy
    shutdown_timeout_s: float
    poll_ms: int
    in_hand: JobsInHand
    _stopping: Optional[asyncio.Event]
    _stop_requested: bool

    def __init__(self, client: AsyncClient, handlers: Mapping[str, AsyncHandler], *,
                 concurrency: int = 1, on_failure: AsyncFailurePolicy = nack_on_failure,
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
        self._stopping = None
        self._stop_requested = False

    def stop(self) -> None:
        """Stop taking jobs (from the worker's loop, or a signal handler)."""
        self._stop_requested = True
        if self._stopping is not None:
            self._stopping.set()

    @property
    def stopping(self) -> bool:
        return self._stop_requested

    async def run(self, install_signal_handlers: bool = True) -> None:
        """Work until stop() or SIGTERM/SIGINT, then shut down."""
        loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        if self._stop_requested:
            self._stopping.set()
        installed: list[int] = []
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                try:
                    loop.add_signal_handler(sig, self._on_signal, int(sig))
                    installed.append(sig)
                except (NotImplementedError, RuntimeError, ValueError):
                    pass  # not the main thread, or no signals on this platform
        consumers = [asyncio.create_task(self._consume()) for _ in range(self.concurrency)]
        beats = asyncio.create_task(self._heartbeats())
        try:
            await self._stopping.wait()
            await self._shutdown(consumers)
        finally:
            for number in installed:
                loop.remove_signal_handler(number)
            for task in consumers + [beats]:
                task.cancel()
            await asyncio.gather(*consumers, beats, return_exceptions=True)

    def _on_signal(self, signum: int) -> None:
        log.info("signal %d: stopping, finishing the jobs in hand", signum)
        self.stop()

    async def _shutdown(self, consumers: list["asyncio.Task[None]"]) -> None:
        _, running = await asyncio.wait(consumers, timeout=self.shutdown_timeout_s)
        abandoned = self.in_hand.abandon_all()
        for task in running:
            task.cancel()
        if abandoned:
            log.warning("shutdown deadline: NACKing %d job(s) still running", len(abandoned))
            try:
                await self.client.nack(*(job.id for job in abandoned))
            except TrisqueError as e:  # requeued after their RETRY anyway
                log.error("NACK at shutdown failed: %s", e)

    async def _consume(self) -> None:
        queues = list(self.handlers)
        backoff_s = ERROR_BACKOFF_S[0]
        while not self._stop_requested:
            try:
                jobs = await self.client.get_jobs(queues, timeout_ms=self.poll_ms,
                                                  withcounters=True)
            except TrisqueError as e:
                log.warning("GETJOB failed: %s", e)
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, ERROR_BACKOFF_S[1])
                continue
            backoff_s = ERROR_BACKOFF_S[0]
            for job in jobs:
                if self._stop_requested:
                    await self._give_back(job)
                else:
                    await self._handle(job)

    async def _give_back(self, job: Job) -> None:
        try:
            await self.client.nack(job.id)
        except TrisqueError as e:
            log.error("NACK of %s failed: %s", job.id, e)

    async def _handle(self, job: Job) -> None:
        self.in_hand.take(job, time.monotonic())
        error: Optional[BaseException] = None
        try:
            await self.handlers[job.queue](job)
        except asyncio.CancelledError:
            self.in_hand.finish(job.id)  # abandoned: NACKed by _shutdown
            raise
        except Exception as e:
            error = e
            log.exception("handler for %s failed on job %s", job.queue, job.id)
        if not self.in_hand.finish(job.id):
            return
        try:
            if error is None:
                await self.client.ack(job.id)
            else:
                await self.on_failure(self.client, job, error)
        except Exception as e:  # the job comes back after its RETRY
            log.error("settling job %s failed: %s", job.id, e)

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_TICK_S)
            for job_id in self.in_hand.due(time.monotonic()):
                try:
                    retry_s: Optional[int] = await self.client.working(job_id)
                except (TooLateError, NoJobError) as e:
                    log.warning("no more WORKING for %s: %s", job_id, e)
                    retry_s = None
                except TrisqueError as e:
                    log.warning("WORKING for %s failed, trying again: %s", job_id, e)
                    continue
                self.in_hand.beaten(job_id, retry_s, time.monotonic())
