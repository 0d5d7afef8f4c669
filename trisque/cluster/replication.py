"""Job replication (Disque README, "Job replication state machine").

ON ADDJOB with REPLICATE n (synchronous):
  1. The job is registered in ``wait-repl`` and REPLJOB goes to n-1 other
     reachable nodes (n nodes, none of them us, when replicating
     externally: memory warning or leaving).
  2. The client's reply waits (a PendingReply: the client's later
     pipelined commands keep running, their replies queue behind it).
  3. Every 50 ms while waiting, one more node (if any is left) is added and
     gets REPLJOB, so slow or full nodes can be worked around.  Holders
     that have not confirmed get it again every second (their link may
     have broken).  Disque re-sends to every holder every 50 ms; under a
     pipelined load that multiplies the bus traffic when it can least
     afford it.
  4. GOTJOB from a node adds it to ``nodes_confirmed``; at n confirmations
     the job becomes ``active``, is queued (or handed to one holder with
     ENQUEUE when we keep no copy), logged, and the client gets its ID.
  5. At the ADDJOB timeout the client gets -NOREPL and the copies are
     deleted, best effort (DELJOB).
ON REPLJOB: store the job ``active`` (or merge ``nodes_delivered`` if we
  already have it), log it, then answer GOTJOB unless the sender said
  NOREPLY (ASYNC).  Refused at memory warning, when leaving, or when the
  queue is paused IN.
"""

from typing import Any, Final

from ..protocol import bus, errors, resp
from ..protocol.jobcodec import JobFields
from ..core.jobs import policy as policy_codec
from ..core.client import Client, PendingReply
from ..core.jobs.job import (ACKED, ACTIVE, BCAST_QUEUED, BCAST_WILLQUEUE,
                               CTIME_EPOCH_MS, WAIT_REPL, Job, serialize)
from ..core.hooks import ReplicationHooks
from ..core.jobs.lifecycle import WILLQUEUE_ADVANCE_MS
from ..core.node import Node
from ..core.jobs.queue import PAUSED_IN, Queue
from ..core.jobs.registry import JobIdSet
from .membership import ClusterNode, Membership
from .outbox import Outbox
from .replication_latency import ReplicationLatency


# (Final: constants to the compiled module, where a module global is a
# dictionary look-up at each use: AddJobTimer.watch's, once an ADDJOB)
ADD_NODE_PERIOD_MS: Final = 50
RESEND_PERIOD_MS: Final = 1000
MAX_SHARED_HOLDERS: Final = 4096  # distinct holder tuples shared between jobs
_NO_AUX: Final = b"\0\0\0\0"  # a GOTJOB item's aux: a lone item is its ID and this


def drop_passed(items: list[Any], head: int) -> int:
    """For a list read from ``head`` on (AddJobTimer, SentJobs): the
    items passed leave it once they are all of it or half of a long one.
    Returns the new head."""
    if head >= len(items):
        items.clear()
        return 0
    if head >= 64 and head * 2 >= len(items):
        del items[:head]  # (the ones passed, out of memory)
        return 0
    return head


class PendingAddJob(PendingReply):
    """The reply to a synchronous ADDJOB, waiting for replication."""

    __slots__ = ("replication", "job", "deadline_ms", "sent_ms", "confirmed")
    replication: "Replication"
    job: Job
    deadline_ms: int
    sent_ms: int
    # The job's nodes_confirmed (the same set) until its REPLICATE count:
    # a GOTJOB reads it here, not by a second look-up in the rare fields.
    confirmed: set[str] | None

    def __init__(self, replication: "Replication", client: Client | None, job: Job,
                 deadline_ms: int, now_ms: int, confirmed: set[str]) -> None:
        super().__init__(client)
        self.replication = replication
        self.job = job
        self.deadline_ms = deadline_ms  # 0: wait forever
        self.sent_ms = now_ms  # last REPLJOB to every unconfirmed holder
        self.confirmed = confirmed

    def fire(self, node: Node) -> None:
        job = self.job
        if job.waiter is not self:
            return
        now_ms = node.now_ms()
        if self.deadline_ms and now_ms >= self.deadline_ms:
            # Rule 5: timeout, delete the copies, best effort.
            job.waiter = None
            self.replication.replicating.pop(job.id, None)
            node.resolve(self, resp.error(errors.NOREPL_TIMEOUT))
            self.replication.delete_everywhere(job)
            return
        # Rule 3: one more node every 50 ms; everyone again every second.
        resend = now_ms - self.sent_ms >= RESEND_PERIOD_MS
        if resend:
            self.sent_ms = now_ms
        replication = self.replication
        added = replication.add_nodes(job, 1, noreply=False, resend=resend)
        self.schedule(node, now_ms, added > 0 or replication.may_add_soon(job))

    def schedule(self, node: Node, now_ms: int, more_nodes: bool = True) -> None:
        """Wake in 50 ms to add a node, or (when every reachable node
        already has a copy) at the next re-send; never past the timeout."""
        if more_nodes:
            at = now_ms + ADD_NODE_PERIOD_MS
        else:
            at = self.sent_ms + RESEND_PERIOD_MS
        if self.deadline_ms and self.deadline_ms < at:
            at = self.deadline_ms
        node.deadlines.set(self, at)
        node.timers_changed(at)

    def cancel(self, node: Node) -> None:
        """The client went away: the job would have no one to report to."""
        job = self.job
        if job.waiter is self:
            job.waiter = None
            self.replication.replicating.pop(job.id, None)
            self.replication.delete_everywhere(job)


class AddJobTimer(PendingReply):
    """One timer for every ADDJOB's first 50 ms (rule 3), instead of a
    deadline each: most are answered well before, and scheduling then
    cancelling a deadline per ADDJOB was a measurable part of its cost.
    ADDJOBs are watched in the order they came, each due 50 ms after it
    came (its ``sent_ms``, which stays put while it is watched here), so a
    list holds them in deadline order; an answered one (its reply known)
    stays in it until its time and is then dropped unseen.  One still
    waiting at its time goes on with a deadline of its own
    (PendingAddJob.fire)."""

    __slots__ = ("waiting", "head")
    # Due in order from ``head`` (a list and an index: compiled, a deque's
    # append and popleft are generic method calls, a list's are native).
    waiting: list[PendingAddJob]
    head: int

    def __init__(self) -> None:
        super().__init__(None)
        self.waiting = []
        self.head = 0

    def watch(self, node: Node, pending: PendingAddJob, now_ms: int) -> None:
        due = now_ms + ADD_NODE_PERIOD_MS
        waiting = self.waiting
        if ((pending.deadline_ms and pending.deadline_ms < due)
                or (len(waiting) > self.head
                    and waiting[-1].sent_ms > now_ms)):  # the clock went back
            pending.schedule(node, now_ms)
            return
        waiting.append(pending)
        if self.wake_ms is None:
            node.deadlines.set(self, due)
            node.timers_changed(due)

    def fire(self, node: Node) -> None:
        waiting = self.waiting
        head = self.head
        now_ms = node.now_ms()
        while head < len(waiting):
            pending = waiting[head]
            if pending.data is None:  # no reply yet (or its client left: fire checks)
                if pending.sent_ms + ADD_NODE_PERIOD_MS > now_ms:
                    break
                head += 1
                pending.fire(node)
            else:
                head += 1  # answered meanwhile
        head = self.head = drop_passed(waiting, head)
        if head < len(waiting):
            due = waiting[head].sent_ms + ADD_NODE_PERIOD_MS
            node.deadlines.set(self, due)
            node.timers_changed(due)

    def cancel(self, node: Node) -> None:
        pass

# A peer's sent jobs kept as hints while this many wait for its GOTJOB: a
# peer that answers none (memory warning, leaving) does not grow them.
SENT_HINTS_MAX: Final = 4096


class SentJobs:
    """The jobs whose first REPLJOB went to one peer, in the order sent.
    Its GOTJOBs come back in that order (a frame is answered by one frame),
    so an item is compared with the next job expected here before its ID
    is looked up in ``replicating``: a bytes comparison instead of hashing
    every item's new ID (bench/README.md, "Issue 29 point 4").  A hint
    only: an ID that is not the one expected (reordered, re-sent, skipped
    by the peer) is looked up as before, and a job is taken from here only
    while it still waits for copies (its waiter set: in ``replicating``)."""

    __slots__ = ("jobs", "head", "latency")
    jobs: list[Job]  # from ``head``: sent, not yet matched by a GOTJOB
    head: int
    latency: ReplicationLatency | None  # the peer's in repl_latency, once made

    def __init__(self) -> None:
        self.jobs = []
        self.head = 0
        self.latency = None

    def add(self, job: Job) -> None:
        jobs = self.jobs
        if self.head == 1 and len(jobs) == 1:  # (_PASSED alone: see passed)
            jobs[0] = job
            self.head = 0
            return
        if len(jobs) - self.head >= SENT_HINTS_MAX:
            jobs.clear()  # the peer answers none of them: no hints until it does
            self.head = 0
        jobs.append(job)

    def clear(self) -> None:
        self.jobs.clear()
        self.head = 0

    def passed(self, head: int) -> None:
        """The jobs before ``head`` were matched or passed over."""
        jobs = self.jobs
        if head == 1 and len(jobs) == 1:
            # The lone job sent, answered (each one, at a low rate): let go
            # of in place, where clearing freed the list's array and the
            # next add made it again.
            jobs[0] = _PASSED
            self.head = 1
            return
        self.head = drop_passed(jobs, head)


# What a SentJobs keeps in the place of its lone job once passed (no job
# is kept alive by its hints).
_PASSED: Final = Job(b"", b"", b"", ACKED, 0, 0, 0, 0, 0)


def holds(nodes: tuple[str, ...], node_id: str) -> bool:
    """``node_id`` is one of ``nodes`` (a job's holders).  (A loop: compiled,
    ``in`` on a tuple is the generic sequence protocol.)"""
    for holder in nodes:
        if holder == node_id:
            return True
    return False


def _waiting_for(job: Job, node_id: str) -> bool:
    """``job`` still waits for copies (in ``replicating``, not acked
    meanwhile) and has no GOTJOB from ``node_id`` yet."""
    rare = job._rare
    if job.state != WAIT_REPL or rare is None or rare.get("waiter") is None:
        return False
    confirmed = rare.get("nodes_confirmed")
    return confirmed is None or node_id not in confirmed


class Replication(ReplicationHooks):
    """The replication state machine of the jobs this node adds, and the
    copies it takes for others."""

    node: Node
    outbox: Outbox
    membership: Membership
    tombstones: JobIdSet
    replicating: dict[bytes, Job]
    add_timer: AddJobTimer
    holders_tuples: dict[tuple[str, ...], tuple[str, ...]]
    repl_latency: dict[str, ReplicationLatency]
    first_from: tuple[str, ...] | None
    first_to: list[str]
    first_holders: tuple[str, ...]
    first_sent: list[SentJobs]
    sent: dict[str, SentJobs]
    _sent_id: str
    _sent_id2: str
    _sent_last: SentJobs | None
    _sent_last2: SentJobs | None
    copy_nodes: tuple[str, ...] | None
    copy_holders: tuple[str, ...]
    copy_me: str

    def __init__(self, node: Node, outbox: Outbox, membership: Membership,
                 tombstones: JobIdSet) -> None:
        self.node = node
        self.outbox = outbox
        self.membership = membership
        self.tombstones = tombstones  # IDs of acked jobs freed recently (acks.py)
        self.replicating = {}  # job id -> job: synchronous ADDJOBs waiting for copies
        self.add_timer = AddJobTimer()  # their first 50 ms
        self.holders_tuples = {}  # nodes_delivered tuples shared between jobs
        self.repl_latency = {}  # node id -> ReplicationLatency (/metrics)
        # _send_first's last holders: from these first ones, to these nodes.
        self.first_from = None
        self.first_to = []
        self.first_holders = ()
        self.first_sent = []  # the SentJobs of first_to
        self.sent = {}  # peer id -> SentJobs (never removed: first_sent may hold them)
        self._sent_id = self._sent_id2 = ""  # _sent_of's last two ("": none)
        self._sent_last = self._sent_last2 = None
        # on_repljob's last holders tuple from a record, and it with us added
        self.copy_nodes = None
        self.copy_holders = ()
        self.copy_me = ""

    def delete_everywhere(self, job: Job) -> None:
        """Best-effort delete of every copy (DELJOB), then ours.  The ADDJOB
        failed: aux 1 tells the holders its idempotency key is free again
        (acks.on_deljob; an older node ignores aux)."""
        self.outbox.send_to_holders(job, bus.DELJOB, 1)
        self.node.unregister(job, keep_key=False)

    def may_add_soon(self, job: Job) -> bool:
        """A reachable node without a copy whose link is not up yet (we just
        met it, or it is restarting): keep trying every 50 ms, so the ADDJOB
        goes on as soon as the link does, not at the next 1 s re-send."""
        delivered = job.nodes_delivered
        return any(n.id not in delivered for n in self.membership.reachable)

    def replicate(self, job: Job, client: Client, timeout_ms: int,
                  asynchronous: bool, external: bool, now_ms: int) -> PendingAddJob | bytes:
        """``now_ms``: ADDJOB's clock reading (the job's creation time)."""
        node = self.node
        my_id = node.id
        others = job.repl if external else job.repl - 1
        if external:
            job.nodes_delivered = ()
        else:
            job.nodes_delivered = node.just_me()
        if not asynchronous:
            confirmed = set() if external else {my_id}
            node.register(job)
            node.schedule(job)  # its TTL runs while it waits, too
            pending = PendingAddJob(self, client, job, now_ms + timeout_ms if timeout_ms else 0,
                                    now_ms, confirmed)
            self.replicating[job.id] = job
            # Sent before the rare fields below are set: a plain job's
            # record is then built without reading them.
            self._send_first(job, others, now_ms)
            # (job.nodes_confirmed, job.waiter: in one step)
            if not job.start_rare({"nodes_confirmed": confirmed, "waiter": pending}):
                job.nodes_confirmed = confirmed
                job.waiter = pending
            self.add_timer.watch(node, pending, now_ms)
            return pending
        if external:
            # ASYNC and no local copy: hand it over and forget it.
            self.add_nodes(job, others, noreply=True)
            if job.nodes_delivered:
                target = node.random.choice(job.nodes_delivered)
                self.outbox.send_jobid(target, bus.ENQUEUE, job.id, job.delay_s)
            return b"+%s\r\n" % job.id
        job.state = ACTIVE
        node.register(job)
        node.log.job_stored(job)
        if job.delay_s:
            node.schedule(job)
        else:
            node.enqueue(job)
        self.add_nodes(job, others, noreply=True)
        return b"+%s\r\n" % job.id

    def add_nodes(self, job: Job, count: int, noreply: bool,
                  resend: bool = True) -> int:
        """Add up to ``count`` reachable nodes to the job's holders and send
        them REPLJOB; with ``resend``, also every holder that has not confirmed
        (the record lists all holders, so they learn about each other)."""
        node = self.node
        if job.state == ACKED:
            # Acked while its ADDJOB still waits for copies: its record
            # would make a live copy of a job already done (SETACK spreads
            # acks, never REPLJOB).
            return 0
        new: tuple[str, ...] = ()
        if count > 0:
            delivered = job.nodes_delivered
            candidates = [n for n in self.membership.reachable
                          if n.link_ok and n.id not in delivered]
            if len(candidates) > count:
                node.random.shuffle(candidates)
            new = tuple(n.id for n in candidates[:count])
            job.nodes_delivered += new
        confirmed = job.nodes_confirmed or ()
        targets = [t for t in (job.nodes_delivered if resend else new)
                   if t != node.id and t not in confirmed]
        if targets:
            record = serialize(job, max(1, job.etime_ms - node.now_ms()))
            mflags = bus.NOREPLY if noreply else 0
            for target in targets:
                self.outbox.send_job(target, bus.REPLJOB, record, mflags)
        return len(new)

    def _send_first(self, job: Job, count: int, now_ms: int) -> None:
        """add_nodes for a job nobody else holds yet (rule 1), in fewer steps:
        the first REPLJOB of every synchronous ADDJOB goes this way."""
        candidates = [n.id for n in self.membership.reachable if n.link_ok]
        if len(candidates) > count:
            self.node.random.shuffle(candidates)
            del candidates[count:]
        if not candidates:
            return
        first = job.nodes_delivered
        if first is self.first_from and candidates == self.first_to:
            # The same holders as the last job's (REPLICATE n to every
            # other node): its shared tuple, without building and hashing one.
            job.nodes_delivered = self.first_holders
            sent_to = self.first_sent
        else:
            holders = first + tuple(candidates)
            # Jobs replicated to the same nodes share one tuple (memory).
            shared = self.holders_tuples
            if len(shared) >= MAX_SHARED_HOLDERS:
                shared.clear()
            job.nodes_delivered = holders = shared.setdefault(holders, holders)
            self.first_from = first
            self.first_to = candidates
            self.first_holders = holders
            sent_to = self.first_sent = [self._sent_jobs(c) for c in candidates]
        record = serialize(job, max(1, job.etime_ms - now_ms))
        self.outbox.send_to_all(candidates, bus.REPLJOB, 0, record)
        for sent in sent_to:
            sent.add(job)

    def _sent_of(self, node_id: str) -> SentJobs | None:
        """``sent.get(node_id)``, the last two found kept by the ID's
        identity (a job's GOTJOBs come from its holders in turn; ``sent``
        never drops an entry, so a kept one stays right)."""
        if node_id is self._sent_id:
            return self._sent_last
        if node_id is self._sent_id2:
            return self._sent_last2
        sent = self.sent.get(node_id)
        if sent is not None:
            self._sent_id2 = self._sent_id
            self._sent_last2 = self._sent_last
            self._sent_id = node_id
            self._sent_last = sent
        return sent

    def _sent_jobs(self, node_id: str) -> SentJobs:
        sent = self.sent.get(node_id)
        if sent is None:
            sent = self.sent[node_id] = SentJobs()
        return sent

    def on_repljob(self, sender: ClusterNode, records: list[JobFields],
                   mflags: int) -> None:
        node = self.node
        if node.memory_level() > 0 or self.membership.myself.leaving:
            return  # no room, or on our way out: let the sender find others
        now_ms = node.now_ms()
        my_id = node.id
        queues = node.queues
        jobs = node.jobs
        tombstones = self.tombstones
        deadlines = node.deadlines
        log_active = node.log_active  # (no log: its hook not called, as ADDJOB's)
        # (node.register and the rest called as such: compiled, a bound method
        # kept in a local is a slower call than the method itself)
        # node.schedule(job) for a new active job, inline: its requeue (the
        # WILLQUEUE before it, when other nodes count) or its expiry.
        advance_ms = WILLQUEUE_ADVANCE_MS if self.membership.size() > 1 else 0
        got: list[bytes] = []  # GOTJOB items (IDs alone: aux 0), one message for the frame
        # One jitter draw for the copies of a frame (made together, so they
        # may requeue together): their deadlines then share a millisecond,
        # an append where a draw each made a bucket each (bench/README.md,
        # "Issue 29 point 4").  Holders still draw apart from each other.
        jitter = 0
        drawn = False
        # The records of a frame mostly share one holders tuple (jobcodec),
        # and so do lone frames in a row: the holders with us added, worked
        # out once per distinct tuple (kept from the last frame).
        last_nodes = self.copy_nodes if self.copy_me == my_id else None
        holders = self.copy_holders
        # And one queue: looked up again only when the name changes (a
        # bytes comparison, where the lookup hashed each record's new name).
        # Nothing below makes a queue, so a missing one stays missing.
        last_name: bytes | None = None
        queue: Queue | None = None
        for (job_id, _state, flags, repl, ctime, ttl_ms, delay_s, retry_s, nacks,
             deliveries, queue_name, body, nodes, policy) in records:
            if last_name is None or queue_name != last_name:
                queue = queues.get(queue_name)
                last_name = queue_name
            if queue is not None and queue.paused & PAUSED_IN:
                continue
            if tombstones.size and job_id in tombstones:  # (mostly none; .size: no __bool__ call)
                continue  # a stale copy of a job acked and freed here
            job = jobs.get(job_id)
            if job is not None:
                merged = job.nodes_delivered + tuple(n for n in nodes if n not in job.nodes_delivered)
                job.nodes_delivered = merged
            else:
                etime_ms = now_ms + ttl_ms
                job = Job(job_id, queue.name if queue is not None else queue_name, body,
                          ACTIVE, repl, ctime, etime_ms, delay_s, retry_s)
                # Only the origin queues it first; a copy announces WILLQUEUE
                # before its own requeue, so a holder that has it queued can
                # answer QUEUED and keep it from being queued twice.
                if retry_s:
                    job.flags = BCAST_QUEUED | BCAST_WILLQUEUE
                    if not drawn:
                        jitter = node.jitter_ms()
                        drawn = True
                    job.qtime_ms = qtime = now_ms + (delay_s + retry_s) * 1000 + jitter
                    qtime -= advance_ms
                    wake_ms = qtime if qtime < etime_ms else etime_ms
                else:
                    job.flags = BCAST_QUEUED
                    wake_ms = etime_ms
                if nacks:
                    job.nacks = nacks
                if deliveries:
                    job.deliveries = deliveries
                if policy:
                    job.policy = policy_codec.decode_or_none(policy)
                if nodes is not last_nodes:
                    last_nodes = nodes
                    holders = nodes if my_id in nodes else nodes + (my_id,)
                    self.copy_nodes = nodes
                    self.copy_holders = holders
                    self.copy_me = my_id
                job.nodes_delivered = holders
                node.register(job)
                if log_active:
                    node.log.job_stored(job)
                deadlines.set(job, wake_ms)
            got.append(job_id)
        if got and not mflags & bus.NOREPLY:
            if len(got) == 1:  # (a lone REPLJOB: its ID appended, not the list extended)
                self.outbox.send_jobid(sender.id, bus.GOTJOB, got[0])
            else:
                self.outbox.send_jobids(sender.id, bus.GOTJOB, got)

    def on_gotjob_frame(self, sender: ClusterNode, raw: bytes) -> None:
        """A GOTJOB frame's items as they came (bus.decode's ``gotjob_raw``).
        Mostly they are, in order, the next jobs this node sent the peer
        (SentJobs): then the whole frame is compared with their IDs at
        once and nothing is unpacked item by item; else on_gotjob."""
        count = len(raw) // bus.JOBID_ITEM_LEN
        sent = self._sent_of(sender.id)
        if sent is not None and count and self.replicating:
            head = sent.head
            expected = sent.jobs
            if len(expected) - head >= count:
                if count == 1:
                    # A lone job's GOTJOB (each one at a low rate, on the
                    # origin's critical path): its one item compared as is,
                    # no slice of the hints nor join of their IDs.
                    job = expected[head]
                    job_id = job.id
                    # (raw == job_id + _NO_AUX without the concatenation made)
                    if (len(raw) == len(job_id) + 4 and raw.startswith(job_id)
                            and raw.endswith(_NO_AUX)):
                        self._confirm_one(sender.id, job, sent)
                        sent.passed(head + 1)
                        return
                else:
                    jobs = expected[head:head + count]
                    if bus.jobids_raw([job.id for job in jobs]) == raw:
                        self._confirm(sender.id, jobs, sent)
                        sent.passed(head + count)
                        return
        self.on_gotjob(sender, bus.jobid_items(raw))

    def on_gotjob(self, sender: ClusterNode,
                  items: list[tuple[bytes, int]]) -> None:
        replicating = self.replicating
        if not replicating:
            sent = self.sent.get(sender.id)
            if sent is not None and sent.jobs:
                sent.clear()  # (no job waits: every hint is stale)
            return
        sender_id = sender.id
        sent = self.sent.get(sender_id)
        if sent is None:
            sent = self._sent_jobs(sender_id)
        expected = sent.jobs
        head = sent.head
        found_jobs: list[Job] = []
        for job_id, _aux in items:
            # Every job waiting for copies is in ``replicating`` (registered,
            # in wait-repl) until it is answered one way or another; the
            # next one sent to this peer is compared first (SentJobs).
            found = False
            while head < len(expected):
                next_job = expected[head]
                if next_job.id == job_id:
                    head += 1
                    found = True
                    found_jobs.append(next_job)  # (_confirm checks it still waits)
                    break
                if _waiting_for(next_job, sender_id):
                    break  # its GOTJOB may still come: kept, this ID looked up
                head += 1  # answered or given up meanwhile: passed over
            if not found:
                job = replicating.get(job_id)
                if job is not None:
                    found_jobs.append(job)
        self._confirm(sender_id, found_jobs, sent)
        sent.passed(head)

    def cron(self) -> None:
        """Each peer's hints up to its first job still waiting for its copy
        go: a peer that stopped answering (killed, forgotten) would keep
        up to SENT_HINTS_MAX deleted jobs alive, bodies and all."""
        for peer_id, sent in self.sent.items():
            expected = sent.jobs
            head = sent.head
            while head < len(expected) and not _waiting_for(expected[head], peer_id):
                head += 1
            sent.passed(head)

    def _confirm(self, sender_id: str, jobs: list[Job], sent: SentJobs) -> None:
        """``sender_id`` holds a copy of each of ``jobs`` (its GOTJOB):
        those still waiting for copies count it, and are answered at
        their REPLICATE count.  ``sent``: the sender's SentJobs."""
        now_ms = self.node.now_ms()
        # Jobs made in the same ms have the same latency: recorded once a run.
        run_ms = 0
        run = 0
        for job in jobs:  # (_confirm_one: the same for one job)
            rare = job._rare  # (nodes_confirmed, set by replicate(); no property call)
            if job.state != WAIT_REPL or rare is None:
                continue
            pending: PendingAddJob | None = rare.get("waiter")
            if pending is None:
                continue  # (not in replicating: answered, given up; or acked meanwhile)
            confirmed = pending.confirmed  # (rare["nodes_confirmed"])
            if confirmed is None:
                continue  # (answered: no longer its waiter)
            confirmed.add(sender_id)
            # (the creation ms from _ctime: job.ctime is past 64 bits, a big int)
            took_ms = now_ms - job._ctime // 1_000_000 - CTIME_EPOCH_MS
            if took_ms != run_ms and run:
                self._record_latency(sender_id, sent, run_ms, run)
                run = 0
            run_ms = took_ms
            run += 1
            if len(confirmed) >= job.repl:
                self._replicated(job, rare, pending, confirmed, now_ms)
        if run:
            self._record_latency(sender_id, sent, run_ms, run)

    def _confirm_one(self, sender_id: str, job: Job, sent: SentJobs) -> None:
        """_confirm of a lone job (a GOTJOB of one item: each one at a low
        rate, on the origin's critical path), without its list and loop."""
        rare = job._rare
        if job.state != WAIT_REPL or rare is None:
            return
        pending: PendingAddJob | None = rare.get("waiter")
        if pending is None:
            return
        confirmed = pending.confirmed  # (rare["nodes_confirmed"])
        if confirmed is None:
            return  # (answered: no longer its waiter)
        confirmed.add(sender_id)
        now_ms = self.node.now_ms()
        self._record_latency(sender_id, sent,
                             now_ms - job._ctime // 1_000_000 - CTIME_EPOCH_MS, 1)
        if len(confirmed) >= job.repl:
            self._replicated(job, rare, pending, confirmed, now_ms)

    def _replicated(self, job: Job, rare: dict[str, Any], pending: PendingAddJob,
                    confirmed: set[str], now_ms: int) -> None:
        """_confirm's job reached its REPLICATE count (``rare``: its rare
        fields, with its ``pending`` reply and ``confirmed`` set)."""
        # (by its own ID, whose hash is kept and which the dict's key is)
        del self.replicating[job.id]
        pending.confirmed = None  # (the set goes with the job's rare fields)
        if len(rare) == 2:  # (only replicate()'s two, read by the caller)
            job.clear_rare()
            self._achieved_plain(job, now_ms, pending, confirmed)
        else:
            self._achieved(job, now_ms)

    def _record_latency(self, sender_id: str, sent: SentJobs, took_ms: int,
                        times: int) -> None:
        """``times`` of ``sender_id``'s GOTJOBs came ``took_ms`` after their
        ADDJOB (its histogram made at its first GOTJOB that counts; kept on
        its SentJobs too: no dict look-up a GOTJOB)."""
        latency = sent.latency
        if latency is None:
            latency = self.repl_latency.get(sender_id)
            if latency is None:
                latency = self.repl_latency[sender_id] = ReplicationLatency()
            sent.latency = latency
        latency.record(took_ms, times)

    def achieved(self, job: Job, now_ms: int | None = None) -> bool:
        """Rule 4.  Returns False if we kept no copy (external replication)."""
        replicating = self.replicating
        if job.id in replicating:
            del replicating[job.id]
        return self._achieved(job, now_ms)

    def _achieved(self, job: Job, now_ms: int | None) -> bool:
        """achieved() for a job already out of ``replicating``."""
        node = self.node
        job.state = ACTIVE
        # The waiter and the confirmations leave the job's rare fields
        # (without their properties, and `in` + del: compiled, dict.pop is
        # a generic method call).
        rare = job._rare
        pending: PendingReply | None = None
        confirmed: Any = None
        if rare is not None:
            pending = rare.get("waiter")
            confirmed = rare.get("nodes_confirmed")
            if len(rare) == 2 and pending is not None and confirmed is not None:
                job.clear_rare()  # only replicate()'s two: a plain job again
            else:
                if "waiter" in rare:
                    del rare["waiter"]
                if "nodes_confirmed" in rare:
                    del rare["nodes_confirmed"]
                if not rare or not any(rare.values()):
                    job.clear_rare()  # every rare field back at its default (memory)
        # The copy is queued first: a client blocked in GETJOB on the queue
        # has its reply written before the ADDJOB's (each write may wake a
        # process that takes our core: bench/README.md, "A replicated
        # job's critical path").
        kept = self._achieved_rest(job, -1 if now_ms is None else now_ms, confirmed)
        if pending is not None:
            node.resolve(pending, b"+%s\r\n" % job.id)
        return kept

    def _achieved_plain(self, job: Job, now_ms: int, pending: PendingReply,
                        confirmed: set[str]) -> None:
        """_achieved for a job whose rare fields were only the waiter and
        its confirmations, already dropped (by _confirm, which read them:
        two dict reads fewer)."""
        job.state = ACTIVE
        self._achieved_rest(job, now_ms, confirmed)  # (queued first: see _achieved)
        self.node.resolve(pending, b"+%s\r\n" % job.id)

    def _achieved_rest(self, job: Job, now_ms: int, confirmed: Any) -> bool:
        """_achieved's copy: kept (logged, queued) or, with none kept
        here, handed to a holder; the client's reply follows.  ``now_ms``
        -1: not read yet (an int, not an optional: compiled, a time passed
        as an optional is boxed, a new int object each call)."""
        node = self.node
        if not holds(job.nodes_delivered, node.id):
            if confirmed:
                target = node.random.choice(sorted(confirmed))
                self.outbox.send_jobid(target, bus.ENQUEUE, job.id, job.delay_s)
            node.unregister(job)
            return False
        if node.log_active:
            node.log.job_stored(job)
        if job.delay_s:
            node.schedule(job)
        else:
            queue = node.queues.get(job.queue)
            if queue is None:
                queue = node.get_queue(job.queue)
            node.enqueue_new(job, queue, node.now_ms() if now_ms < 0 else now_ms)
        return True

    def aborted(self, job: Job) -> None:
        """The job went away (TTL, DELJOB) while its ADDJOB waited."""
        pending = job.waiter
        job.waiter = None
        self.replicating.pop(job.id, None)
        if pending is not None:
            self.node.resolve(pending, resp.error(errors.NOREPL_REMOVED))

    def on_link_up(self, node_id: str) -> None:
        """Our link to ``node_id`` (re)connected: a REPLJOB for it that was
        lost with the old link (or never sent, the node was down) goes again
        now, rather than at the next re-send."""
        sent = self.sent.get(node_id)
        if sent is not None:
            sent.clear()  # (the re-sends below go out of that order)
        replicating = self.replicating
        if not replicating:
            return
        now_ms = self.node.now_ms()
        for job in list(replicating.values()):
            confirmed = job.nodes_confirmed or ()
            if job.state == ACKED:
                continue  # (as add_nodes: no live copy of an acked job)
            if node_id in job.nodes_delivered and node_id not in confirmed:
                record = serialize(job, max(1, job.etime_ms - now_ms))
                self.outbox.send_job(node_id, bus.REPLJOB, record)
