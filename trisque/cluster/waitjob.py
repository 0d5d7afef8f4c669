"""WAITJOB across the cluster: a client may wait on any node, holder of the
job or not (docs/lifecycle.md, "WAITJOB"; the waits: core/jobs/waits.py).

- The node where a client starts waiting asks every other node (WAITJOB,
  aux 1) and again every ASK_EVERY_MS while a client waits, so a lost
  frame, a link that was down or a copy that arrived later is caught up.
- A node asked answers JOBSTATE with the state of its copy (job.py's
  states), ``acked`` if it acked it or freed it after an ack a moment ago
  (the ack GC's tombstones, acks.py), or UNKNOWN if it holds no copy.
  Holding an un-acked copy, it remembers the asker and sends it JOBSTATE
  again when the copy is acked (ACKJOB, SETACK, FASTACK's DELJOB) or
  leaves (UNKNOWN: expired, deleted).
- When no client waits there any more (timeout, disconnect), the asker
  says so (WAITJOB, aux 0) and the others forget it.
- A mixed cluster: both types go only to peers whose frames carry
  F_WAITJOB.  A job acked on an older node is learnt by the waiting node
  as any holder learns it (SETACK to its copy), or not at all if it holds
  none; and with an older node in the cluster nobody can say that no
  node knows a job, so such a wait ends at its timeout.
"""

from ..protocol import bus
from ..core.hooks import WaitHooks
from ..core.jobs.job import ACKED
from ..core.jobs.waits import UNKNOWN
from ..core.jobs.registry import JobIdSet
from ..core.node import Node
from .membership import ClusterNode, Membership
from .outbox import Outbox

ASK_EVERY_MS = 1000
ASK: int = 1  # WAITJOB's aux: watch the job for me
STOP: int = 0  # ... or forget me


class WaitJobs(WaitHooks):
    def __init__(self, node: Node, outbox: Outbox, membership: Membership,
                 tombstones: JobIdSet) -> None:
        self.node = node
        self.outbox = outbox
        self.membership = membership
        self.tombstones = tombstones  # acks.py's: acked and freed here recently

    def _peers(self) -> list[ClusterNode]:
        return [n for n in self.membership.others() if n.waitjob and not n.handshake]

    # ------------------------------------------- what the core asks of us

    def acked_here(self, job_id: bytes) -> bool:
        return job_id in self.tombstones

    def ask(self, job_id: bytes) -> None:
        for peer in self._peers():
            self.outbox.send_jobid(peer.id, bus.WAITJOB, job_id, ASK)

    def stop(self, job_id: bytes) -> None:
        for peer in self._peers():
            self.outbox.send_jobid(peer.id, bus.WAITJOB, job_id, STOP)

    def tell(self, job_id: bytes, node_ids: list[str], state: int) -> None:
        for node_id in node_ids:
            self.outbox.send_jobid(node_id, bus.JOBSTATE, job_id, state)

    def nobody_holds(self, answers: dict[str, int]) -> bool:
        """Every other node said it has no copy (an older node cannot say)."""
        return all(n.waitjob and answers.get(n.id) == UNKNOWN
                   for n in self.membership.others() if not n.handshake)

    # ------------------------------------------------ what others say

    def on_waitjob(self, sender: ClusterNode, items: list[tuple[bytes, int]]) -> None:
        node = self.node
        waits = node.waits
        answers = []
        for job_id, aux in items:
            if aux == STOP:
                waits.unwatch(job_id, sender.id)
                continue
            job = node.jobs.get(job_id)
            if job is None:
                state = ACKED if job_id in self.tombstones else UNKNOWN
            else:
                state = job.state
                if state != ACKED:
                    waits.watch(job_id, sender.id)
            answers.append((job_id, state))
        self.outbox.send_jobids(sender.id, bus.JOBSTATE, answers)

    def on_jobstate(self, sender: ClusterNode, items: list[tuple[bytes, int]]) -> None:
        waits = self.node.waits
        for job_id, state in items:
            waits.answered(job_id, sender.id, state)

    def cron(self, now_ms: int) -> None:
        """Ask again for the jobs clients still wait on (see the top)."""
        waited = self.node.waited
        if not waited:
            return
        # (a clock set back must not hold the asks back as long)
        again = [job_id for job_id, entry in waited.items()
                 if entry.clients and not 0 <= now_ms - entry.asked_ms < ASK_EVERY_MS]
        if not again:
            return
        items = [(job_id, ASK) for job_id in again]
        for job_id in again:
            waited[job_id].asked_ms = now_ms
        for peer in self._peers():
            self.outbox.send_jobids(peer.id, bus.WAITJOB, items)
