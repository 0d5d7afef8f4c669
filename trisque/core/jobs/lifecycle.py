"""A job's life on one node: its states and every move between them, as in
the Disque README's state machines.

- ADDJOB registers it (``wait-repl`` until replicated, then ``active``) and
  queues it, unless it has a DELAY: then its requeue timer queues it later.
- GETJOB takes it from its queue (``queued`` -> ``active``) and arms the
  requeue timer: if no ACKJOB arrives within RETRY it is queued again
  (counting an additional delivery).  RETRY 0 jobs are never requeued.
- ACKJOB marks it ``acked`` and hands it to ack garbage collection, which
  frees it once every node that may hold a copy has it acked too.
- At its TTL it is removed, whatever its state.

Every timed step of a job (delay, requeue, WILLQUEUE, expiry, GC retries)
is a deadline in ``deadlines``; when one arrives, ``process_job`` hands the
job to the owner of that timer: ``expire`` at its TTL, the requeue state
machine (``requeue.timer_fired``: WILLQUEUE first, then ``requeue_due``),
the ack GC (``acks.retry_gc``).
Where other nodes take part, the cluster's state machines hear of it
through the hooks (hooks.py): ``self.replication``, ``self.requeue``,
``self.acks``, ``self.federation``.  Nothing here blocks, awaits or reads
the wall clock: the time comes from ``self.clock``.  ``Node`` (node.py)
is this plus the clients, the commands and the keyspace.
"""

import random as _random
from typing import Any, Callable, Final

from mypy_extensions import i64, mypyc_attr

from ...protocol import jobid
from ..admin.stats import Stats
from ..hooks import (DEAD_LETTERED, FAILED, REQUEUED, REVIVED, WORKING, AckHooks,
                     FederationHooks, NoLog, ReplicationHooks, RequeueHooks)
from .deadlines import Deadlines
from .job import (ACKED, ACTIVE, BCAST_QUEUED, BCAST_WILLQUEUE, DELIVERED, NACK_DUE,
                  QUEUED, REQUEUE_DUE, WAIT_REPL, Job)
from .idempotency import IdempotencyIndex
from .policy import Policy, QueuePolicy
from . import policy as policy_codec
from .queue import PAUSED_IN, PAUSED_OUT, QUEUE_OVERHEAD, Queue
from .registry import JobRegistry
from .waits import UNKNOWN

WILLQUEUE_ADVANCE_MS: Final = 500  # WILLQUEUE goes out this long before a requeue
TIME_ERROR_MS: Final = 500  # requeue jitter: uniform in [-250, +250) ms
_JITTER_DRAWS: Final = 1024  # random 16-bit numbers fetched at a time
# 16-bit draws at or above this would favour the low jitters: drawn again
_JITTER_LIMIT: Final = 65536 // TIME_ERROR_MS * TIME_ERROR_MS
BASE_MEMORY: Final = 1024 * 1024  # an idle node's used_memory: buffers, tables (not the interpreter)
# A wall clock set back at least this much moves the node's timers back
# with it (watch_clock); a smaller step is not worth a walk of every job.
CLOCK_STEP_MS: Final = 1000
# timer_wake_ms while the shell's timers have set no wake-up: after every
# deadline, so each one set is earlier (an i64, not None: a boxed int a run)
NO_WAKE_MS: Final = 1 << 62


@mypyc_attr(allow_interpreted_subclasses=True)  # (Node allows them: the simulator's)
class JobLifecycle:
    """The jobs and queues of one node, their timers, and the rules that
    move them."""

    id: str
    clock: Callable[[], float]
    random: _random.Random
    _jitter_bytes: bytes
    _jitter_at: i64
    _new_jitter_ms: int
    _new_jitter: int
    jobs: JobRegistry
    queues: dict[bytes, Queue]
    _named: Queue | None
    queue_policies: dict[bytes, QueuePolicy]
    idempotency: IdempotencyIndex
    deadlines: Deadlines
    random_bytes: Callable[[int], bytes]
    ids: jobid.IdGenerator
    replication: ReplicationHooks
    requeue: RequeueHooks
    acks: AckHooks
    federation: FederationHooks
    cluster_size: int
    leaving: bool
    _log: Any
    log_active: bool
    used_memory: int
    peak_memory: int
    stats: Stats
    deletions: int
    queue_deletions: int
    _last_ctime: i64  # (i64: see create_job)
    _last_etime: int
    on_timers_changed: Callable[[], None] | None
    timer_wake_ms: i64
    waited: dict[bytes, Any]
    clock_seen_ms: int
    clock_steps_back: int
    _just_me: tuple[str, ...]

    def __init__(self, node_id: str, clock: Callable[[], float],
                 rng: _random.Random | None, random_bytes: Callable[[int], bytes]) -> None:
        self.id = node_id  # 40 hex chars, str
        self._just_me = (node_id,)  # see just_me
        self.clock = clock  # () -> seconds as float
        self.random = rng or _random.Random()
        self._jitter_bytes = b""  # see jitter_ms
        self._jitter_at = 0
        self._new_jitter_ms = -1  # see enqueue_new
        self._new_jitter = 0
        self.jobs = JobRegistry()  # job id -> Job (registry.py)
        self.queues = {}  # name -> Queue
        self._named = None  # the queue queue_named found last (see there)
        self.queue_policies = {}  # name -> its QCONFIG defaults (policy.py)
        self.idempotency = IdempotencyIndex()  # ADDJOB ... IDEMPOTENCY keys
        self.waited = {}  # job id -> its WAITJOB waits (node.py's waits.py)
        self.deadlines = Deadlines()
        # Where job IDs get their randomness: the OS, or a seeded generator
        # in the simulator so a run can be replayed.
        self.random_bytes = random_bytes
        self.ids = jobid.IdGenerator(node_id, random_bytes)
        # The cluster's state machines: a node alone's until cluster/
        # attaches its own (cluster.py)
        self.replication = ReplicationHooks()
        self.requeue = RequeueHooks()
        self.acks = AckHooks(self)
        self.federation = FederationHooks()
        # What the hot paths ask of the cluster, kept here by it: the nodes
        # it knows, myself included, and CLUSTER LEAVING.
        self.cluster_size = 1
        self.leaving = False
        self.log_active = False  # the log records jobs: see the log property
        self.log = NoLog()
        self.used_memory = BASE_MEMORY
        self.peak_memory = BASE_MEMORY
        self.stats = Stats(self.now_ms())
        self.deletions = 0  # jobs removed, so scan cursors never skip one
        self.queue_deletions = 0
        self._last_ctime = 0
        self._last_etime = 0
        self.on_timers_changed = None  # shell hook: an earlier deadline exists
        self.timer_wake_ms = NO_WAKE_MS  # when the shell's timer loop will next look
        self.clock_seen_ms = self.now_ms()  # the latest reading (watch_clock)
        self.clock_steps_back = 0

    # -------------------------------------------------------------- time

    def now_ms(self) -> int:
        return self._clock_ms()

    def _clock_ms(self) -> int:
        """The clock itself, in ms (Node.now_ms may answer a turn's reading)."""
        return int(self.clock() * 1000)

    def jitter_ms(self) -> int:
        """Uniform in [-250, +250) ms, from 16-bit numbers that
        ``self.random`` gives 1024 at a time (one C call: random.choices
        loops in Python, 1.5k instructions a draw); a seeded generator
        still replays the same numbers."""
        pool = self._jitter_bytes
        at = self._jitter_at
        while True:
            # (i64 and a bytes' indexed read: native compiled, no boxed int)
            if at >= len(pool):
                pool = self._jitter_bytes = self.random.randbytes(2 * _JITTER_DRAWS)
                at = 0
            draw: i64 = (i64(pool[at]) << 8) | i64(pool[at + 1])
            at += 2
            if draw < _JITTER_LIMIT:
                self._jitter_at = at
                return int(draw % TIME_ERROR_MS - TIME_ERROR_MS // 2)

    def watch_clock(self, now_ms: int) -> None:
        """The timers and the cron read the clock here: a wall clock set
        back (an NTP step, an operator, a VM resumed) would hold every
        requeue armed before it back by as much, so a job nobody acks
        waits its RETRY plus the step; they move back with the clock."""
        seen = self.clock_seen_ms
        if now_ms >= seen:
            self.clock_seen_ms = now_ms
        elif seen - now_ms >= CLOCK_STEP_MS:
            self.clock_seen_ms = now_ms
            self.clock_set_back(seen - now_ms)

    def clock_set_back(self, step_ms: int) -> None:
        """The clock went back ``step_ms``: a requeue time (RETRY, DELAY,
        a NACK's DELAY, a backoff) and an ack GC retry are a wait from when
        they were set, and keep what was left of it.  The TTL is a point
        in time the holders share, as in Disque: it stays.  Timers set
        since the step and before this look (one cron at most) come
        early: a requeue earlier than RETRY, as a clock jumping ahead."""
        self.clock_steps_back += 1
        for job in self.jobs.values():
            state = job.state
            if state != ACKED and job.qtime_ms:
                job.qtime_ms = max(1, job.qtime_ms - step_ms)
            if (state == ACTIVE or state == ACKED) and job.wake_ms is not None:
                self.schedule(job)

    # ---------------------------------------------------- memory and log

    def memory_changed(self, delta: int) -> None:
        """Every byte the node's data (jobs, queues, keys) takes or gives
        back goes through here: INFO's used_memory, maxmemory's levels."""
        used = self.used_memory + delta
        self.used_memory = used
        if used > self.peak_memory:
            self.peak_memory = used

    @property
    def log(self) -> Any:
        """Where stored and deleted jobs are recorded: the AOF, or NoLog."""
        return self._log

    @log.setter
    def log(self, log: Any) -> None:
        # Its job hooks are skipped while they would do nothing: a log says
        # so with records_jobs (the AOF keeps log_active current as its
        # state changes); any other log records.
        self._log = log
        self.log_active = getattr(log, "records_jobs", True)

    def swap_log(self, log: Any) -> None:
        """Put ``log`` in place: an ``AtomicLog`` for the log it wraps, or
        back.  Both record the same (the wrapper's ``records_jobs`` is its
        log's), so ``log_active`` stays: no look-up of it on the
        interpreted AOF for every EXEC and script run."""
        self._log = log

    # ------------------------------------------------------ job registry

    def create_job(self, job_id: bytes, queue: bytes, body: bytes, repl: int, ttl_s: int,
                   retry_s: int, delay_s: int, now_ms: int) -> Job:
        """A new job of ours, ``job_id`` from ``self.ids`` (new, or new_reply)."""
        etime_ms = now_ms + ttl_s * 1000
        if etime_ms == self._last_etime:
            etime_ms = self._last_etime  # jobs of the same ms share the int (memory)
        else:
            self._last_etime = etime_ms
        # ctime: ms * 1e6, strictly increasing here (FIFO among jobs of a ms).
        # In an i64 (it fits one until 2262): compiled, a product of ints of
        # more than 31 bits is made with boxed ints (~800 instructions).
        ms: i64 = now_ms
        ctime = ms * 1000000
        if ctime <= self._last_ctime:
            ctime = self._last_ctime + 1
        self._last_ctime = ctime
        job = Job(job_id, queue, body, WAIT_REPL, repl, ctime, etime_ms, delay_s, retry_s)
        job.qtime_ms = now_ms + (delay_s or retry_s) * 1000
        return job

    def just_me(self) -> tuple[str, ...]:
        """(our ID,) as one object: the holders of a job only we hold yet.
        Such jobs share it (48 bytes less each) and the Common remembered
        for it; made again once our ID changed (CLUSTER RESET).
        (tuple[str, ...]: a compiled tuple[str] is unboxed, a new one each.)"""
        mine = self._just_me
        if mine[0] is not self.id:
            mine = self._just_me = (self.id,)
        return mine

    def register(self, job: Job) -> bool:
        """Make ``job`` known here.  Returns False if its ID already is."""
        if self.jobs.setdefault(job.id, job) is not job:
            return False  # (one dict operation: hot in ADDJOB)
        self.memory_changed(job.memory())
        if job._rare is not None:  # (a plain job has no key: one test)
            policy = job.policy
            if policy is not None and policy.idempotency_key:
                self.memory_changed(self.idempotency.add_live(
                    policy.dead_from or job.queue, policy.idempotency_key, job.id))
        return True

    def unregister(self, job: Job, keep_key: bool = True) -> None:
        """Forget ``job`` entirely: out of its queue, timers and registry.
        Its idempotency key, if any, leaves a tombstone unless ``keep_key``
        is False or its ADDJOB never succeeded (still ``wait-repl``)."""
        if job.state == QUEUED:
            self._remove_from_queue(job)
        self.deadlines.cancel(job)
        if self.jobs.pop(job.id) is not None:
            self.memory_changed(-job.memory())
            self.deletions += 1
            if self.waited:  # (empty but while someone uses WAITJOB)
                self.settle_waits(job.id, UNKNOWN)  # gone (if it was acked, that settled first)
        if job._rare is not None:  # (see Job._rare)
            policy = job.policy
            if policy is not None and policy.idempotency_key:
                self._key_gone(job, policy, keep_key and job.state != WAIT_REPL)
            if job.waiter is not None:  # (its own state first, then the client's)
                self.replication.aborted(job)

    def delete_job(self, job: Job, keep_key: bool = True) -> None:
        """Evict a job here (DELJOB, FASTACK, GC done) and log it.
        ``keep_key`` False: a failed ADDJOB's copy, whose key is free again."""
        acked = job.state == ACKED  # (then mark_acked logged its tombstone)
        self.unregister(job, keep_key)
        if self.log_active:
            self.log.job_deleted(job)
            if keep_key and not acked and job._rare is not None:
                self._log_tombstone(job)

    # --------------------------------- idempotent adds (idempotency.py)

    def find_idempotent(self, queue: bytes, key: bytes) -> bytes | None:
        """The ID of the job added here with ``key`` in ``queue`` within
        its TTL, or None."""
        return self.idempotency.find(queue, key, self.now_ms())

    def _key_gone(self, job: Job, policy: Policy, tombstone: bool) -> None:
        """The job with a key leaves: its index entry becomes a tombstone
        until its TTL ends (none if it expired, or if not ``tombstone``)."""
        until_ms = job.etime_ms if tombstone and job.etime_ms > self.now_ms() else 0
        self.memory_changed(self.idempotency.retire(
            policy.dead_from or job.queue, policy.idempotency_key, job.id, until_ms))

    def idempotency_holders(self) -> list[Job]:
        """The acked jobs here with a key (their tombstones for a rewrite)."""
        jobs = self.jobs
        found = []
        for job_id in list(self.idempotency.live.values()):
            job = jobs.get(job_id)
            if job is not None and job.state == ACKED:
                found.append(job)
        return found

    def key_tombstone(self, queue: bytes, key: bytes, job_id: bytes, until_ms: int) -> None:
        """A tombstone from the AOF (IDEMKEY): kept unless its time is over."""
        if until_ms > self.now_ms():
            self.memory_changed(self.idempotency.add_gone(queue, key, job_id, until_ms))

    def forget_idempotency_keys(self) -> None:
        """Every key and tombstone gone (DEBUG FLUSHALL, with the jobs)."""
        index = self.idempotency
        self.memory_changed(index.expire(1 << 62) + sum(
            index.remove_live(queue, key, job_id)
            for (queue, key), job_id in list(index.live.items())))

    def expire_tombstones(self, now_ms: int) -> None:
        if self.idempotency.gone:
            self.memory_changed(self.idempotency.expire(now_ms))

    def _log_tombstone(self, job: Job) -> None:
        """The job leaves the AOF (acked or deleted): a restart must still
        know its key until its TTL ends, so ``IDEMKEY queue key id ms``."""
        policy = job.policy
        if policy is not None and policy.idempotency_key:
            self.log.append_command(b"IDEMKEY", policy.dead_from or job.queue,
                                    policy.idempotency_key, job.id, b"%d" % job.etime_ms)

    # ------------------------------------------------------------ queues

    def queue_named(self, name: bytes) -> Queue | None:
        """``self.queues.get(name)``: a client's queue name is a new bytes
        object each request, and the dict hashes and compares it (~420
        instructions); the queue found last answers after one compare.
        drop_queue, the only way out of ``queues``, forgets it."""
        queue = self._named
        if queue is not None and queue.name == name:
            return queue
        queue = self.queues.get(name)
        if queue is not None:
            self._named = queue
        return queue

    def get_queue(self, name: bytes) -> Queue:
        queue = self.queue_named(name)
        if queue is None:
            queue = Queue(name, self.now_ms() // 1000)
            self.queues[name] = queue
            self.memory_changed(QUEUE_OVERHEAD + len(name))
        return queue

    def drop_queue(self, queue: Queue) -> None:
        del self.queues[queue.name]
        if self._named is queue:
            self._named = None
        self.memory_changed(-(QUEUE_OVERHEAD + len(queue.name)))
        self.queue_deletions += 1

    def _remove_from_queue(self, job: Job) -> None:
        queue = self.queues[job.queue]
        queue.jobs.remove(job)
        job.state = ACTIVE

    def enqueue(self, job: Job, nack: bool = False) -> bool:
        """Put ``job`` into its queue (Disque's enqueueJob): every way a job
        goes back to a queue comes here, and the choice is made here once.

        The first time a job is queued nobody else needs to know.  A later
        enqueue is a redelivery, counted as a NACK or an additional
        delivery; if its policy (policy.py) says so it goes to its
        dead-letter queue instead (at its delivery limit) or waits its
        backoff first, else it is queued now, announced with QUEUED so
        other holders postpone their own requeue.  Returns False if the
        job cannot be queued now.
        """
        if job.state == QUEUED or job.qtime_ms == 0:
            return False
        if job.retry_s == 0 and job.flags & DELIVERED:
            # At-most-once, delivered once: never again, so no requeue
            # timer either (one left set would fire at once, for ever).
            job.qtime_ms = 0
            return False
        due = job.flags & (REQUEUE_DUE | NACK_DUE)
        if due:
            # a requeue postponed by NACK DELAY or a backoff is due now
            nack = nack or bool(due & NACK_DUE)
            job.flags &= ~(REQUEUE_DUE | NACK_DUE)
        policy = job._common.policy  # (a plain job: None; then one test)
        if job._rare is not None or policy is not None:
            policy = job.policy
            if (policy is not None and not policy.dead_from
                    and (job.flags & BCAST_QUEUED or nack)):
                attempt = job.nacks + job.deliveries + 1
                if policy.max_deliveries and attempt >= policy.max_deliveries:
                    self.dead_letter(job, nack)
                    return True
                if policy.backoff and not due:  # (a due one waited already)
                    wait_ms = policy.backoff_ms(attempt, self.random.random())
                    if wait_ms > 0 and self.postpone_requeue(job, wait_ms, nack):
                        return True
        now_ms = self.now_ms()
        job.state = QUEUED
        if job.retry_s:
            job.flags |= BCAST_WILLQUEUE
            job.qtime_ms = now_ms + job.retry_s * 1000 + self.jitter_ms()
        else:
            job.qtime_ms = 0
        if job.flags & BCAST_QUEUED or nack:
            self.requeue.tell_holders(job, REQUEUED, nack)
            if nack:
                job.nacks += 1
            else:
                job.deliveries += 1
            if policy is not None and policy.max_deliveries:
                self.relog(job)  # its count survives a restart
        else:
            job.flags |= BCAST_QUEUED
        self.schedule(job)
        queue = self.get_queue(job.queue)
        if nack:
            queue.nacks += 1
        self._put(job, queue, now_ms)
        return True

    # ----------------------------------------- delivery policies (policy.py)

    def relog(self, job: Job) -> None:
        """A stored job changed (its queue, policy or count): the log gets
        it again.  Not a job the log does not have (an ADDJOB still
        waiting for its copies, an acked one): that would bring it back."""
        state = job.state
        if self.log_active and (state == ACTIVE or state == QUEUED):
            self.log.job_updated(job)

    def apply_queue_policy(self, name: bytes, entry: QueuePolicy, log: bool = True) -> bool:
        """Adopt a queue's defaults if newer than ours (QCONFIG here, from
        a peer, or from the AOF); logged as ``QCONFIG name STORE version
        origin policy``.  False if ours is newer."""
        before = self.queue_policies.get(name)
        if not entry.newer_than(before):
            return False
        self.queue_policies[name] = entry
        self.memory_changed(entry.memory(name) - (before.memory(name) if before else 0))
        if log:
            self.log.append_command(b"QCONFIG", name, b"STORE", b"%d" % entry.version_ms,
                                    entry.origin.encode(), policy_codec.encode(entry.policy))
        return True

    def postpone_requeue(self, job: Job, wait_ms: int, nack: bool) -> bool:
        """Queue ``job`` again in ``wait_ms`` (NACK ... DELAY, a backoff),
        counted then as a NACK if ``nack``; the other holders hold back
        meanwhile (WORKING).  False for a job enqueue() would refuse (an
        at-most-once job delivered once): no timer that could never act."""
        if job.retry_s == 0 and job.flags & DELIVERED:
            return False
        if job.state == QUEUED:
            self._remove_from_queue(job)
        job.flags |= REQUEUE_DUE | (NACK_DUE if nack else 0)
        job.flags &= ~BCAST_WILLQUEUE  # (WILLQUEUE is for RETRY's requeues)
        job.qtime_ms = self.now_ms() + max(1, wait_ms)
        self.stats.requeues_postponed += 1
        self.schedule(job)
        if len(job.nodes_delivered) > 1:
            self.requeue.tell_holders(job, WORKING)
        return True

    def dead_letter(self, job: Job, nack: bool, failed: bool = False) -> None:
        """The job reached its delivery limit here (enqueue), or a consumer
        said it failed for good (``failed``: NACK ... DEAD): it moves to its
        dead-letter queue (policy.py) with its history, queued there as a
        new job would be, and the other holders hear DEADJOB."""
        policy = self._dying_policy(job, failed)
        if policy is None:
            return
        origin = self._bury(job, policy, nack)
        queue = self.queues.get(origin)
        if queue is not None:
            queue.dead_letters += 1
        self.stats.dead_lettered_jobs += 1
        self.requeue.tell_holders(job, FAILED if failed else DEAD_LETTERED, nack)
        self.move_job(job, policy.dead_letter_queue(origin))
        self._requeue_as_new(job)

    def dead_lettered_elsewhere(self, job: Job, nack: bool, failed: bool) -> None:
        """Another holder dead-lettered the job (DEADJOB): ours moves too,
        not queued (that holder queued it), its requeue held back."""
        policy = self._dying_policy(job, failed)
        if policy is None:
            return
        origin = self._bury(job, policy, nack)
        self.move_job(job, policy.dead_letter_queue(origin))
        job.flags &= ~(REQUEUE_DUE | NACK_DUE)
        self._hold_back(job)
        self.relog(job)

    def _dying_policy(self, job: Job, failed: bool) -> Policy | None:
        """The policy a job dies by, or None if it stays as it is: a copy
        without a limit, or dead already; but one that failed for good
        with no policy of its own dies by its queue's defaults."""
        policy: Policy | None = job.policy
        if policy is None and failed:
            default = self.queue_policies.get(job.queue)
            policy = default.policy.copy() if default is not None else Policy()
        if policy is None or policy.dead_from:
            return None
        return policy

    def _bury(self, job: Job, policy: Policy, nack: bool) -> bytes:
        """The dying job leaves its queue and keeps its history: the
        delivery that killed it counted, ``policy`` copied with where and
        when it died.  Returns the queue it died in."""
        if job.state == QUEUED:
            self._remove_from_queue(job)
        origin = job.queue
        if nack:
            job.nacks += 1
        else:
            job.deliveries += 1
        dead = policy.copy()
        dead.dead_from = origin
        dead.dead_ms = self.now_ms()
        self.set_policy(job, dead)
        return origin

    def move_job(self, job: Job, queue: bytes) -> None:
        """``job`` now belongs to ``queue`` (dead-lettered, revived, the
        sender's copy moved): its name is in the job's memory."""
        before = job.memory()
        job.move_to_queue(queue)
        self.memory_changed(job.memory() - before)

    def set_policy(self, job: Job, policy: Policy | None) -> None:
        """``job`` gets ``policy``: if it is registered here, used_memory
        follows its own policy's strings (a last error, a key, where it
        died) and its dead-letter queue's name (Job.memory)."""
        if self.jobs.get(job.id) is not job:
            job.policy = policy
            return
        before = job.memory()
        job.policy = policy
        self.memory_changed(job.memory() - before)

    def revive(self, job: Job) -> bool:
        """A dead job back to the queue it died in, its counters at zero
        (REVIVE): queued there as a new job, the other holders hear
        REVIVE.  False if it is not dead."""
        if not self._unbury(job):
            return False
        self.requeue.tell_holders(job, REVIVED)
        self._requeue_as_new(job)
        return True

    def revived_elsewhere(self, job: Job) -> None:
        """Another holder revived the job (REVIVE): ours moves back too,
        held back (that holder queued it)."""
        if self._unbury(job):
            self._hold_back(job)
            self.relog(job)

    def _unbury(self, job: Job) -> bool:
        """A dead job back in the queue it died in, alive, its counters
        at zero, not queued.  False if it is not dead."""
        policy = job.policy
        if policy is None or not policy.dead_from or job.state not in (ACTIVE, QUEUED):
            return False
        if job.state == QUEUED:
            self._remove_from_queue(job)
        alive = policy.copy()
        origin = alive.dead_from
        alive.dead_from = b""
        alive.dead_ms = 0
        self.set_policy(job, alive)
        job.nacks = 0
        job.deliveries = 0
        self.move_job(job, origin)
        self.stats.revived_jobs += 1
        return True

    def _requeue_as_new(self, job: Job) -> None:
        """Queue the job in its (new) queue as a first enqueue: no QUEUED,
        no counter; logged with its new queue and policy."""
        job.flags &= ~(BCAST_QUEUED | REQUEUE_DUE | NACK_DUE | DELIVERED)
        if not job.qtime_ms:
            job.qtime_ms = self.now_ms()
        self.relog(job)
        self.enqueue(job)

    def _hold_back(self, job: Job) -> None:
        """Another holder queued the job: ours waits a RETRY (as on QUEUED)."""
        if job.retry_s and job.qtime_ms:
            job.flags |= BCAST_WILLQUEUE
            job.qtime_ms = self.now_ms() + job.retry_s * 1000 + self.jitter_ms()
        self.schedule(job)

    def enqueue_new(self, job: Job, queue: Queue, now_ms: int) -> None:
        """Queue a job just created here, in ``queue`` (its own): the first
        enqueue of enqueue(), without what only a requeue needs."""
        job.state = QUEUED
        retry_s = job.retry_s
        if retry_s:
            job.flags |= BCAST_WILLQUEUE | BCAST_QUEUED
            # One jitter draw for the jobs queued here in the same ms (made
            # together, they may requeue together, as a replica's copies of
            # one frame do): holders still draw apart from each other.
            if now_ms != self._new_jitter_ms:
                self._new_jitter_ms = now_ms
                self._new_jitter = self.jitter_ms()
            job.qtime_ms = now_ms + retry_s * 1000 + self._new_jitter
        else:
            job.flags |= BCAST_QUEUED
            job.qtime_ms = 0
        self._put(job, queue, now_ms)
        if job.state == QUEUED:  # still queued: only its expiry is due
            # (a consumer blocked on the queue took it at once: fetch set
            # its requeue time, and an expiry set first would go again)
            self.deadlines.set(job, job.etime_ms)

    def _put(self, job: Job, queue: Queue, now_ms: int) -> None:
        queue.jobs.add(job)  # (at its priority level: queue.py)
        queue.atime_s = now_ms // 1000
        queue.jobs_in += 1
        if queue.blocked and not queue.paused & PAUSED_OUT:
            self.serve_blocked(queue)  # may take it at once
            if not queue.jobs:
                return
        if self.cluster_size > 1:
            self.federation.jobs_queued(queue)  # (federation: nobody asks alone)

    def dequeue(self, job: Job) -> bool:
        """Take a queued job out of its queue, back to active."""
        if job.state != QUEUED:
            return False
        self._remove_from_queue(job)
        self.schedule(job)
        return True

    def fetch(self, queue: Queue, now_ms: int, consumer: bool = True) -> Job:
        """Take the oldest job from ``queue`` (Disque's queueFetchJob) for
        a consumer (or to send to another node); its requeue timer starts
        now."""
        job = queue.jobs.pop(0)
        job.state = ACTIVE
        job.flags |= DELIVERED
        queue.atime_s = now_ms // 1000
        queue.jobs_out += 1
        if job.retry_s:
            # schedule(job), inline for the usual case (hot: GETJOB)
            qtime = now_ms + job.retry_s * 1000
            if self.cluster_size > 1:
                qtime += self.jitter_ms()
                job.qtime_ms = qtime
                if job.flags & BCAST_WILLQUEUE:
                    qtime -= WILLQUEUE_ADVANCE_MS
            else:
                job.qtime_ms = qtime
            at = job.etime_ms
            self.deadlines.set(job, qtime if qtime < at else at)
        else:
            self.schedule(job)
        if consumer and len(job.nodes_delivered) > 1:
            self.requeue.tell_holders(job, WORKING)  # other holders hold back
        if not queue.jobs and self.cluster_size > 1:
            self.federation.queue_drained(queue)  # (federation: nobody to ask alone)
        return job

    def serve_blocked(self, queue: Queue) -> None:
        """Give ``queue``'s jobs to the consumers blocked on it: the node's
        clients (node.py); here nobody waits."""

    # ------------------------------------------------------------ timers

    def schedule(self, job: Job) -> None:
        """Set the job's next wake-up from its state (Disque's
        updateJobAwakeTime): expiry always; the requeue (or the WILLQUEUE
        just before it) while active; the next GC attempt while acked."""
        at = job.etime_ms
        state = job.state
        if state == ACTIVE:
            qtime = job.qtime_ms
            if qtime:
                if job.flags & BCAST_WILLQUEUE and self.cluster_size > 1:
                    qtime -= WILLQUEUE_ADVANCE_MS
                if qtime < at:
                    at = qtime
        elif state == ACKED:
            gc_ms = self.acks.next_gc_ms(job)
            if gc_ms < at:
                at = gc_ms
        self.deadlines.set(job, at)

    def timers_changed(self, wake_ms: int) -> None:
        """A deadline at ``wake_ms`` was set: wake the shell's timer loop if
        it would sleep past it (not on every deadline: a task switch each)."""
        if self.on_timers_changed is not None and wake_ms < self.timer_wake_ms:
            self.timer_wake_ms = wake_ms
            self.on_timers_changed()

    def process_job(self, job: Job, now_ms: int) -> None:
        """A job's deadline arrived (Disque's processJob): the owner of the
        timer that is due acts, then the job waits for its next one."""
        if job.etime_ms <= now_ms:
            self.expire(job)
            return
        state = job.state
        if state == ACKED:
            self.acks.retry_gc(job)  # (it arms the next retry itself)
            return
        if state == ACTIVE and job.qtime_ms and self.requeue.timer_fired(job, now_ms):
            self.requeue_due(job, now_ms)
        if job.wake_ms is None:
            self.schedule(job)

    def expire(self, job: Job) -> None:
        """Its TTL is over: the job goes, whatever its state."""
        self.stats.expired_jobs += 1
        self.unregister(job)

    def requeue_due(self, job: Job, now_ms: int) -> None:
        """The job's requeue time came (RETRY, a NACK's DELAY, a backoff):
        back in its queue, unless the queue takes no jobs in (PAUSE): then
        it waits another RETRY."""
        queue = self.queue_named(job.queue)
        if job.retry_s and queue is not None and queue.paused & PAUSED_IN:
            job.qtime_ms = now_ms + job.retry_s * 1000 + self.jitter_ms()
        else:
            self.enqueue(job)

    # -------------------------------------------------------------- acks

    def ack(self, job: Job) -> None:
        """A consumer acknowledged the job (ACK-JOB then START-GC)."""
        queue = self.queue_named(job.queue)
        if queue is not None:
            queue.acks += 1
        if job.held_only_by(self.id):
            # START-GC would free it at once, with nobody to tell (every
            # job of a lone node): straight there (~11% of an ACKJOB).
            if self.waited:
                self.settle_waits(job.id, ACKED)
            self.delete_job(job)
            return
        # No schedule in between: START-GC may free the job at once (a lone
        # node always does), and otherwise retry_gc schedules it (now, or
        # once the turn's replies are out: Acks.start_held_gcs).
        self.mark_acked(job, schedule=False)
        if not self.acks.hold_gc(job):
            self.acks.retry_gc(job)

    def settle_waits(self, job_id: bytes, state: int) -> None:
        """The job was acked here, or its copy left: WAITJOB's waiters
        hear it (node.py, jobs/waits.py); here nobody waits."""

    def mark_acked(self, job: Job, schedule: bool = True) -> None:
        """The job will never be queued again; GC will free it."""
        if job.state == QUEUED:
            self._remove_from_queue(job)
        job.state = ACKED
        job.qtime_ms = 0
        if job._rare is not None:  # (nodes_confirmed is None unless set)
            job.nodes_confirmed = None
        if self.waited:
            self.settle_waits(job.id, ACKED)
        if self.log_active:
            self.log.job_deleted(job)
            if job._rare is not None:
                self._log_tombstone(job)
        if schedule:
            self.schedule(job)
