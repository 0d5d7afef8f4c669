"""Re-queueing (Disque README, "Job re-queueing state machine").

- 500 ms before a held, non-queued job would be requeued, WILLQUEUE goes to
  the other holders.  A holder that has it queued answers QUEUED; one that
  has it acked answers SETACK.  Ours, beyond Disque: a node that sends
  WILLQUEUE late (it was frozen, or its loop was busy, past the requeue
  time) still waits those 500 ms before queueing the job, so the answers
  (often already waiting in its socket) come first.
- Ours, beyond Disque (issue 13): a holder whose consumers wait on the
  job's queue (a client blocked on it, or a GETJOB asking for it in the
  last second) says so in its WILLQUEUE.  A holder that has the job queued
  but no consumer of its own in that time cannot deliver it soon: it lets
  go of its queued copy (back to active, its own requeue timer re-armed)
  instead of answering QUEUED, and the asking holder queues the job for
  its consumers.  Disque answers QUEUED whenever the job is queued, so a
  job queued on a node nobody polls waits there until federation
  (NEEDJOBS, whose discovery backs off to 30 s) pulls it; now a consumer
  waiting on any holder gets it within about one RETRY, even with every
  NEEDJOBS lost.  Where no consumer waits anywhere nothing changes: a
  job not consumed is not requeued.
- When a holder queues the job again it sends QUEUED (counting a NACK or an
  additional delivery).  Receivers push their own requeue time back by
  RETRY; a receiver that has it queued too dequeues it if the sender's ID,
  mixed with the job ID, is greater: so at most one node keeps it queued.
- WORKING (a consumer is still on it) is QUEUED that always dequeues.
- Ours, beyond Disque: when a consumer takes the job (GETJOB), the node
  sends WORKING to the other holders.  Their requeue timers started when
  they got their copy, possibly long before; without this, a replica
  could requeue a job a consumer is processing right now, a duplicate
  delivery in a perfectly healthy cluster.  The messages are coalesced
  like the GC's, lazily (outbox.py): they go with the next other message
  to that holder (the job's SETACK, the next job's REPLJOB) or at the
  next cron tick, not each in a send of its own.
- ENQUEUE asks a holder to queue the job now (or after ``aux`` seconds):
  used when the node that took ADDJOB keeps no copy.
- Ours (delivery policies, docs/lifecycle.md): a holder that finds a job
  at its delivery limit moves it to its dead-letter queue, queues it there
  and sends DEADJOB (aux 1: the last delivery ended in a NACK; 2: NACK ...
  DEAD, the consumer said it failed for good); receivers
  move their copy too, not queued, its requeue held back a RETRY, as on
  QUEUED; with it, LASTERROR carries the job's last error (NACK ...
  REASON) if it has one, so its dead copies show the same one everywhere.
  REVIVE puts a dead job back in the queue it died in: the node
  that took the command queues it and sends REVIVE; receivers move their
  copy back and hold it back.
"""

from typing import Final

from ..protocol import bus
from ..core.jobs.job import (ACKED, ACTIVE, BCAST_QUEUED, BCAST_WILLQUEUE,
                               QUEUED, WAIT_REPL, Job)
from ..core.hooks import FAILED, REQUEUED, REVIVED, WORKING, RequeueHooks
from ..core.node import Node
from ..core.jobs.lifecycle import WILLQUEUE_ADVANCE_MS
from ..core.jobs.policy import MAX_REASON_BYTES, Policy
from ..core.jobs.queue import PAUSED_IN, PAUSED_OUT
from .membership import ClusterNode
from .outbox import Outbox
from .replication import holds

# (Final: constants to the compiled module, not a dictionary look-up a use)
CONSUMER_RECENT_MS: Final = 1000  # a GETJOB this recent means consumers poll here
CONSUMERS_WAIT: Final = 1  # WILLQUEUE's aux: the sender has consumers waiting
DEAD_NACK: Final = 1  # DEADJOB's aux: the last delivery ended in a NACK
# ... and a consumer said it failed for good (NACK ... DEAD): copies with
# no policy move too (a node from before it reads bit 1 only, and leaves them)
DEAD_FAILED: Final = 2


def consumers_wait(node: Node, queue_name: bytes) -> bool:
    """Whether consumers here could take a job of ``queue_name`` soon."""
    queue = node.queues.get(queue_name)
    return (queue is not None and not queue.paused & PAUSED_OUT
            and (bool(queue.blocked)
                 or node.now_ms() - queue.consumer_ms <= CONSUMER_RECENT_MS))


def sender_wins(sender_id: str, my_id: str, job_id: bytes) -> bool:
    """Compare node IDs mixed with the job's random part, so which node
    keeps a doubly-queued job varies from job to job."""
    mix = job_id[11:35]
    a = bytes(c ^ mix[i % 24] for i, c in enumerate(sender_id.encode()))
    b = bytes(c ^ mix[i % 24] for i, c in enumerate(my_id.encode()))
    return a > b


class Requeue(RequeueHooks):
    """The requeue state machine of this node's held jobs."""

    node: Node
    outbox: Outbox
    jobs_let_go: int

    def __init__(self, node: Node, outbox: Outbox) -> None:
        self.node = node
        self.outbox = outbox
        self.jobs_let_go = 0  # queued copies handed to a holder with consumers

    # ------------------------------------------ what the core tells us

    def timer_fired(self, job: Job, now_ms: int) -> bool:
        """The requeue timer of an active job here fired: WILLQUEUE goes to
        the other holders first, WILLQUEUE_ADVANCE_MS ahead; True once the
        requeue itself is due."""
        node = self.node
        if job.flags & BCAST_WILLQUEUE and node.cluster_size > 1:
            if job.qtime_ms - WILLQUEUE_ADVANCE_MS <= now_ms:
                aux = CONSUMERS_WAIT if consumers_wait(node, job.queue) else 0
                self.outbox.send_to_holders(job, bus.WILLQUEUE, aux)
                job.flags &= ~BCAST_WILLQUEUE
                if job.qtime_ms - WILLQUEUE_ADVANCE_MS < now_ms:
                    # Woken late (the node was frozen, or its loop busy): the
                    # holders still get the advance to answer (SETACK if it
                    # was acked meanwhile, QUEUED if queued elsewhere) before
                    # it goes back in a queue.
                    job.qtime_ms = now_ms + WILLQUEUE_ADVANCE_MS
            return False  # (queued at the earliest the advance after WILLQUEUE)
        return job.qtime_ms <= now_ms

    def tell_holders(self, job: Job, news: int, nack: bool = False) -> None:
        """The other holders hear what this node did with the job, as the
        rules above say: QUEUED (counting a NACK or a delivery), WORKING,
        DEADJOB with the job's last error, or REVIVE."""
        outbox = self.outbox
        if news == REQUEUED:
            outbox.send_to_holders(job, bus.QUEUED, 0,
                                   bus.INCR_NACKS if nack else bus.INCR_DELIV)
        elif news == WORKING:
            # Lazy (outbox.py): with the job's SETACK or the next job's
            # REPLJOB, else the next cron tick (at the default hz, within the
            # WILLQUEUE_ADVANCE_MS a replica waits before it requeues).
            outbox.send_to_holders(job, bus.WORKING, lazy=True)
        elif news == REVIVED:
            outbox.send_to_holders(job, bus.REVIVE)
        else:  # DEAD_LETTERED, FAILED
            outbox.send_to_holders(job, bus.DEADJOB, (DEAD_NACK if nack else 0)
                                   | (DEAD_FAILED if news == FAILED else 0))
            policy = job.policy
            if policy is not None and policy.last_error:
                outbox.send_last_error(job, policy.last_error)

    def on_last_error(self, sender: ClusterNode, job_id: bytes, text: bytes) -> None:
        """A holder's copy died with this last error: ours gets it too."""
        node = self.node
        job = node.jobs.get(job_id)
        if job is None or job.state == ACKED:
            return
        text = text[:MAX_REASON_BYTES]
        policy = job.policy
        if policy is None:
            # (a plain copy, about to die by NACK ... DEAD: from its queue's
            # defaults, as dead_letter would make it)
            default = node.queue_policies.get(job.queue)
            policy = default.policy.copy() if default is not None else Policy()
        elif policy.last_error != text:
            policy = policy.copy()
        else:
            return
        policy.last_error = text
        node.set_policy(job, policy)
        node.relog(job)

    def on_deadjob(self, sender: ClusterNode, items: list[tuple[bytes, int]]) -> None:
        node = self.node
        for job_id, aux in items:
            job = node.jobs.get(job_id)
            if job is None:
                continue
            if job.state == ACKED:
                self.outbox.send_setack(sender.id, job)
                continue
            node.dead_lettered_elsewhere(job, bool(aux & DEAD_NACK),
                                         bool(aux & DEAD_FAILED))

    def on_revive(self, sender: ClusterNode, items: list[tuple[bytes, int]]) -> None:
        node = self.node
        for job_id, _aux in items:
            job = node.jobs.get(job_id)
            if job is not None:
                node.revived_elsewhere(job)

    # ------------------------------------------ what other holders say

    def on_queued_or_working(self, sender: ClusterNode, items: list[tuple[bytes, int]],
                             type_: int, mflags: int) -> None:
        for job_id, _aux in items:
            self.queued_or_working(sender, job_id, type_, mflags)

    def queued_or_working(self, sender: ClusterNode, job_id: bytes, type_: int,
                          mflags: int) -> None:
        """One item of a QUEUED or WORKING frame (a lone one: from
        cluster.py's dispatch, no list made)."""
        node = self.node
        job = node.jobs.get(job_id)
        if job is None:
            return
        if job.state == ACKED:
            self.outbox.send_setack(sender.id, job)  # tell it we are done with it
            return
        if job.state == QUEUED and (type_ == bus.WORKING
                                    or sender_wins(sender.id, node.id, job_id)):
            node.dequeue(job)
        if job.retry_s and job.qtime_ms:
            job.flags |= BCAST_WILLQUEUE
            qtime = node.now_ms() + job.retry_s * 1000 + node.jitter_ms()
            job.qtime_ms = qtime
            if job.state != QUEUED:
                # A wake-up due no later than the new one stays: there
                # process_job finds nothing due and re-arms it.  Most
                # jobs are acked first, so the move is mostly saved.
                wake = job.wake_ms
                if (wake is None or wake > qtime - WILLQUEUE_ADVANCE_MS
                        or wake > job.etime_ms):
                    node.schedule(job)
        if type_ == bus.QUEUED:
            if mflags & bus.INCR_NACKS:
                job.nacks += 1
            if mflags & bus.INCR_DELIV:
                job.deliveries += 1
        if not holds(job.nodes_delivered, sender.id):
            job.nodes_delivered += (sender.id,)

    def on_willqueue(self, sender: ClusterNode, items: list[tuple[bytes, int]]) -> None:
        node = self.node
        for job_id, aux in items:
            job = node.jobs.get(job_id)
            if job is None:
                continue
            if job.state in (ACTIVE, QUEUED) and not holds(job.nodes_delivered, sender.id):
                job.nodes_delivered += (sender.id,)
            if job.state == QUEUED:
                if aux & CONSUMERS_WAIT and job.retry_s and not consumers_wait(node, job.queue):
                    # Nobody takes it here; the sender's consumers wait for it.
                    job.flags |= BCAST_WILLQUEUE
                    job.qtime_ms = node.now_ms() + job.retry_s * 1000 + node.jitter_ms()
                    node.dequeue(job)
                    self.jobs_let_go += 1
                else:
                    self.outbox.send_to_holders(job, bus.QUEUED)
            elif job.state == ACKED:
                self.outbox.send_setack(sender.id, job)

    def on_enqueue(self, sender: ClusterNode, items: list[tuple[bytes, int]]) -> None:
        node = self.node
        for job_id, delay_s in items:
            job = node.jobs.get(job_id)
            if job is None or job.state not in (WAIT_REPL, ACTIVE):
                continue
            queue = node.queues.get(job.queue)
            if queue is not None and queue.paused & PAUSED_IN:
                continue
            # We are the first to queue it: no QUEUED broadcast this time.
            job.flags &= ~BCAST_QUEUED
            if job.state == WAIT_REPL:
                job.state = ACTIVE
            if delay_s == 0:
                if not job.qtime_ms:
                    job.qtime_ms = node.now_ms()
                node.enqueue(job)
            elif job.retry_s and job.qtime_ms:
                job.qtime_ms = node.now_ms() + delay_s * 1000
                node.schedule(job)
