"""Acks and their garbage collection (Disque README, "Acknowledged jobs
garbage collection state machine").

- ACKJOB marks the job acked here and starts GC: SETACK(number of nodes we
  think may hold it) goes to every holder that has not confirmed.
- A SETACK receiver acks its copy and answers GOTACK, unless it knows more
  holders than the sender: then it runs the GC itself (answering anyway if
  the sender knew of none, i.e. held only a dummy ack).
- GOTACK confirms the sender; once every holder confirmed, DELJOB goes to
  all of them and the job is freed.  GC retries back off exponentially
  (1 s doubling, at most 3 min, jittered) until it completes or the TTL.
- ACKJOB for an unknown ID with odd TTL digits (a job that may be
  requeued) creates a *dummy ack* broadcast to everyone, dropped as soon
  as a node that knows the job answers, or when all say they do not.
- FASTACK just deletes everywhere, best effort (DELJOB).
"""

from typing import Final

from ..protocol import bus, jobid
from ..core.hooks import AckHooks
from ..core.jobs.job import ACKED, DUMMY_ACK, WAIT_REPL, Job
from ..core.jobs.registry import JobIdSet
from ..core.node import Node
from .membership import ClusterNode, Membership
from .outbox import Outbox
from .replication import Replication, drop_passed, holds

# (Final: constants to the compiled module, where a module global is a
# dictionary look-up at each use)
GC_RETRY_MIN_MS: Final = 1000
GC_RETRY_MAX_MS: Final = 3 * 60 * 1000
GC_RETRY_COUNT_MAX: Final = 10
TOMBSTONE_MS: Final = 10000  # far longer than a frame can be delayed on the bus


def _all_in(holders: tuple[str, ...], confirmed: set[str]) -> bool:
    """Every holder confirmed.  (A loop: compiled, all() of a generator
    walked the tuple through the generic iterator protocol.)"""
    for holder in holders:
        if holder not in confirmed:
            return False
    return True


class Acks(AckHooks):
    """The ack GC of this node's acked jobs, and the IDs of those freed
    recently (tombstones): for TOMBSTONE_MS a REPLJOB or YOURJOBS that the
    network delayed or duplicated cannot bring a freed job back to life."""

    outbox: Outbox
    membership: Membership
    replication: Replication
    tombstones: JobIdSet
    # The IDs freed since the last tick (_tombstone_fresh), and before that
    # (expiry ms, a list of them) a tick, from _tombstone_head on
    # (lists and an index: compiled, a deque's append and popleft are
    # generic calls).  The tick after a freeing dates it: no clock read nor
    # int made on a job's turn.  A list a tick, not an (ms, id) tuple a job:
    # a tuple is a container the cyclic collector counts until its first
    # pass, and one a freed job made a young collection (1-3 ms, finding
    # nothing) every ~2 s on each node at 9,200 acked jobs/s ("Tails below
    # saturation, twenty-third session").  An expired tick's IDs are let go
    # of at that tick: kept in one list until it was compacted, 10 s of
    # them went at once, a 2-6 ms tick every 10 s on every holder at 12,466
    # acked jobs/s (bench/README.md, "Tombstones a tick, thirty-second
    # session").
    _tombstone_fresh: list[bytes]
    _tombstone_ticks: list[tuple[int, list[bytes]]]
    _tombstone_head: int
    # A consumer's ACKJOB starts its job's GC (the SETACKs) once the turn's
    # replies and bus frames are out, as the held ack frames are handled
    # (Cluster.held_acks): a job whose ADDJOB shares the turn no longer
    # waits for it (bench/README.md, "A consumer's ack collected after the
    # turn's replies").  On with the TCP transport and in the simulator.
    hold_gcs: bool
    held_gcs: list[Job]

    def __init__(self, node: Node, outbox: Outbox, membership: Membership,
                 replication: Replication, tombstones: JobIdSet) -> None:
        super().__init__(node)
        self.outbox = outbox
        self.membership = membership
        self.replication = replication
        self.tombstones = tombstones  # (read by replication and federation too)
        self._tombstone_fresh = []
        self._tombstone_ticks = []
        self._tombstone_head = 0
        self.hold_gcs = False
        self.held_gcs = []

    # ------------------------------------------ what the core tells us

    def next_gc_ms(self, job: Job) -> int:
        node = self.node
        period = GC_RETRY_MIN_MS << job.gc_retry
        if period > GC_RETRY_MAX_MS:
            period = GC_RETRY_MAX_MS
        return node.now_ms() + period + node.jitter_ms()

    def hold_gc(self, job: Job) -> bool:
        if not self.hold_gcs:
            return False
        self.held_gcs.append(job)
        return True

    def start_held_gcs(self) -> None:
        """START-GC of the jobs acked this turn (``hold_gc``), and each
        job's next attempt scheduled, as ``JobLifecycle.ack`` would have."""
        held, self.held_gcs = self.held_gcs, []
        jobs = self.node.jobs
        for job in held:
            if jobs.get(job.id) is not job or job.state != ACKED:
                continue  # freed meanwhile (a DELJOB, a FASTACK)
            self.retry_gc(job)

    def try_gc(self, job: Job) -> None:
        """START-GC: free the job if every holder confirmed, else SETACK them."""
        node = self.node
        if job.state != ACKED:
            return
        my_id = node.id
        if job.held_only_by(my_id):
            # Confirmed by all (every job of a lone node): freed at once, as
            # below, minus the bookkeeping.
            self.free_acked(job)
            return
        # (the job's holders and confirmations read once: each is a
        # property call, and the confirmations a typed set for native ops)
        holders = job.nodes_delivered
        dummy = not holders
        # (not optional: compiled, set operations native)
        confirmed: set[str] = {my_id}
        # A plain job's first GC: its retry count and confirmations in one
        # step (as the properties below would set them: a new dict and two
        # inserts through two setter calls)
        if not job.start_rare({"gc_retry": 1, "nodes_confirmed": confirmed}):
            retries = job.gc_retry
            if retries < GC_RETRY_COUNT_MAX:
                job.gc_retry = retries + 1
            known: set[str] | None = job.nodes_confirmed
            if known is None:
                job.nodes_confirmed = confirmed
            else:
                confirmed = known
        if not dummy and _all_in(holders, confirmed):
            self.free_acked(job)
            if len(job.nodes_delivered) > 1:
                self.outbox.send_to_holders(job, bus.DELJOB, lazy=True)
            return
        if dummy and self.membership.size() == 1:
            node.delete_job(job)
            return
        # Lazy (outbox.py): the ack is ours already; a holder about to
        # requeue asks first (WILLQUEUE), and that answer is not lazy.
        if not dummy:
            self.outbox.send_setacks(job, confirmed)
            return
        for target in [n.id for n in self.membership.others() if not n.handshake]:
            if target not in confirmed:
                self.outbox.send_setack(target, job, lazy=True)

    def dummy_ack(self, job_id: bytes) -> None:
        node = self.node
        if (self.membership.size() <= 1 or self.membership.myself.leaving
                or not jobid.has_retry(job_id)):
            return
        now_ms = node.now_ms()
        job = Job(job_id, b"", b"", ACKED, 0, 0,
                  now_ms + jobid.ttl_s_from_id(job_id) * 1000, 0, 0)
        job.flags = DUMMY_ACK
        node.register(job)
        self.retry_gc(job)

    def fast_ack(self, job: Job | None, job_id: bytes) -> None:
        """The core frees our copy right after.  A tombstone only where a
        copy may be on the way (as free_acked)."""
        if job is not None:
            if self.held_elsewhere(job):
                self.remember_freed(job_id)
            self.outbox.send_to_holders(job, bus.DELJOB)
        else:
            others = [n for n in self.membership.others() if not n.handshake]
            if others:
                self.remember_freed(job_id)
            for other in others:
                self.outbox.send_jobid(other.id, bus.DELJOB, job_id)

    # ------------------------------------------ what other holders say

    # (The frames' items one by one: a lone item, every frame of a job at
    # low rates, comes from cluster.py's dispatch with no list made.)

    def on_setack(self, sender: ClusterNode, items: list[tuple[bytes, int]]) -> None:
        for job_id, may_have in items:
            self.setack(sender, job_id, may_have)

    def setack(self, sender: ClusterNode, job_id: bytes, may_have: int) -> None:
        node = self.node
        job = node.jobs.get(job_id)
        if job is not None:
            if job.state == WAIT_REPL:
                # Acked before ADDJOB got its copies: it is delivered, then.
                if not self.replication.achieved(job):
                    return
            if job.state != ACKED:
                node.mark_acked(job)
        if job is None:
            self.remember_freed(job_id)  # acked elsewhere: no late copy
        # (GOTACK and the DELJOB after it only end the GC: lazy, outbox.py)
        if job is None or len(job.nodes_delivered) <= may_have:
            self.outbox.send_jobid(sender.id, bus.GOTACK, job_id, 1 if job is not None else 0,
                                   lazy=True)
        else:
            if may_have == 0:
                self.outbox.send_jobid(sender.id, bus.GOTACK, job_id, 1, lazy=True)
            self.retry_gc(job)

    def on_gotack(self, sender: ClusterNode, items: list[tuple[bytes, int]]) -> None:
        for job_id, known in items:
            self.gotack(sender, job_id, known)

    def gotack(self, sender: ClusterNode, job_id: bytes, known: int) -> None:
        node = self.node
        sender_id = sender.id
        job = node.jobs.get(job_id)
        if job is None or job.state != ACKED:
            return
        # (read once, as in try_gc)
        holders = job.nodes_delivered
        confirmed: set[str] | None = job.nodes_confirmed
        dummy = not holders
        if dummy and known:
            node.unregister(job)  # a node that knows it will finish the GC
            return
        held = holds(holders, sender_id)
        if known or held:
            if not held:
                holders = holders + (sender_id,)
                job.nodes_delivered = holders
            if confirmed is not None:
                confirmed.add(sender_id)
        if not known and dummy:
            if confirmed is None:
                confirmed = {node.id}
                job.nodes_confirmed = confirmed
            confirmed.add(sender_id)
            if len(confirmed) >= len(self.membership.nodes):
                node.unregister(job)  # nobody knows this job
            return
        if not dummy and confirmed is not None and _all_in(holders, confirmed):
            self.outbox.send_to_holders(job, bus.DELJOB, lazy=True)
            self.free_acked(job)

    def on_deljob(self, sender: ClusterNode, items: list[tuple[bytes, int]]) -> None:
        for job_id, aux in items:
            self.deljob(job_id, aux)

    def deljob(self, job_id: bytes, aux: int) -> None:
        node = self.node
        job = node.jobs.get(job_id)
        if node.waited and not aux & 1:  # (GC done or FASTACK: an ack, for WAITJOB)
            node.settle_waits(job_id, ACKED)
        if job is not None and aux & 1:
            node.delete_job(job, keep_key=False)  # a failed ADDJOB's copy
        elif job is not None:
            self.free_acked(job)
        else:
            # Its REPLJOB may still be on the way (another link, a slow
            # one): make sure it does not create a copy nobody will ack.
            self.remember_freed(job_id)

    # ------------------------------------------------- freeing, tombstones

    def free_acked(self, job: Job) -> None:
        """An acked job is freed here, its ID remembered if another node
        was given a copy (a job nobody else held has none on the way)."""
        self.node.delete_job(job)
        if self.held_elsewhere(job):
            self.remember_freed(job.id)

    def held_elsewhere(self, job: Job) -> bool:
        """Another node was given a copy: a message about it may still come."""
        holders = job.nodes_delivered
        return len(holders) > 1 or bool(holders and holders[0] != self.node.id)

    def remember_freed(self, job_id: bytes) -> None:
        self.tombstones.add(job_id)
        self._tombstone_fresh.append(job_id)  # (dated by the next tick)

    def expire_tombstones(self, now_ms: int) -> None:
        fresh = self._tombstone_fresh
        if fresh:
            # Freed since the last tick, so at most now: kept for
            # TOMBSTONE_MS from now, at least as long as from their freeing.
            self._tombstone_ticks.append((now_ms + TOMBSTONE_MS, fresh))
            self._tombstone_fresh = []
        ticks = self._tombstone_ticks
        head = self._tombstone_head
        tombstones = self.tombstones
        while head < len(ticks) and ticks[head][0] <= now_ms:
            ids = ticks[head][1]
            for job_id in ids:
                tombstones.discard(job_id)
            ids.clear()  # (its IDs freed now: a tick's worth)
            head += 1
        self._tombstone_head = drop_passed(ticks, head)
