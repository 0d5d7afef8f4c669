"""The core's seams: what it asks of the cluster and of the log.

The core calls these at the points where Disque's state machines involve
other nodes or the disk.  Each base class answers as a node alone does (no
one to replicate to, nobody to tell, nothing written), so a node started
without a cluster or an append-only file runs on them as they are.
``cluster/`` subclasses them, one object per state machine (replication.py,
requeue.py, acks.py, federation.py), owned by ``Cluster`` (cluster.py),
which hands them to the node; ``server/aof/`` provides the real log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from mypy_extensions import mypyc_attr

from ..protocol.errors import CommandError

if TYPE_CHECKING:
    from .client import Client, PendingReply
    from .jobs.job import Job
    from .jobs.lifecycle import JobLifecycle
    from .jobs.queue import Queue
    from .node import Node


class ReplicationHooks:
    """Job replication (ADDJOB REPLICATE n > 1)."""

    def replicate(self, job: Job, client: Client, timeout_ms: int, asynchronous: bool,
                  external: bool, now_ms: int) -> PendingReply | bytes:
        """Copy the job to other nodes: the reply now, or one that waits."""
        raise AssertionError("no other node to replicate to")

    def aborted(self, job: Job) -> None:
        """A job whose ADDJOB still waits for copies was removed."""


# What a job's other holders hear from this node (RequeueHooks.tell_holders;
# cluster/requeue.py sends each as its bus message).
REQUEUED: Final = 0  # queued again here, a NACK or a delivery counted (QUEUED)
WORKING: Final = 1  # a consumer has it here, or its requeue waits: hold back (WORKING)
DEAD_LETTERED: Final = 2  # at its delivery limit here: now in its dead-letter queue (DEADJOB)
FAILED: Final = 3  # NACK ... DEAD here: in its dead-letter queue, with no limit needed (DEADJOB)
REVIVED: Final = 4  # back from its dead-letter queue here (REVIVE)


class RequeueHooks:
    """Requeueing: what other holders hear when a job moves here."""

    def timer_fired(self, job: Job, now_ms: int) -> bool:
        """The requeue timer of an active job fired: True if the job is to
        be queued again now (a node alone has nobody to warn first)."""
        return job.qtime_ms <= now_ms

    def tell_holders(self, job: Job, news: int, nack: bool = False) -> None:
        """The job's other holders hear ``news`` (REQUEUED, WORKING,
        DEAD_LETTERED, FAILED, REVIVED); ``nack``: the delivery that ended
        was a NACK.  A dead-lettered job is still in its old queue when
        this is called.  A node alone has nobody to tell."""


class AckHooks:
    """Acks and their garbage collection."""

    def __init__(self, node: JobLifecycle) -> None:
        self.node = node

    def try_gc(self, job: Job) -> None:
        """An acked job: with no other holder, free it now."""
        self.node.delete_job(job)

    def hold_gc(self, job: Job) -> bool:
        """Keep a consumer's ack's START-GC for after the turn's replies
        (True), or not (False: a node alone has no holder to tell)."""
        return False

    def retry_gc(self, job: Job) -> None:
        """START-GC now (a consumer's ack, now or held until the turn's
        replies were out; its retry timer fired; a SETACK or a dummy ack
        starts it) and, unless that freed the job (a node alone always
        does), arm the next attempt."""
        self.try_gc(job)
        node = self.node
        if job.id in node.jobs:
            node.schedule(job)

    def next_gc_ms(self, job: Job) -> int:
        """When to try the GC of an acked job again."""
        return job.etime_ms

    def dummy_ack(self, job_id: bytes) -> None:
        """ACKJOB for a job never seen here: nothing to tell anyone."""

    def fast_ack(self, job: Job | None, job_id: bytes) -> None:
        """FASTACK: best-effort DELJOB to other holders."""


class FederationHooks:
    """Federation: consumers here, jobs elsewhere (NEEDJOBS/YOURJOBS)."""

    def need_jobs(self, queue: Queue, now_ms: int) -> None:
        """A consumer found ``queue`` empty (at ``now_ms``)."""

    def queue_drained(self, queue: Queue) -> None:
        """The queue just became empty (an ad-hoc NEEDJOBS)."""

    def jobs_queued(self, queue: Queue) -> None:
        """Jobs were queued and no local consumer took them (answer the
        NEEDJOBS that found the queue empty)."""

    def import_rate(self, queue: Queue) -> int:
        """Jobs per second this queue received from other nodes."""
        return 0


@mypyc_attr(allow_interpreted_subclasses=True)  # (cluster/waitjob.py's, interpreted)
class WaitHooks:
    """WAITJOB's other nodes (jobs/waits.py): as is, a node alone's."""

    def acked_here(self, job_id: bytes) -> bool:
        """The job was acked and freed here a moment ago (a tombstone)."""
        return False

    def ask(self, job_id: bytes) -> None:
        """A client here waits on the job: ask the other nodes to tell us."""

    def stop(self, job_id: bytes) -> None:
        """No client here waits on it any more: the other nodes may forget."""

    def tell(self, job_id: bytes, node_ids: list[str], state: int) -> None:
        """Our copy was acked or left (jobs/waits.py's UNKNOWN): tell them."""

    def nobody_holds(self, answers: dict[str, int]) -> bool:
        """Every other node's answer in ``answers`` is that it holds no copy."""
        return True


class ClusterHooks:
    """The cluster as a whole, as the core sees it; as is, a cluster of one.
    (Its state machines' hooks above are the node's own attributes, read
    on every job: ``node.requeue``, ``node.acks``, ...)"""

    def __init__(self, node: Node) -> None:
        self.node = node

    def size(self) -> int:
        """Known nodes, myself included (failed ones count)."""
        return 1

    def reachable_count(self) -> int:
        """Other nodes we can replicate to now."""
        return 0

    def leaving(self) -> bool:
        return False

    def pause_broadcast(self, queue_name: bytes, flags: int) -> None:
        """PAUSE ... BCAST."""

    def publish(self, channel: bytes, message: bytes, shard: bool) -> None:
        """PUBLISH (SPUBLISH): the other nodes' subscribers hear it too."""
    def queue_policy_changed(self, queue_name: bytes) -> None:
        """QCONFIG set a queue's policy here: every other node hears it."""

    def schedule_changed(self, name: bytes) -> None:
        """SCHEDULE ADD/DEL here: every other node hears it."""

    def schedule_fired(self, name: bytes, tick_ms: int, job_id: bytes) -> None:
        """This node added the job of a schedule's tick: the others hear
        it, so they do not add another (core/jobs/schedules.py)."""

    def schedule_rank(self) -> int:
        """My place by ID among myself and the reachable peers that know
        schedules: 0 fires a tick first; alone, always 0."""
        return 0

    def known_peers(self) -> list[str]:
        """The IDs of every other node of the cluster, reachable or not
        (a schedule's tombstone waits for each: core/jobs/schedules.py)."""
        return []

    def hello_nodes(self) -> list[list[str]]:
        """[id, ip, port, priority] for every node, myself first."""
        node = self.node
        return [[node.id, node.config.bind_address(), str(node.config.port), "1"]]

    def cron(self, now_ms: int) -> None:
        """The cluster's housekeeping, each cron tick."""

    def info_fields(self) -> list[tuple[str, str | int]]:
        return [("cluster_state", "ok"), ("cluster_known_nodes", 1),
                ("cluster_reachable_nodes", 0)]


class NoLog:
    """No append-only file: nothing is written."""

    enabled = False
    failing: str | None = None  # why the last write failed (MISCONF), or None
    records_jobs = False  # (node.log_active: the job hooks are not called)
    end = 0  # bytes logged (shell)
    durable = 0  # bytes safe per the fsync policy (shell)

    def job_stored(self, job: Job) -> None:
        pass

    def job_deleted(self, job: Job) -> None:
        pass

    def job_updated(self, job: Job) -> None:
        """A stored job changed in a way a restart must see (its queue, its
        policy, its delivery count: policy.py)."""

    def append_command(self, *argv: bytes) -> None:
        pass

    def reload(self) -> None:
        pass

    def rewrite(self) -> str:
        raise CommandError("ERR Background AOF rewrite needs appendonly yes")

    def info(self) -> dict[str, str | int]:
        return {"loading": 0, "aof_enabled": 0, "aof_state": "off",
                "aof_rewrite_in_progress": 0, "aof_rewrite_scheduled": 0,
                "aof_last_write_status": "ok"}
