"""What the core asks of the cluster and of the log, for a node alone.

The core calls these hooks at the points where the Disque state machines
involve other nodes or the disk.  ``cluster/`` provides the real cluster
rules with the same methods, ``server/shell/aof.py`` the real log; a node
started without them behaves as a one-node cluster without persistence.
"""

from typing import Any


class Standalone:
    """A cluster of one: nothing to replicate to, nobody to tell."""

    def __init__(self, node: Any) -> None:
        self.node = node

    def size(self):
        """Known nodes, myself included (failed ones count)."""
        return 1

    def reachable_count(self):
        """Other nodes we can replicate to now."""
        return 0

    def leaving(self):
        return False

    def replicate(self, job, client, timeout_ms, asynchronous, external):
        raise AssertionError("no other node to replicate to")

    def replication_aborted(self, job):
        """A job whose ADDJOB still waits for copies was removed."""

    def broadcast_queued(self, job, nack):
        """The job was queued again here (rule: QUEUED to other holders)."""

    def will_queue(self, job):
        """We will requeue the job in 500 ms (rule: WILLQUEUE)."""

    def delivered(self, job):
        """A consumer took the job (GETJOB): other holders hold back."""

    def working(self, job):
        """A consumer said WORKING: other holders postpone their requeue."""

    def try_gc(self, job):
        """Ack garbage collection: with no other holder, free it now."""
        self.node.delete_job(job)

    def next_gc_ms(self, job):
        return job.etime_ms

    def dummy_ack(self, job_id):
        """ACKJOB for a job never seen here: nothing to tell anyone."""
        return None

    def fast_ack(self, job, job_id):
        """FASTACK: best-effort DELJOB to other holders."""

    def need_jobs(self, queue_name):
        """A consumer found the queue empty (federation: NEEDJOBS)."""

    def queue_drained(self, queue):
        """The queue just became empty (federation: ad-hoc NEEDJOBS)."""

    def jobs_queued(self, queue):
        """Jobs were queued and no local consumer took them (federation:
        answer the NEEDJOBS that found the queue empty)."""

    def import_rate(self, queue):
        """Jobs per second this queue received from other nodes."""
        return 0

    def pause_broadcast(self, queue_name, flags):
        """PAUSE ... BCAST."""

    def hello_nodes(self):
        """[id, ip, port, priority] for every node, myself first."""
        node = self.node
        return [[node.id, node.config.bind_address(), str(node.config.port), "1"]]

    def cron(self, now_ms):
        pass

    def info_fields(self):
        return [("cluster_state", "ok"), ("cluster_known_nodes", 1),
                ("cluster_reachable_nodes", 0)]


class NoLog:
    """No append-only file: nothing is written."""

    enabled = False
    failing = None  # why the last write failed (MISCONF), or None
    end = durable = 0  # bytes logged / safe per the fsync policy (shell)

    def job_stored(self, job):
        pass

    def job_deleted(self, job):
        pass

    def append_command(self, *argv):
        pass

    def reload(self):
        pass

    def rewrite(self):
        from ...protocol.errors import CommandError
        raise CommandError("ERR Background AOF rewrite needs appendonly yes")

    def info(self):
        return {"loading": 0, "aof_enabled": 0, "aof_state": "off",
                "aof_rewrite_in_progress": 0, "aof_rewrite_scheduled": 0,
                "aof_last_write_status": "ok"}
