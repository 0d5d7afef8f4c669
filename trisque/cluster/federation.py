"""Federation: jobs move to where the consumers are (NEEDJOBS/YOURJOBS).

- A consumer finding a queue empty (or paused OUT), clients blocked on it
  (checked every cron tick), or a queue that just drained while jobs were
  flowing in, make the node ask for jobs:
  * to every node, for one job, to discover sources: at most every 2 s,
    doubling up to 30 s while nothing new answers;
  * to the known sources (nodes that sent jobs for this queue in the last
    5 s), for import rate / sources jobs (5..100): at most every 25 ms,
    doubling up to 2 s, and at once when the queue just drained.
- A node asked for jobs answers YOURJOBS with ``count`` of them if it has
  twice that many, else half its queue (at least one); it keeps its copies
  (they stay replicated, now active with a requeue timer) except RETRY 0
  jobs, which must exist once.  It stays silent if it is importing the
  queue itself, or the queue is paused OUT.
- An ask that finds the queue empty stays open for ``ASK_OPEN_MS``: the
  first jobs queued here in that time (and not taken by a local consumer)
  answer it, once, with the same rule.  Disque answers only at once, so a
  job produced between two asks waited for the next one (25 ms..2 s later
  while jobs flow, up to 30 s when idle); this way it leaves at the end of
  the event-loop turn that queued it.  On the wire it is an ordinary
  YOURJOBS.
- YOURJOBS jobs are queued here without a QUEUED broadcast and their sender
  recorded as a source; a new source resets the broadcast backoff.
- Jobs for one peer produced in one event-loop turn travel in one YOURJOBS
  (the cluster's outbox coalesces them).
- A leaving node never asks for jobs.
"""

from typing import Final

from ..protocol import bus
from ..protocol.jobcodec import JobFields
from ..core.jobs import policy as policy_codec
from ..core.client import BlockedGet
from ..core.hooks import FederationHooks
from ..core.jobs.job import ACTIVE, BCAST_QUEUED, Job, serialize
from ..core.jobs.queue import PAUSED_OUT, Queue
from ..core.jobs.registry import JobIdSet
from ..core.node import Node
from .membership import ClusterNode, Membership
from .outbox import Outbox

# (Final: C constants to the compiled code, where each read of a module
# global was a dict look-up, ~150 instructions: 8 in every ask)
MIN_REQUEST: Final = 5
MAX_REQUEST: Final = 100
BCAST_MIN_MS: Final = 2000
BCAST_MAX_MS: Final = 30000
ADHOC_MIN_MS: Final = 25
ADHOC_MAX_MS: Final = 2000
SOURCE_VALID_MS: Final = 5000
RATE_WINDOW_MS: Final = 5000
# An unanswered ask stays open a bit longer than the longest ad-hoc
# backoff, so a requester that keeps asking is always covered.
ASK_OPEN_MS: Final = ADHOC_MAX_MS + 500

CLIENTS_WAITING: Final = 0
REACHED_ZERO: Final = 1


class Federation(FederationHooks):
    """NEEDJOBS asked and answered for this node's queues."""

    def __init__(self, node: Node, outbox: Outbox, membership: Membership,
                 tombstones: JobIdSet) -> None:
        self.node = node
        self.outbox = outbox
        self.membership = membership
        self.tombstones = tombstones  # IDs of acked jobs freed recently (acks.py)
        self.open_asks: dict[bytes, dict[str, list[int]]] = {}  # name -> {node id: [count, expire_ms]}
        self.ready: dict[bytes, None] = {}  # queues with open asks that got jobs this turn (ordered)
        self.drained: dict[bytes, Queue] = {}  # name -> queue that became empty this turn
        # Queues a consumer found empty (GETJOB asks first, then blocks):
        # the cron looks at these for clients still blocked, not at every
        # client; a queue leaves once nobody waits on it.  Every client is
        # walked once whenever the cron finds the node able to ask again
        # (at start, once no longer alone or leaving: GETJOB asks nobody
        # then).
        self.watched: dict[bytes, None] = {}
        self.walked = False
        # Counters (CLUSTER INFO / INFO cluster), for measuring storms.
        self.messages_sent = 0  # NEEDJOBS messages
        self.yourjobs_sent = 0  # YOURJOBS answers (one frame each)
        self.jobs_exported = 0
        self.jobs_imported = 0

    def info_fields(self) -> list[tuple[str, int]]:
        return [
            ("cluster_stats_needjobs_sent", self.messages_sent),
            ("cluster_stats_yourjobs_sent", self.yourjobs_sent),
            ("cluster_stats_jobs_exported", self.jobs_exported),
            ("cluster_stats_jobs_imported", self.jobs_imported),
            ("cluster_needjobs_open_asks", sum(len(a) for a in self.open_asks.values())),
        ]

    # ----------------------------------------------------- import rate

    def import_rate(self, queue: Queue) -> int:
        """Jobs/s received from other nodes over the last two 1 s buckets."""
        if queue.import_buckets is None:
            return 0
        return self._rate(queue, self.node.now_ms())

    def _rate(self, queue: Queue, now_ms: int) -> int:
        buckets = queue.import_buckets
        if buckets is None:
            return 0
        prev_ms, prev_count, cur_ms, cur_count = buckets
        if now_ms - cur_ms > RATE_WINDOW_MS:
            return 0
        elapsed = max(50, now_ms - prev_ms)
        rate: int = -(-(prev_count + cur_count) * 1000 // elapsed)  # ceil
        return rate

    def _count_import(self, queue: Queue, now_ms: int) -> None:
        buckets = queue.import_buckets
        if buckets is None:
            buckets = queue.import_buckets = [now_ms, 0, now_ms, 0]
        if now_ms - buckets[2] > 1000:
            buckets[0], buckets[1] = buckets[2], buckets[3]
            buckets[2], buckets[3] = now_ms, 0
        buckets[3] += 1

    def _valid_sources(self, queue: Queue, now_ms: int) -> list[str]:
        sources = queue.import_from
        if sources is None:
            return []
        for node_id, last_ms in list(sources.items()):
            if now_ms - last_ms > SOURCE_VALID_MS or node_id not in self.membership.nodes:
                del sources[node_id]
        return list(sources)

    # ------------------------------------------------------- asking

    def need_jobs(self, queue: Queue, now_ms: int) -> None:
        """A consumer found ``queue`` empty here (at ``now_ms``)."""
        membership = self.membership
        if membership.size() <= 1 or membership.myself.leaving:
            return
        watched = self.watched
        name = queue.name  # (the queue's own bytes: their hash is kept)
        if name not in watched:  # (a look-up costs less than a store)
            watched[name] = None
        self._need_jobs(queue, CLIENTS_WAITING, now_ms)

    def queue_drained(self, queue: Queue) -> None:
        """The queue just became empty.  Asked at the end of this turn, if
        it is still empty then: once per turn, however many jobs a YOURJOBS
        batch or a pipeline of requests moved through it, and with the
        import rate counting the jobs that just arrived."""
        if queue.import_buckets is None:
            return  # never imported: the rate is 0, nothing to do
        if not self.pending:
            self.outbox.transport.flush_soon()
        self.drained[queue.name] = queue

    def _need_jobs(self, queue: Queue, reason: int, now_ms: int) -> None:
        rate = self._rate(queue, now_ms)
        if reason == REACHED_ZERO and rate == 0:
            return
        # (no sources, the usual for a queue that never imported: no list
        # made, no rate divided; a blocked consumer asks every tick)
        sources = self._valid_sources(queue, now_ms) if queue.import_from else None
        bcast_delay = min(BCAST_MIN_MS << min(queue.needjobs_bcast_attempt, 16), BCAST_MAX_MS)
        # (a clock set back must not hold the asks back by the step)
        if not 0 <= now_ms - queue.needjobs_bcast_ms <= bcast_delay:
            queue.needjobs_bcast_ms = now_ms
            queue.needjobs_bcast_attempt += 1
            targets = [n.id for n in self.membership.others()
                       if n.link_ok and not n.handshake]
            self._send(targets, queue.name, 1)  # discovery: one job is enough
        if not sources:
            return
        adhoc_delay = min(ADHOC_MIN_MS << min(queue.needjobs_adhoc_attempt, 16), ADHOC_MAX_MS)
        if (reason == REACHED_ZERO
                or not 0 <= now_ms - queue.needjobs_adhoc_ms <= adhoc_delay):
            queue.needjobs_adhoc_ms = now_ms
            queue.needjobs_adhoc_attempt += 1
            count = max(MIN_REQUEST, min(MAX_REQUEST, rate // len(sources)))
            self._send(sources, queue.name, count)

    def _send(self, node_ids: list[str], queue_name: bytes, count: int) -> None:
        frame = bus.queue_op(self.membership.header(), bus.NEEDJOBS, queue_name, count)
        for node_id in node_ids:
            self.outbox.transport.send(node_id, frame)
            self.messages_sent += 1

    def cron(self, now_ms: int) -> None:
        """Clients still blocked keep asking (with the backoffs above);
        open asks past their time are forgotten."""
        if self.open_asks:
            self._expire_asks(now_ms)
        if self.membership.size() <= 1 or self.membership.myself.leaving:
            self.walked = False
            return
        if not self.walked:
            self.walked = True
            self._watch_blocked()
        if not self.watched:
            return
        queues = self.node.queues
        gone: list[bytes] = []
        for name in self.watched:
            queue = queues.get(name)
            if queue is None or not queue.blocked:
                gone.append(name)
            # Blocked with jobs queued means paused OUT: as GETJOB, ask
            # elsewhere.
            elif not queue.jobs or queue.paused & PAUSED_OUT:
                self._need_jobs(queue, CLIENTS_WAITING, now_ms)
        for name in gone:
            del self.watched[name]

    def _watch_blocked(self) -> None:
        """Watch every queue a client is blocked on in GETJOB."""
        watched = self.watched
        for client in self.node.clients.values():
            blocked = client.blocked
            if blocked.__class__ is BlockedGet:
                for name in blocked.queues:
                    watched[name] = None

    # ------------------------------------------------------ answering

    def _can_give(self, queue: Queue | None) -> bool:
        return (queue is not None and bool(queue.jobs) and not queue.paused & PAUSED_OUT
                and self.import_rate(queue) == 0)

    def on_needjobs(self, sender: ClusterNode, queue_name: bytes, count: int) -> None:
        node = self.node
        queue = node.queues.get(queue_name)
        if queue is not None and (queue.paused & PAUSED_OUT or self.import_rate(queue) > 0):
            return
        if queue is not None and queue.jobs:
            self._answer(queue, sender.id, count)
            return
        # Nothing here now: the first jobs queued soon will answer.
        asks = self.open_asks.get(queue_name)
        if asks is None:
            asks = self.open_asks[queue_name] = {}
        asks.pop(sender.id, None)  # keep the order oldest ask first
        asks[sender.id] = [count, node.now_ms() + ASK_OPEN_MS]

    def jobs_queued(self, queue: Queue) -> None:
        """``queue`` has jobs nobody here took: answer open asks at the end
        of this turn (so a burst of ADDJOBs leaves in one YOURJOBS)."""
        if queue.name in self.open_asks:
            if not self.pending:
                self.outbox.transport.flush_soon()
            self.ready[queue.name] = None

    @property
    def pending(self) -> bool:
        return bool(self.ready or self.drained)

    def before_flush(self) -> None:
        """End of an event-loop turn, before the outbox leaves: ask for the
        queues that drained, answer the open asks that jobs arrived for."""
        node = self.node
        if self.drained:
            drained, self.drained = self.drained, {}
            membership = self.membership
            if membership.size() > 1 and not membership.myself.leaving:
                now_ms = node.now_ms()
                for name, queue in drained.items():
                    if not queue.jobs and node.queues.get(name) is queue:
                        self._need_jobs(queue, REACHED_ZERO, now_ms)
        if self.ready:
            self._answer_open_asks()

    def _answer_open_asks(self) -> None:
        ready, self.ready = self.ready, {}
        node = self.node
        now_ms = node.now_ms()
        nodes = self.membership.nodes
        for name in ready:
            asks = self.open_asks.get(name)
            if not asks:
                continue
            queue = node.queues.get(name)
            if queue is not None and queue.jobs and self.import_rate(queue) > 0:
                del self.open_asks[name]  # importing ourselves: asks are void
                continue
            for node_id in list(asks):
                if queue is None or not self._can_give(queue):
                    break
                count, expire_ms = asks.pop(node_id)
                peer = nodes.get(node_id)
                # Not to a node that failed or is leaving since it asked.
                if (expire_ms >= now_ms and peer is not None and peer.link_ok
                        and peer.reachable()):
                    self._answer(queue, node_id, count)
            if not asks:
                del self.open_asks[name]

    def _expire_asks(self, now_ms: int) -> None:
        for name, asks in list(self.open_asks.items()):
            for node_id, (_count, expire_ms) in list(asks.items()):
                if expire_ms < now_ms:
                    del asks[node_id]
            if not asks:
                del self.open_asks[name]

    def _answer(self, queue: Queue, node_id: str, count: int) -> None:
        """YOURJOBS: ``count`` jobs if we have twice as many, else half the
        queue, at least one."""
        node = self.node
        size = len(queue.jobs)
        count = min(max(count, 1), MAX_REQUEST)
        give = count if size >= 2 * count else max(1, size // 2)
        now_ms = node.now_ms()
        for _ in range(give):
            job = node.fetch(queue, now_ms, consumer=False)
            if node_id not in job.nodes_delivered:
                # It will hold a copy: an ack's GC must reach it too.
                job.nodes_delivered += (node_id,)
            record = serialize(job, max(1, job.etime_ms - now_ms))
            self.outbox.send_job(node_id, bus.YOURJOBS, record)
            if job.retry_s == 0:
                node.delete_job(job)  # at-most-once: it lives there now
        self.yourjobs_sent += 1
        self.jobs_exported += give

    def on_yourjobs(self, sender: ClusterNode, records: list[JobFields]) -> None:
        node = self.node
        now_ms = node.now_ms()
        for fields in records:
            (job_id, _state, flags, repl, ctime, ttl_ms, delay_s, retry_s, nacks,
             deliveries, queue_name, body, nodes, policy) = fields
            if job_id in self.tombstones:
                continue  # acked and freed here: a stale copy
            job = node.jobs.get(job_id)
            if job is None:
                job = Job(job_id, queue_name, body, ACTIVE, repl, ctime,
                          now_ms + ttl_ms, delay_s, retry_s)
                job.nacks = nacks
                job.deliveries = deliveries
                if policy:
                    job.policy = policy_codec.decode_or_none(policy)
                job.nodes_delivered = nodes if node.id in nodes else nodes + (node.id,)
                node.register(job)
                node.log.job_stored(job)
            elif job.state not in (ACTIVE,):
                continue
            elif policy and job.queue != queue_name:
                # The sender's copy moved (dead-lettered, revived) and ours
                # has not heard yet: the one queued is the sender's.
                node.set_policy(job, policy_codec.decode_or_none(policy))
                node.move_job(job, queue_name)
            job.flags &= ~BCAST_QUEUED  # moving between queues, not a redelivery
            if not job.qtime_ms:
                job.qtime_ms = now_ms  # lets a RETRY 0 job be queued once
            if not node.enqueue(job):
                continue
            self.jobs_imported += 1
            queue = node.get_queue(job.queue)
            sources = queue.import_from
            if sources is None:
                sources = queue.import_from = {}
            if sender.id not in sources:
                queue.needjobs_bcast_attempt = 0
            sources[sender.id] = now_ms
            self._count_import(queue, now_ms)
            queue.needjobs_adhoc_attempt = 0
