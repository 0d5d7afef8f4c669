"""The at-least-once checker: what the cluster promised, and what it did.

Recorded during a run:
- every ADDJOB the cluster accepted (and which nodes held the job then);
- every delivery (a job ID in a GETJOB reply) and why a later delivery of
  the same job was expected (NACK, a consumer that died holding it, one
  that worked longer than RETRY);
- every ACKJOB answered, and every copy of every job coming and going on
  every node, alive or on the disk of a crashed node, or travelling in a
  REPLJOB or YOURJOBS frame (held until it arrives or is lost).

Checked at the end, after healing and quiescence:
- *lost*: a job whose synchronous ADDJOB succeeded, never delivered
  although its TTL did not pass, with no copy left (unless every node that
  held it lost its disk in a crash: beyond the promise);
- *starved*: such a job with a copy left (RETRY 0 here; other jobs are
  judged by the liveness rule, liveness.py, which also covers redelivery);
- *acked then delivered*: a delivery after the ack reached every holder
  (no node, alive or on disk, still had an un-acked copy);
- *leaks*: registered jobs left on any node once everything is acked or
  expired;
- duplicates (deliveries nobody asked for) are counted and reported; in a
  run without faults they must be zero.

Delivery policies (docs/lifecycle.md, ``--policies``):
- *over the limit*: a job with MAXDELIVERIES n delivered from its own
  queue more than k * n times, k its copies (a node's copy counts again
  if it got a new one after losing it, or reloaded it after a crash);
- *dead, then lost*: a job delivered n times from its own queue, never
  acknowledged, its TTL not over, never delivered from a dead-letter
  queue, and no copy left: a job past its limit is dead, not lost;
- *nacked DEAD*: a job a node moved to its dead-letter queue on NACK ...
  DEAD is dead, not lost (the rule above, for it), and that node does not
  deliver it from its own queue again (unless its copy went with its
  disk or it got a new copy since: another holder's, not yet dead, by
  YOURJOBS, whose queue wins as federation's rule says).

Idempotent adds (docs/lifecycle.md, ``--policies`` too):
- *idempotency*: an ADDJOB retried with a key, sent to a node that held a
  copy of a job added with that key (its disk not wiped since, the job's
  TTL not over), answered a job ID no add with that key had answered
  before: a second job where the guarantee promises the first.  A node
  that never held one may create a second job: not a violation; nor may
  one whose copy came without the key (sent before the sender heard from
  it since it came back: the mixed-cluster rule, docs/lifecycle.md).

WAITJOB (docs/lifecycle.md, ``--policies`` too):
- *waitjob acked*: a WAITJOB answered ``acked`` for a job no ACKJOB or
  FASTACK was sent for before the answer;
- *waitjob null*: a WAITJOB answered a null before its timeout (every
  node said it holds no copy) while a node held an un-acked copy (jobs
  with a RETRY: an at-most-once job moved by federation is between nodes
  for a moment).  At the timeout a null only says that no copy answered
  (a partition);
- *waitjob missed*: after the heal, a WAITJOB started before an ACKJOB of
  its job was answered, still not answered ``acked`` WAIT_MISSED_MS after
  that ACKJOB's answer (jobs with a RETRY, the TTL not over; FASTACK's
  best effort and an at-most-once job acked on a non-holder, which no
  holder hears of, are not judged).
"""

from trisque.protocol import aof
from trisque.core.jobs.job import ACKED, deserialize

# An ACKJOB reaches the waiting node within a few bus round trips and one
# re-ask (cluster/waitjob.py: every 1 s); stalled nodes (load.py: up to
# 2.5 s) delay both.
WAIT_MISSED_MS = 6000


class JobRecord:
    __slots__ = ("id", "accepted_ms", "synchronous", "ttl_ms", "got_copy_ms", "wiped_ms",
                 "retry_s",
                 "fastacked", "created_ms",
                 "deliveries", "expected_redeliveries", "acked_ms",
                 "full_ack_ms", "duplicates", "max_deliveries", "own_deliveries",
                 "dead_deliveries", "copies", "ack_sent_ms", "nacked_dead")

    def __init__(self, job_id):
        self.id = job_id
        self.accepted_ms = None
        self.synchronous = False
        self.ttl_ms = 0
        self.got_copy_ms = {}  # node index -> when it last got a copy
        self.wiped_ms = {}  # node index -> when its copy last went with its disk
        self.retry_s = None
        self.fastacked = False
        self.created_ms = None  # when the first copy appeared anywhere
        self.deliveries = []  # (time ms, node index)
        self.expected_redeliveries = 0
        self.acked_ms = None
        self.full_ack_ms = None
        self.duplicates = 0
        self.max_deliveries = 0  # its delivery limit (0: none)
        self.own_deliveries = 0  # from its own queue
        self.dead_deliveries = 0  # from a dead-letter queue
        self.copies = 0  # copies it had: a node's every new one counts
        self.ack_sent_ms = None  # the first ACKJOB or FASTACK sent for it
        self.nacked_dead = None  # (node index, ms) of a NACK ... DEAD that moved it

    def expires_ms(self) -> int:
        """When its TTL ends: counted from its creation, which may come
        well before the ADDJOB's reply (a slow node, a slow client)."""
        born_ms = self.created_ms if self.created_ms is not None else self.accepted_ms
        return born_ms + self.ttl_ms


class Checker:
    def __init__(self, world):
        self.world = world
        self.jobs = {}
        self.live = {}  # job id -> node indexes holding an un-acked copy
        self.on_disk = {}  # node index (crashed) -> job ids un-acked on its disk
        self.wire = {}  # job id -> copies in REPLJOB/YOURJOBS frames in flight
        self.crashes = []  # times any node crashed
        self.violations = []
        self.max_dummy_acks = 0
        self.watch = None  # (job id, list): what happens to it, for traces
        self.empty_polls = []  # when a consumer's GETJOB timed out with nothing, in order
        # While a node replays its AOF, a job it updated (DELJOB + LOADJOB,
        # docs/lifecycle.md) is gone for a moment: not a moment when no
        # node holds it.  Judged once the replay is over.
        self.replaying = None  # job ids a copy of went during the replay
        self.key_ids = {}  # idempotency key -> IDs answered to adds with it
        self.wiped_disk_ms = {}  # node index -> when its disk was last wiped
        self.key_copies = {}  # job id -> {node index: when it got a copy with its key}
        self.keyed_retries = [0, 0]  # retries sent to a holder, to a non-holder
        self.healed_ms = None  # when the faults were healed (run.py)
        self.waits = [0, 0, 0]  # WAITJOBs answered acked, null, with a state

    # --------------------------------------------------- idempotent adds

    def disk_wiped(self, index):
        self.wiped_disk_ms[index] = self.world.now_ms

    def key_copy_added(self, index, job_id):
        self.key_copies.setdefault(job_id, {})[index] = self.world.now_ms

    def keyed_added(self, key, job_id):
        self.key_ids.setdefault(key, set()).add(job_id)

    def key_holders(self, key):
        """Nodes that hold or held a copy of a job added with ``key``, whose
        TTL has time left, their disk not wiped since."""
        now = self.world.now_ms
        nodes = set()
        for job_id in self.key_ids.get(key, ()):
            rec = self.jobs.get(job_id)
            if rec is None or rec.accepted_ms is None or rec.expires_ms() <= now + 5000:
                continue
            for index, got_ms in self.key_copies.get(job_id, {}).items():
                if got_ms < now and self.wiped_disk_ms.get(index, -1) < got_ms:
                    nodes.add(index)
        return nodes

    def keyed_retry(self, key, index, known, holder, answer):
        """A retried ADDJOB with ``key`` to node ``index`` answered ``answer``
        (``known``: the IDs the key had when it was sent)."""
        self.keyed_retries[0 if holder else 1] += 1
        if holder and answer not in known:
            self.violations.append(
                f"idempotency: ADDJOB with key {key.decode()} to node {index}, which held "
                f"a copy of {sorted(j.decode() for j in known)}, created "
                f"{answer.decode()} at {self.world.now_ms} ms")

    # ------------------------------------------------------------ WAITJOB

    def ack_sent(self, job_id):
        rec = self.record(job_id)
        if rec.ack_sent_ms is None:
            rec.ack_sent_ms = self.world.now_ms

    def wait_answered(self, job_id, index, started_ms, timed_out, reply):
        """WAITJOB ``job_id`` on node ``index`` since ``started_ms`` got
        ``reply`` (``timed_out``: at its timeout, by the node's clock)."""
        now = self.world.now_ms
        rec = self.record(job_id)
        where = f"WAITJOB {job_id.decode()} on node {index} from {started_ms} ms"
        if isinstance(reply, Exception):
            if not str(reply).startswith("LOADING"):
                self.violations.append(f"waitjob error: {where}: {reply}")
            return
        if reply == b"acked":
            self.waits[0] += 1
            if rec.ack_sent_ms is None:
                self.violations.append(f"waitjob acked: {where} answered acked at {now} ms, "
                                       f"no ACKJOB or FASTACK sent")
            return
        self.waits[1 if reply is None else 2] += 1
        if reply is None and rec.retry_s and job_id in self.live and not timed_out:
            self.violations.append(f"waitjob null: {where} answered null at {now} ms, "
                                   f"held by {self.where(job_id)}")
        acked = rec.acked_ms
        if (acked is not None and self.healed_ms is not None and rec.retry_s
                and not rec.fastacked and started_ms <= acked and acked >= self.healed_ms
                and now - acked >= WAIT_MISSED_MS and now < rec.expires_ms()):
            self.violations.append(f"waitjob missed: {where} answered {reply!r} at {now} ms, "
                                   f"its ACKJOB answered at {acked} ms")

    def _note(self, job_id, what):
        if self.watch is not None and job_id == self.watch[0]:
            self.watch[1].append(f"{self.world.now_ms:>8} ms  {what}")

    def record(self, job_id):
        rec = self.jobs.get(job_id)
        if rec is None:
            rec = self.jobs[job_id] = JobRecord(job_id)
        return rec

    # --------------------------------------------------- copies

    def copy_added(self, index, job_id):
        self._note(job_id, f"node {index} holds a copy")
        rec = self.record(job_id)
        if rec.created_ms is None:
            rec.created_ms = self.world.now_ms
        rec.got_copy_ms[index] = self.world.now_ms
        holders = self.live.setdefault(job_id, set())
        if index not in holders:
            rec.copies += 1
        holders.add(index)

    def copy_gone(self, index, job_id, crashed=False, wiped=False):
        """A copy went (with its disk too if ``wiped``: a crash without AOF)."""
        self._note(job_id, f"node {index} copy gone{' (crash)' if crashed else ''}"
                           f"{' with its disk' if wiped else ''}")
        if wiped:
            self.record(job_id).wiped_ms[index] = self.world.now_ms
        holders = self.live.get(job_id)
        if holders is not None:
            holders.discard(index)
            if not holders:
                del self.live[job_id]
        if self.replaying is not None:
            self.replaying.add(job_id)
            return
        self._check_fully_acked(job_id)

    def replay_started(self) -> None:
        self.replaying = set()

    def replay_done(self) -> None:
        touched, self.replaying = self.replaying or set(), None
        for job_id in touched:
            self._check_fully_acked(job_id)

    def disk_state(self, index, disk):
        """A node crashed: which un-acked jobs survive on its disk."""
        self.crashes.append(self.world.now_ms)
        held = {}
        buf = bytes(disk)
        pos = 0
        while pos < len(buf):
            argv, pos = aof.parse(buf, pos, len(buf))
            if argv[0] == aof.LOADJOB:
                start, stop = argv[1]
                job, _ = deserialize(buf, start)
                if job.state != ACKED:
                    held[job.id] = True
            elif argv[0] == aof.DELJOB:  # (QCONFIG, IDEMKEY: no job leaves)
                for job_id in argv[1:]:
                    held.pop(job_id, None)
        self.on_disk[index] = set(held)

    def node_started(self, index):
        self.on_disk.pop(index, None)

    def in_flight(self, job_ids, delta):
        wire = self.wire
        for job_id in job_ids:
            count = wire.get(job_id, 0) + delta
            if count:
                wire[job_id] = count
            else:
                del wire[job_id]
                self._check_fully_acked(job_id)

    def held_anywhere(self, job_id: bytes) -> bool:
        if job_id in self.live or job_id in self.wire:
            return True
        return any(job_id in ids for ids in self.on_disk.values())

    def where(self, job_id: bytes) -> str:
        """Where copies of the job are, for reports."""
        places = [f"node {i}" for i in sorted(self.live.get(job_id, ()))]
        places += [f"node {i}'s disk" for i, ids in sorted(self.on_disk.items())
                   if job_id in ids]
        if job_id in self.wire:
            places.append(f"{self.wire[job_id]} frame(s) on the wire")
        return ", ".join(places) or "nobody"

    def _check_fully_acked(self, job_id):
        rec = self.jobs.get(job_id)
        if (rec is not None and rec.acked_ms is not None and rec.full_ack_ms is None
                and not self.held_anywhere(job_id)):
            rec.full_ack_ms = self.world.now_ms
            self._note(job_id, "the ack reached every holder")

    # -------------------------------------------------- workload events

    def accepted(self, job_id, synchronous, ttl_ms, retry_s, max_deliveries=0):
        rec = self.record(job_id)
        rec.max_deliveries = max_deliveries
        rec.retry_s = retry_s
        rec.accepted_ms = self.world.now_ms
        rec.synchronous = synchronous
        rec.ttl_ms = ttl_ms

    def copy_revived(self, index, job_id):
        """Node ``index``'s dead copy is live again (checker rule *nacked
        DEAD*: as a new copy)."""
        self._note(job_id, f"node {index}'s copy left its dead-letter queue")
        self.record(job_id).got_copy_ms[index] = self.world.now_ms

    def nacked_dead(self, job_id, index):
        self._note(job_id, f"NACK DEAD moved it on node {index}")
        rec = self.record(job_id)
        if rec.nacked_dead is None:
            rec.nacked_dead = (index, self.world.now_ms)

    def delivered(self, job_id, index, queue=None):
        self._note(job_id, f"delivered by node {index} from {queue!r}")
        rec = self.record(job_id)
        if queue is not None and (queue == b"dead" or queue.endswith(b":dead")):
            rec.dead_deliveries += 1
        else:
            rec.own_deliveries += 1
            if rec.nacked_dead is not None and rec.nacked_dead[0] == index:
                at_ms = rec.nacked_dead[1]
                if (rec.wiped_ms.get(index, -1) < at_ms
                        and rec.got_copy_ms.get(index, -1) < at_ms):
                    self.violations.append(
                        f"nacked DEAD, then delivered again: {job_id.decode()} by node "
                        f"{index} from its queue at {self.world.now_ms} ms, NACK ... DEAD "
                        f"there at {at_ms} ms")
        now = self.world.now_ms
        best_effort = rec.fastacked and self.world.faulty
        if rec.full_ack_ms is not None and now > rec.full_ack_ms and not best_effort:
            self.violations.append(
                f"acked then delivered: {job_id.decode()} on node {index} at {now} ms, "
                f"ack reached every holder at {rec.full_ack_ms} ms")
        if rec.deliveries:
            if rec.expected_redeliveries > 0:
                rec.expected_redeliveries -= 1
            else:
                rec.duplicates += 1
        rec.deliveries.append((now, index))

    def polled_empty(self) -> None:
        """A consumer's GETJOB came back empty (timed out): consumers had
        room for a job then (see liveness.py)."""
        self.empty_polls.append(self.world.now_ms)

    def redelivery_expected(self, job_id):
        self.record(job_id).expected_redeliveries += 1

    def acked(self, job_id, fast=False):
        """ACKJOB (or FASTACK: best effort by contract, its DELJOB may be
        lost, so under faults it does not promise no redelivery)."""
        self._note(job_id, "FASTACK answered" if fast else "ACKJOB answered")
        rec = self.record(job_id)
        rec.fastacked = rec.fastacked or (fast and rec.acked_ms is None)
        if rec.acked_ms is None:
            rec.acked_ms = self.world.now_ms
        self._check_fully_acked(job_id)

    # ---------------------------------------------------------- verdict

    def _exempt(self, rec):
        """Every copy there was went with its node's disk (a crash without
        AOF: the last copy a node got was still there when it crashed; its
        ADDJOB reply may come later, behind earlier replies to the client);
        or an at-most-once job (RETRY 0) in a run with faults: it exists in
        one place at a time, so a crash (after a restart the node cannot
        know whether it was delivered) or a lost YOURJOBS frame loses it, by
        contract.  The holders are the nodes that had a copy, not the
        origin's list, which also names nodes asked for a copy that never
        got it (restart-empty seed 30627 at 3 nodes: a job whose two copies
        both went with their disks was reported lost, the third node listed)."""
        if rec.retry_s == 0 and self.world.faulty:
            return True
        wiped = rec.wiped_ms
        return bool(rec.got_copy_ms) and all(
            wiped.get(i, -1) >= got_ms for i, got_ms in rec.got_copy_ms.items())

    def judge_limits(self) -> None:
        """The delivery-limit rules (see the module's docstring)."""
        now = self.world.now_ms
        for rec in self.jobs.values():
            if (rec.nacked_dead is not None and rec.acked_ms is None
                    and not rec.dead_deliveries and now < rec.expires_ms()
                    and not self._exempt(rec) and not self.held_anywhere(rec.id)):
                self.violations.append(
                    f"nacked DEAD, then lost: {rec.id.decode()} moved to its dead-letter "
                    f"queue on node {rec.nacked_dead[0]} at {rec.nacked_dead[1]} ms, never "
                    f"acked nor delivered from it, no copy left")
            n = rec.max_deliveries
            if not n:
                continue
            bound = max(1, rec.copies) * n
            if rec.own_deliveries > bound:
                self.violations.append(
                    f"over the limit: {rec.id.decode()} MAXDELIVERIES {n} delivered "
                    f"{rec.own_deliveries} times from its queue, {rec.copies} copies "
                    f"(at most {bound})")
            if (rec.own_deliveries >= n and rec.acked_ms is None and not rec.dead_deliveries
                    and now < rec.expires_ms() and not self._exempt(rec)
                    and not self.held_anywhere(rec.id)):
                self.violations.append(
                    f"dead, then lost: {rec.id.decode()} delivered {rec.own_deliveries} "
                    f"times (MAXDELIVERIES {n}), never from its dead-letter queue, "
                    f"no copy left")

    def finish(self):
        self.judge_deliveries()
        self.judge_leaks()
        return self.violations

    def judge_deliveries(self) -> None:
        """Lost and never-delivered jobs, judged now (the end of the drain)."""
        now = self.world.now_ms
        for rec in self.jobs.values():
            if (rec.synchronous and rec.accepted_ms is not None and not rec.deliveries
                    and now < rec.expires_ms() and not self._exempt(rec)):
                if not self.held_anywhere(rec.id):
                    self.violations.append(f"lost: {rec.id.decode()} accepted at "
                                           f"{rec.accepted_ms} ms, never delivered, "
                                           f"no copy left")
                elif not rec.retry_s:
                    self.violations.append(f"starved: {rec.id.decode()} (RETRY 0) "
                                           f"accepted at {rec.accepted_ms} ms, never "
                                           f"delivered though held by {self.where(rec.id)}")

    def judge_leaks(self) -> None:
        """Jobs left on any node, judged once everything is acked or expired."""
        for sim_node in self.world.nodes:
            if sim_node.alive and sim_node.node.jobs:
                sample = next(iter(sim_node.node.jobs.values()))
                self.violations.append(
                    f"leak: node {sim_node.index} still has {len(sim_node.node.jobs)} "
                    f"jobs, e.g. {sample!r}")

    def summary(self):
        accepted = sum(1 for r in self.jobs.values() if r.accepted_ms is not None)
        delivered = sum(1 for r in self.jobs.values() if r.deliveries)
        deliveries = sum(len(r.deliveries) for r in self.jobs.values())
        duplicates = sum(r.duplicates for r in self.jobs.values())
        return {"accepted": accepted, "delivered": delivered,
                "deliveries": deliveries, "duplicates": duplicates,
                "max_dummy_acks": self.max_dummy_acks,
                "keyed_retries": list(self.keyed_retries),
                "waits": list(self.waits),
                "violations": len(self.violations),
                "starved": sum(v.startswith("starved") for v in self.violations),
                "lost": sum(v.startswith("lost") for v in self.violations)}
