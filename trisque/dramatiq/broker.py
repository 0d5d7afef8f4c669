"""A dramatiq broker on Disque's jobs: each message a replicated job.

``enqueue`` is one ADDJOB (the message's JSON as the body), held by
``replicate`` nodes before it returns; a delayed message is the job's
DELAY, queued on its own queue when due (dramatiq's Redis broker keeps it
in a delay queue that a worker holds in memory until then).  A consumer's
GETJOB takes messages; ``ack`` is ACKJOB, ``requeue`` (a worker stopping
with messages it had not started) is NACK, and a worker that dies holding
a message loses nothing: the job comes back after its RETRY
(``visibility_timeout_s``).  ``nack`` (the message failed for good) is
``NACK id REASON <the exception> DEAD``: the job itself moves to its
dead-letter queue ``<queue>.XQ`` (the name dramatiq's Redis broker uses;
each message is added with ``DEADLETTER <queue>.XQ``) on every node that
holds it, never delivered from its queue again, kept until its TTL.  ``TrisqueResultBackend`` keeps results for the Results
middleware on every node (trisque/client/every_node.py).
"""

from __future__ import annotations

import math
import time
from typing import Any, Iterable, Optional

import dramatiq
from dramatiq.broker import Consumer, MessageProxy
from dramatiq.common import compute_backoff, current_millis, dq_name, q_name, xq_name
from dramatiq.errors import ConnectionClosed, QueueJoinTimeout
from dramatiq.message import Message
from dramatiq.results.backend import Missing, ResultBackend

from trisque.client import Client, Job
from trisque.client.errors import NodeError, NoNodeAvailableError, TrisqueError
from trisque.client.every_node import EveryNode

DAY_S = 86400
BLOCK_MS = 1000  # the longest GETJOB wait: a stopping worker notices within it


class TrisqueBroker(dramatiq.Broker):
    """``TrisqueBroker(nodes="h1:7711,h2:7711")`` (or a list, or a Client)."""

    def __init__(self, nodes: Any = "127.0.0.1:7711", *, client: Optional[Client] = None,
                 replicate: Optional[int] = None, visibility_timeout_s: int = 3600,
                 add_timeout_ms: int = 5000, ttl_s: int = DAY_S,
                 dead_message_ttl_s: int = 7 * DAY_S, middleware: Any = None,
                 **client_options: Any) -> None:
        super().__init__(middleware=middleware)
        if isinstance(nodes, str):
            nodes = [n for n in nodes.replace(";", ",").split(",") if n.strip()]
        self.client = client or Client(nodes, **client_options)
        self.replicate = replicate
        self.visibility_timeout_s = visibility_timeout_s
        self.add_timeout_ms = add_timeout_ms
        self.ttl_s = ttl_s
        self.dead_message_ttl_s = dead_message_ttl_s
        self.queues: set[str] = set()

    def close(self) -> None:
        self.client.close()

    def consume(self, queue_name: str, prefetch: int = 1, timeout: int = 30000) -> Consumer:
        return _TrisqueConsumer(self, queue_name, prefetch, timeout)

    def declare_queue(self, queue_name: str) -> None:
        if queue_name not in self.queues:
            self.emit_before("declare_queue", queue_name)
            self.queues.add(queue_name)
            self.emit_after("declare_queue", queue_name)

    def add(self, queue_name: str, body: bytes, *, delay_s: int = 0, ttl_s: int,
            dead_letter: Optional[str] = None) -> str:
        retry = min(self.visibility_timeout_s, max(1, ttl_s + delay_s - 1))
        try:
            return self.client.add_job(queue_name, body, timeout_ms=self.add_timeout_ms,
                                       replicate=self.replicate, delay_s=delay_s or None,
                                       retry_s=retry, ttl_s=ttl_s + delay_s,
                                       dead_letter=dead_letter)
        except (NodeError, NoNodeAvailableError) as e:
            raise ConnectionClosed(e) from None

    def enqueue(self, message: Message, *, delay: Optional[int] = None) -> Message:
        """``delay`` in ms, as dramatiq gives it: rounded up to the
        second, DELAY's unit."""
        queue_name = q_name(message.queue_name)
        self.declare_queue(queue_name)
        delay_s = math.ceil(delay / 1000) if delay else 0
        self.emit_before("enqueue", message, delay)
        self.add(queue_name, message.encode(), delay_s=delay_s, ttl_s=self.ttl_s,
                 dead_letter=xq_name(queue_name))
        self.emit_after("enqueue", message, delay)
        return message

    def get_declared_queues(self) -> set[str]:
        return self.queues.copy()

    def get_declared_delay_queues(self) -> set[str]:
        return set()  # delays are the jobs' own: no delay queue to consume

    def flush(self, queue_name: str) -> None:
        """Removes the jobs the preferred node has queued (FASTACK: gone
        from every node that holds them)."""
        for name in (queue_name, dq_name(queue_name), xq_name(queue_name)):
            while True:
                jobs = self.client.get_jobs(name, count=1000, nohang=True)
                if not jobs:
                    break
                self.client.fast_ack(*(job.id for job in jobs))

    def flush_all(self) -> None:
        for queue_name in self.queues:
            self.flush(queue_name)

    def join(self, queue_name: str, min_successes: int = 2, *,
             timeout: Optional[int] = None) -> None:
        """Waits until no job of the queue is left on the preferred node,
        queued or in a worker's hands, ``min_successes`` checks in a row."""
        deadline = None if timeout is None else time.monotonic() + timeout / 1000
        successes = 0
        while successes < min_successes:
            if deadline is not None and time.monotonic() > deadline:
                raise QueueJoinTimeout(queue_name)
            left = next(iter(self.client.jscan(queue=queue_name, count=100)), None)
            successes = successes + 1 if left is None else 0
            time.sleep(0.1)


class _TrisqueMessage(MessageProxy):
    def __init__(self, job: Job) -> None:
        super().__init__(Message.decode(job.body))
        self.job_id = job.id


class _TrisqueConsumer(Consumer):
    def __init__(self, broker: TrisqueBroker, queue_name: str, prefetch: int,
                 timeout: int) -> None:
        self.broker = broker
        self.client = broker.client
        self.queue_name = queue_name
        self.prefetch = prefetch
        self.timeout_ms = timeout
        self.cache: list[_TrisqueMessage] = []
        self.outstanding = 0  # taken, neither acked nor nacked nor requeued
        self.misses = 0  # calls in a row that found the prefetch full

    def _settled(self, ids: Iterable[str], command: str) -> None:
        try:
            ids = list(ids)
            if command == "ACKJOB":
                self.client.ack(*ids)
            else:
                self.client.nack(*ids)
        except (NodeError, NoNodeAvailableError) as e:
            raise ConnectionClosed(e) from None

    def ack(self, message: MessageProxy) -> None:
        self.outstanding -= 1
        self._settled([message.job_id], "ACKJOB")

    def nack(self, message: MessageProxy) -> None:
        """Failed for good: the job to its dead-letter queue (NACK ...
        DEAD), the exception as its last error.  If no node moved it (the
        node asked holds no copy in a worker's hands any more), a copy goes
        to the dead-letter queue for ``dead_message_ttl_s`` and the job is
        acked, as before NACK ... DEAD."""
        self.outstanding -= 1
        error = message._exception
        reason = None if error is None else f"{type(error).__name__}: {error}"
        try:
            moved = self.client.nack_dead(message.job_id, reason=reason)
        except (NodeError, NoNodeAvailableError) as e:
            raise ConnectionClosed(e) from None
        if not moved:
            dead = message.copy(options={"dead_at": current_millis()})
            self.broker.add(xq_name(self.queue_name), dead.encode(),
                            ttl_s=self.broker.dead_message_ttl_s)
            self._settled([message.job_id], "ACKJOB")

    def requeue(self, messages: Iterable[MessageProxy]) -> None:
        ids = [m.job_id for m in messages]
        self.outstanding -= len(ids)
        if ids:
            self._settled(ids, "NACK")

    def __next__(self) -> Optional[MessageProxy]:
        if not self.cache:
            room = self.prefetch - self.outstanding
            if room <= 0:  # as many in hand as the prefetch allows: take none
                # (and look again soon, then less often: dramatiq's backoff)
                self.misses, backoff_ms = compute_backoff(self.misses,
                                                          max_backoff=self.timeout_ms)
                time.sleep(backoff_ms / 1000)
                return None
            self.misses = 0
            wait_ms = min(self.timeout_ms, BLOCK_MS)
            try:
                if wait_ms > 0:
                    jobs = self.client.get_jobs(self.queue_name, count=room, timeout_ms=wait_ms)
                else:  # (timeout_ms=0 would wait until a job comes, as GETJOB TIMEOUT 0)
                    jobs = self.client.get_jobs(self.queue_name, count=room, nohang=True)
            except (NodeError, NoNodeAvailableError) as e:
                raise ConnectionClosed(e) from None
            self.cache = [_TrisqueMessage(job) for job in jobs]
        if not self.cache:
            return None
        self.outstanding += 1
        return self.cache.pop(0)

    def close(self) -> None:
        if self.cache:  # taken but never handed out: back at once
            self._settled([m.job_id for m in self.cache], "NACK")
            self.cache = []


class TrisqueResultBackend(ResultBackend):
    """Results on every node's keyspace (SET with the result's TTL)."""

    def __init__(self, nodes: Any = "127.0.0.1:7711", *, client: Optional[Client] = None,
                 namespace: str = "dramatiq-results", encoder: Any = None,
                 **client_options: Any) -> None:
        super().__init__(namespace=namespace, encoder=encoder)
        if isinstance(nodes, str):
            nodes = [n for n in nodes.replace(";", ",").split(",") if n.strip()]
        self.every_node = EveryNode(client or Client(nodes, **client_options))

    def _get(self, message_key: str) -> Any:
        try:
            data = self.every_node.get(message_key)
        except TrisqueError as e:
            raise ConnectionClosed(e) from None
        return Missing if data is None else self.encoder.decode(data)

    def _store(self, message_key: str, result: Any, ttl: int) -> None:
        self.every_node.write("SET", message_key, self.encoder.encode(result), "PX", ttl)
