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

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..protocol import bus, jobid
from ..core.jobs.job import ACKED, DUMMY_ACK, WAIT_REPL, Job
from .membership import ClusterNode

if TYPE_CHECKING:
    from .cluster import Cluster

GC_RETRY_MIN_MS = 1000
GC_RETRY_MAX_MS = 3 * 60 * 1000
GC_RETRY_COUNT_MAX = 10


def next_gc_ms(cluster: "Cluster", job: Job) -> int:
    node = cluster.node
    period = min(GC_RETRY_MIN_MS << job.gc_retry, GC_RETRY_MAX_MS)
    return node.now_ms() + period + node.jitter_ms()


def try_gc(cluster: "Cluster", job: Job) -> None:
    """START-GC: free the job if every holder confirmed, else SETACK them."""
    node = cluster.node
    if job.state != ACKED:
        return
    if job.held_only_by(node.id):
        # Confirmed by all (every job of a lone node): freed at once, as
        # below, minus the bookkeeping.
        cluster.free_acked(job)
        return
    dummy = not job.nodes_delivered
    if job.gc_retry < GC_RETRY_COUNT_MAX:
        job.gc_retry += 1
    if job.nodes_confirmed is None:
        job.nodes_confirmed = {node.id}
    confirmed = job.nodes_confirmed
    if not dummy and all(n in confirmed for n in job.nodes_delivered):
        cluster.free_acked(job)
        if len(job.nodes_delivered) > 1:
            cluster.send_to_holders(job, bus.DELJOB)
        return
    if dummy and cluster.size() == 1:
        node.delete_job(job)
        return
    targets: Sequence[str] = (
        job.nodes_delivered if not dummy
        else [n.id for n in cluster.membership.others() if not n.handshake])
    for target in targets:
        if target not in confirmed:
            cluster.send_setack(target, job)


def _gc_now_and_later(cluster: "Cluster", job: Job) -> None:
    """START-GC now and, unless that freed the job, arm the next attempt."""
    try_gc(cluster, job)
    if job.id in cluster.node.jobs:
        cluster.node.schedule(job)


def dummy_ack(cluster: "Cluster", job_id: bytes) -> None:
    node = cluster.node
    if cluster.size() <= 1 or cluster.leaving() or not jobid.has_retry(job_id):
        return
    now_ms = node.now_ms()
    job = Job(job_id, b"", b"", ACKED, 0, 0,
              now_ms + jobid.ttl_s_from_id(job_id) * 1000, 0, 0)
    job.flags = DUMMY_ACK
    node.register(job)
    _gc_now_and_later(cluster, job)


def on_setack(cluster: "Cluster", sender: ClusterNode, items: list[tuple[bytes, int]]) -> None:
    node = cluster.node
    for job_id, may_have in items:
        job = node.jobs.get(job_id)
        if job is not None:
            if job.state == WAIT_REPL:
                # Acked before ADDJOB got its copies: it is delivered, then.
                if not cluster.replication_achieved(job):
                    continue
            if job.state != ACKED:
                node.mark_acked(job)
        if job is None:
            cluster.remember_freed(job_id)  # acked elsewhere: no late copy
        if job is None or len(job.nodes_delivered) <= may_have:
            cluster.send_jobid(sender.id, bus.GOTACK, job_id, 1 if job is not None else 0)
        else:
            if may_have == 0:
                cluster.send_jobid(sender.id, bus.GOTACK, job_id, 1)
            _gc_now_and_later(cluster, job)


def on_gotack(cluster: "Cluster", sender: ClusterNode, items: list[tuple[bytes, int]]) -> None:
    node = cluster.node
    for job_id, known in items:
        job = node.jobs.get(job_id)
        if job is None or job.state != ACKED:
            continue
        dummy = not job.nodes_delivered
        if dummy and known:
            node.unregister(job)  # a node that knows it will finish the GC
            continue
        if known or sender.id in job.nodes_delivered:
            if sender.id not in job.nodes_delivered:
                job.nodes_delivered += (sender.id,)
            if job.nodes_confirmed is not None:
                job.nodes_confirmed.add(sender.id)
        if not known and dummy:
            if job.nodes_confirmed is None:
                job.nodes_confirmed = {node.id}
            job.nodes_confirmed.add(sender.id)
            if len(job.nodes_confirmed) >= len(cluster.membership.nodes):
                node.unregister(job)  # nobody knows this job
            continue
        if (not dummy and job.nodes_confirmed is not None
                and all(n in job.nodes_confirmed for n in job.nodes_delivered)):
            cluster.send_to_holders(job, bus.DELJOB)
            cluster.free_acked(job)


def on_deljob(cluster: "Cluster", sender: ClusterNode, items: list[tuple[bytes, int]]) -> None:
    node = cluster.node
    for job_id, _aux in items:
        job = node.jobs.get(job_id)
        if job is not None:
            cluster.free_acked(job)
        else:
            # Its REPLJOB may still be on the way (another link, a slow
            # one): make sure it does not create a copy nobody will ack.
            cluster.remember_freed(job_id)


def fast_ack(cluster: "Cluster", job: Job | None, job_id: bytes) -> None:
    """The core frees our copy right after.  A tombstone only where a copy
    may be on the way (as free_acked): on a lone node, FASTACK at 100k/s
    kept a million of them (~200 MB) for their 10 s."""
    if job is not None:
        if cluster.held_elsewhere(job):
            cluster.remember_freed(job_id)
        cluster.send_to_holders(job, bus.DELJOB)
    else:
        others = [n for n in cluster.membership.others() if not n.handshake]
        if others:
            cluster.remember_freed(job_id)
        for other in others:
            cluster.send_jobid(other.id, bus.DELJOB, job_id)
