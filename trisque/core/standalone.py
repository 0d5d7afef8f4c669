"""What the core asks of the cluster and of the log, for a node alone.

The core calls these hooks at the points where the Disque state machines
involve other nodes or the disk.  ``cluster/`` provides the real cluster
rules with the same methods, ``server/aof/append_only_log.py`` the real log; a node
started without them behaves as a one-node cluster without persistence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .client import Client
    from .jobs.job import Job
    from .node import Node
    from .jobs.queue import Queue


class Standalone:
    """A cluster of one: nothing to replicate to, nobody to tell."""

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

    def replicate(self, job: Job, client: Client, timeout_ms: int, asynchronous: bool,
                  external: bool) -> bytes:
        raise AssertionError("no other node to replicate to")

    def replication_aborted(self, job: Job) -> None:
        """A job whose ADDJOB still waits for copies was removed."""

    def broadcast_queued(self, job: Job, nack: bool) -> None:
        """The job was queued again here (rule: QUEUED to other holders)."""

    def will_queue(self, job: Job) -> None:
        """We will requeue the job in 500 ms (rule: WILLQUEUE)."""

    def delivered(self, job: Job) -> None:
        """A consumer took the job (GETJOB): other holders hold back."""

    def working(self, job: Job) -> None:
        """A consumer said WORKING: other holders postpone their requeue."""

    def try_gc(self, job: Job) -> None:
        """Ack garbage collection: with no other holder, free it now."""
        self.node.delete_job(job)

    def next_gc_ms(self, job: Job) -> int:
        return job.etime_ms

    def dummy_ack(self, job_id: bytes) -> None:
        """ACKJOB for a job never seen here: nothing to tell anyone."""
        return None

    def fast_ack(self, job: Job | None, job_id: bytes) -> None:
        """FASTACK: best-effort DELJOB to other holders."""

    def need_jobs(self, queue_name: bytes) -> None:
        """A consumer found the queue empty (federation: NEEDJOBS)."""

    def queue_drained(self, queue: Queue) -> None:
        """The queue just became empty (federation: ad-hoc NEEDJOBS)."""

    def jobs_queued(self, queue: Queue) -> None:
        """Jobs were queued and no local consumer took them (federation:
        answer the NEEDJOBS that found the queue empty)."""

    def import_rate(self, queue: Queue) -> int:
        """Jobs per second this queue received from other nodes."""
        return 0

    def pause_broadcast(self, queue_name: bytes, flags: int) -> None:
        """PAUSE ... BCAST."""

    def hello_nodes(self) -> list[list[str]]:
        """[id, ip, port, priority] for every node, myself first."""
        node = self.node
        return [[node.id, node.config.bind_address(), str(node.config.port), "1"]]

    def cron(self, now_ms: int) -> None:
        pass

    def info_fields(self) -> list[tuple[str, str | int]]:
        return [("cluster_state", "ok"), ("cluster_known_nodes", 1),
                ("cluster_reachable_nodes", 0)]


class NoLog:
    """No append-only file: nothing is written."""

    enabled = False
    failing: str | None = None  # why the last write failed (MISCONF), or None
    records_jobs = False  # (node.log_active: the job hooks are not called)
    end = durable = 0  # bytes logged / safe per the fsync policy (shell)

    def job_stored(self, job: Job) -> None:
        pass

    def job_deleted(self, job: Job) -> None:
        pass

    def append_command(self, *argv: bytes) -> None:
        pass

    def reload(self) -> None:
        pass

    def rewrite(self) -> str:
        from ..protocol.errors import CommandError
        raise CommandError("ERR Background AOF rewrite needs appendonly yes")

    def info(self) -> dict[str, str | int]:
        return {"loading": 0, "aof_enabled": 0, "aof_state": "off",
                "aof_rewrite_in_progress": 0, "aof_rewrite_scheduled": 0,
                "aof_last_write_status": "ok"}
