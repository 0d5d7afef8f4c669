"""Re-queueing (Disque README, "Job re-queueing state machine").

- 500 ms before a held, non-queued job would be requeued, WILLQUEUE goes to
  the other holders.  A holder that has it queued answers QUEUED; one that
  has it acked answers SETACK.  Ours, beyond Disque: a node that sends
  WILLQUEUE late (it was frozen, or its loop was busy, past the requeue
  time) still waits those 500 ms before queueing the job, so the answers
  (often already waiting in its socket) come first.
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
  per turn like all job messages.
- ENQUEUE asks a holder to queue the job now (or after ``aux`` seconds):
  used when the node that took ADDJOB keeps no copy.
"""

from ..protocol import bus
from ..server.core.job import (ACKED, ACTIVE, BCAST_QUEUED, BCAST_WILLQUEUE,
                               QUEUED, WAIT_REPL)
from ..server.core.queue import PAUSED_IN


def broadcast_queued(cluster, job, nack):
    mflags = bus.INCR_NACKS if nack else bus.INCR_DELIV
    cluster.send_to_holders(job, bus.QUEUED, mflags=mflags)


def will_queue(cluster, job):
    cluster.send_to_holders(job, bus.WILLQUEUE)


def working(cluster, job):
    cluster.send_to_holders(job, bus.WORKING)


def delivered(cluster, job):
    """A consumer took the job here: the other holders hold back."""
    if len(job.nodes_delivered) > 1:
        cluster.send_to_holders(job, bus.WORKING)


def sender_wins(sender_id, my_id, job_id):
    """Compare node IDs mixed with the job's random part, so which node
    keeps a doubly-queued job varies from job to job."""
    mix = job_id[11:35]
    a = bytes(c ^ mix[i % 24] for i, c in enumerate(sender_id.encode()))
    b = bytes(c ^ mix[i % 24] for i, c in enumerate(my_id.encode()))
    return a > b


def on_queued_or_working(cluster, sender, items, type_, mflags):
    node = cluster.node
    for job_id, _aux in items:
        job = node.jobs.get(job_id)
        if job is None:
            continue
        if job.state == ACKED:
            cluster.send_setack(sender.id, job)  # tell it we are done with it
            continue
        if job.state == QUEUED and (type_ == bus.WORKING
                                    or sender_wins(sender.id, node.id, job_id)):
            node.dequeue(job)
        if job.retry_s and job.qtime_ms:
            job.flags |= BCAST_WILLQUEUE
            job.qtime_ms = node.now_ms() + job.retry_s * 1000 + node.jitter_ms()
            if job.state != QUEUED:
                node.schedule(job)
        if type_ == bus.QUEUED:
            if mflags & bus.INCR_NACKS:
                job.nacks += 1
            if mflags & bus.INCR_DELIV:
                job.deliveries += 1
        if sender.id not in job.nodes_delivered:
            job.nodes_delivered += (sender.id,)


def on_willqueue(cluster, sender, items):
    node = cluster.node
    for job_id, _aux in items:
        job = node.jobs.get(job_id)
        if job is None:
            continue
        if job.state in (ACTIVE, QUEUED) and sender.id not in job.nodes_delivered:
            job.nodes_delivered += (sender.id,)
        if job.state == QUEUED:
            cluster.send_to_holders(job, bus.QUEUED)
        elif job.state == ACKED:
            cluster.send_setack(sender.id, job)



def on_enqueue(cluster, sender, items):
    node = cluster.node
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
