"""The node: every job and queue it holds, and the rules that move them.

A job's life on one node, as in the Disque README's state machines:

- ADDJOB registers it (``wait-repl`` until replicated, then ``active``) and
  queues it, unless it has a DELAY: then its requeue timer queues it later.
- GETJOB takes it from its queue (``queued`` -> ``active``) and arms the
  requeue timer: if no ACKJOB arrives within RETRY it is queued again
  (counting an additional delivery).  RETRY 0 jobs are never requeued.
- ACKJOB marks it ``acked`` and hands it to ack garbage collection, which
  frees it once every node that may hold a copy has it acked too.
- At its TTL it is removed, whatever its state.

Every timed step (delay, requeue, WILLQUEUE, expiry, GC retries, blocked
client timeouts) is a deadline in one ``Deadlines``; ``run_timers(now)``
runs the due ones.  Nothing here blocks, awaits or reads the wall clock: the
time comes from ``self.clock``, which the shell sets to the real clock and
tests and the simulator to a fake one.
"""

import os
import random as _random
from collections import deque
import time
from typing import TYPE_CHECKING, Any, Callable, Final


from mypy_extensions import mypyc_attr

from ..protocol import errors, jobid, resp
from ..protocol.errors import CommandError

from .client import BlockedGet, Client, PendingReply, REPLY_ON, REPLY_SKIP
from .jobs.deadlines import Deadlines
from .keyspace import Keyspace, active_expire, transactions
from .jobs.job import (ACKED, ACTIVE, BCAST_QUEUED, BCAST_WILLQUEUE, DELIVERED,
                  QUEUED, WAIT_REPL, Job)
from .jobs.queue import PAUSED_IN, PAUSED_OUT, QUEUE_OVERHEAD, Queue
from .jobs.job_reply import job_reply
from .command import Command
from .admin.config import Config
from .hooks import (AckHooks, ClusterHooks, FederationHooks, NoLog, ReplicationHooks,
                    RequeueHooks)
from .keyspace.blocking import KeyBlocking

if TYPE_CHECKING:
    from .keyspace.scripting import Scripting


WILLQUEUE_ADVANCE_MS: Final = 500  # WILLQUEUE goes out this long before a requeue
TIME_ERROR_MS: Final = 500  # requeue jitter: uniform in [-250, +250) ms
_JITTER_DRAWS: Final = 1024  # random 16-bit numbers fetched at a time
# 16-bit draws at or above this would favour the low jitters: drawn again
_JITTER_LIMIT: Final = 65536 // TIME_ERROR_MS * TIME_ERROR_MS
_INF: Final = float("inf")
_PERF_NS: Final = time.perf_counter_ns  # (a static: no globals lookup per command)
MAX_TIMERS_PER_RUN: Final = 10000  # bounded work per timer turn
BASE_MEMORY: Final = 1024 * 1024  # an idle node's used_memory: buffers, tables (not the interpreter)


class Stats:
    __slots__ = ("commands", "connections", "rejected", "net_in", "net_out",
                 "expired_jobs", "keyspace_hits", "commandstats",
                 "start_ms", "auth_failures", "denied", "query_limit_kills",
                 "output_limit_kills", "tls_handshake_failures")
    commands: int
    connections: int
    rejected: int
    net_in: int
    net_out: int
    expired_jobs: int
    keyspace_hits: int
    commandstats: dict[str, Any]
    start_ms: int
    auth_failures: int
    denied: int
    query_limit_kills: int
    output_limit_kills: int
    tls_handshake_failures: int

    def __init__(self, now_ms: int) -> None:
        self.start_ms = now_ms
        self.reset()

    def reset(self) -> None:

        self.commands = 0
        self.connections = 0
        self.rejected = 0
        self.net_in = 0
        self.net_out = 0
        self.expired_jobs = 0
        self.keyspace_hits = 0
        self.commandstats = {}  # name -> [calls, usec]
        self.auth_failures = 0  # refused AUTH / HELLO AUTH
        self.denied = 0  # connections refused by protected mode
        self.query_limit_kills = 0  # closed past client-query-buffer-limit
        self.output_limit_kills = 0  # closed past client-output-buffer-limit
        self.tls_handshake_failures = 0  # TLS clients and bus peers (shell/tls.py)


@mypyc_attr(allow_interpreted_subclasses=True)  # the simulator's ObservedNode
class Node:
    config: Config
    id: str
    clock: Callable[[], float]
    random: _random.Random
    _jitter_bytes: bytes
    _jitter_at: int
    table: dict[bytes, Command]
    jobs: dict[bytes, Job]
    queues: dict[bytes, Queue]
    keyspace: Keyspace
    blocking: KeyBlocking
    deadlines: Deadlines
    clients: dict[int, Client]
    monitors: list[Client]
    random_bytes: Callable[[int], bytes]
    ids: jobid.IdGenerator
    cluster: ClusterHooks
    replication: ReplicationHooks
    requeue: RequeueHooks
    acks: AckHooks
    federation: FederationHooks
    cluster_size: int
    leaving: bool
    _log: Any
    log_failing: str | None
    log_active: bool
    keys_ready: bool
    used_memory: int
    peak_memory: int
    stats: Stats
    slowlog: list[Any]
    slowlog_next_id: int
    slowlog_ns: float
    deletions: int
    queue_deletions: int
    _last_ctime: int
    _last_etime: int
    _memory_limits: tuple[Any, float, float]
    next_client_id: int
    loading: bool
    # The shell's hooks (None: no shell, as in tests and the simulator)
    on_wake: Callable[[Client], None] | None
    on_shutdown: Callable[[str], None] | None
    on_timers_changed: Callable[[], None] | None
    on_internal_error: Callable[[Command, list[bytes], Exception], bytes] | None
    timer_wake_ms: int | None
    scripting: "Scripting | None"
    on_busy: Callable[[], None] | None
    on_log: Callable[[str, str], None] | None

    def __init__(self, config: Config, node_id: str, clock: Callable[[], float],
                 rng: _random.Random | None = None, *, table: dict[bytes, Command],
                 random_bytes: Callable[[int], bytes] | None = None) -> None:
        self.config = config
        self.id = node_id  # 40 hex chars, str
        self.clock = clock  # () -> seconds as float
        self.random = rng or _random.Random()
        self._jitter_bytes = b""  # see jitter_ms
        self._jitter_at = 0
        self.table = table  # name -> Command (table.COMMANDS): the node imports no command
        self.jobs = {}  # job id -> Job
        self.queues = {}  # name -> Queue
        self.keyspace = Keyspace(self, config.databases)  # Redis's keys, node-local
        self.blocking = self.keyspace.blocking  # (read after every command)
        self.deadlines = Deadlines()
        self.clients = {}  # id -> Client
        self.monitors = []
        # Where job IDs get their randomness: the OS, or a seeded generator
        # in the simulator so a run can be replayed.
        self.random_bytes = random_bytes or os.urandom
        self.ids = jobid.IdGenerator(node_id, self.random_bytes)
        # The cluster: as a whole, and its state machines (a node alone's
        # until cluster/ attaches its own)
        self.cluster = ClusterHooks(self)
        self.replication = ReplicationHooks()
        self.requeue = RequeueHooks()
        self.acks = AckHooks(self)
        self.federation = FederationHooks()
        # What the hot paths ask of the cluster, kept here by it (a call
        # into its interpreted methods cost ~700 instructions): the nodes
        # it knows, myself included, and CLUSTER LEAVING.
        self.cluster_size = 1
        self.leaving = False
        # Read before and after every command, so kept here, natively: why
        # the AOF cannot be written (its log sets it), and whether a
        # command made keys ready that blocked clients wait for.
        self.log_failing = None
        self.log_active = False  # the log records jobs: see the log property
        self.log = NoLog()
        self.keys_ready = False
        self.used_memory = BASE_MEMORY
        self.peak_memory = BASE_MEMORY
        self.stats = Stats(self.now_ms())
        self.slowlog = []  # newest first: [id, unix_s, usec, argv, addr, name]
        self.slowlog_next_id = 0
        # slowlog-log-slower-than in ns, as execute() compares (-1: never)
        self.slowlog_ns = _INF
        self._set_slowlog_threshold(config.slowlog_log_slower_than)
        config.on_change["slowlog-log-slower-than"] = self._set_slowlog_threshold
        self.deletions = 0  # jobs removed, so scan cursors never skip one
        self.queue_deletions = 0
        self._last_ctime = 0
        self._last_etime = 0
        self._memory_limits = (None, 0.0, 0.0)  # maxmemory, 95%, 75% of it
        self.next_client_id = 1
        self.loading = False
        self.on_wake = None  # shell hook: a client has output to flush
        self.on_shutdown = None  # shell hook: SHUTDOWN was asked for
        self.on_timers_changed = None  # shell hook: an earlier deadline exists
        self.on_internal_error = None  # shell hook: a handler raised (a bug)
        self.timer_wake_ms = None  # when the shell's timer loop will next look
        self.scripting = None  # keyspace/scripting.py's Scripting, on first use
        self.on_busy = None  # shell hook: serve others while a script is too long
        self.on_log = None  # shell hook: (level name, text) to the server log

    # ------------------------------------------------------------- time

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

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def jitter_ms(self) -> int:
        """Uniform in [-250, +250) ms, from 16-bit numbers that
        ``self.random`` gives 1024 at a time (one C call: random.choices
        loops in Python, 1.5k instructions a draw); a seeded generator
        still replays the same numbers."""
        while True:
            at = self._jitter_at
            pool = self._jitter_bytes
            if at >= len(pool):
                pool = self._jitter_bytes = self.random.randbytes(2 * _JITTER_DRAWS)
                at = 0
            self._jitter_at = at + 2
            draw = pool[at] << 8 | pool[at + 1]
            if draw < _JITTER_LIMIT:
                return draw % TIME_ERROR_MS - TIME_ERROR_MS // 2

    # ------------------------------------------------------------ clients

    def add_client(self, addr: str = "", laddr: str = "", transport: Any = None) -> Client:
        from .client import Client
        client = Client(self.next_client_id, addr, laddr, self.now_ms(), transport)
        self.next_client_id += 1
        client.authenticated = not self.config.requirepass
        self.clients[client.id] = client
        self.stats.connections += 1
        return client

    def remove_client(self, client: Client) -> None:
        if client.blocked is not None:
            self.unblock(client)
        if client.watch is not None:
            transactions.unwatch_all(client)
        if client.slots:
            for slot in client.slots:
                if type(slot) is not bytes:
                    self.deadlines.cancel(slot)
                    slot.cancel(self)
            client.slots = None
        self.clients.pop(client.id, None)
        if client.monitor:
            self.monitors.remove(client)
            client.monitor = False

    def reply(self, client: Client, data: bytes) -> None:
        """Send ``data`` to a client outside its own request (it is blocked)."""
        if client.slots:
            client.slots.append(data)
            self._release_slots(client)
            return
        if client.reply_mode == REPLY_ON:
            client.out.append(data)
        if self.on_wake is not None:
            self.on_wake(client)

    def resolve(self, pending: PendingReply, data: bytes) -> None:
        """A PendingReply is now known: send it and the replies behind it."""
        self.deadlines.cancel(pending)
        pending.data = data
        assert pending.client is not None  # (a timer is never resolved)
        self._release_slots(pending.client)

    def _release_slots(self, client: Client) -> None:
        slots = client.slots
        if not slots:
            return
        released = False
        while slots:
            slot = slots[0]
            if type(slot) is not bytes:
                if slot.data is None:
                    break
                slot = slot.data
            slots.popleft()
            client.out.append(slot)
            released = True
        if released and self.on_wake is not None:
            self.on_wake(client)

    def block(self, client: Client, blocked: Any, timeout_ms: int) -> None:
        client.blocked = blocked
        if timeout_ms:
            wake_ms = self.now_ms() + timeout_ms
            self.deadlines.set(client, wake_ms)
            self.timers_changed(wake_ms)

    def unblock(self, client: Client) -> None:
        blocked = client.blocked
        if blocked is None:
            return
        client.blocked = None
        client.last_ms = self.now_ms()  # idle time (timeout) counts from here
        self.deadlines.cancel(client)
        if type(blocked) is BlockedGet:
            for name in blocked.queues:
                queue = self.queues.get(name)
                if queue is not None:
                    queue.blocked.pop(client, None)
        else:
            blocked.cancel(self, client)

    def blocked_clients(self) -> int:
        return sum(1 for c in self.clients.values() if c.blocked is not None)

    # ----------------------------------------------------------- dispatch

    def execute(self, client: Client, argv: list[bytes]) -> None:
        """Run one request; its reply (if any) is appended to client.out."""
        table = self.table
        name = argv[0]
        command = table.get(name)
        if command is None:
            command = table.get(name.upper())
            if command is None:
                self._reply_error(client, errors.unknown_command(
                    name.decode("utf-8", "replace")))
                return
        arity = command.arity
        if (arity > 0 and len(argv) != arity) or len(argv) < -arity:
            self._reply_error(client, errors.wrong_arity(command.lname), command)
            return
        if not client.authenticated and command.name not in ("AUTH", "HELLO", "QUIT"):
            self._reply_error(client, errors.NOAUTH, command)
            return
        if (command.deny_oom and self.config.maxmemory
                and self.used_memory >= self.config.maxmemory):  # memory_level() 3
            self._reply_error(client, errors.OOM, command)
            return
        if self.log_failing and ("write" in command.flags or command.name == "PING"):
            # Disque: no writes (nor PING) while the AOF cannot be written.
            self._reply_error(client, "MISCONF Errors writing to the AOF file: "
                              + self.log_failing, command)
            return
        if self.loading and not command.ok_loading:
            self._reply_error(client, errors.LOADING, command)
            return
        if client.multi is not None and command.name not in transactions.NOT_QUEUED:
            transactions.queue(self, client, command, argv)
            return
        if self.monitors:
            self._feed_monitors(client, argv)
        self.stats.commands += 1
        client.last_cmd = command.lname
        reply = self._run(client, command, argv)
        if self.keys_ready:
            self._serve_keys_ready()
        if reply is not None:
            mode = client.reply_mode
            if mode == REPLY_ON:
                if client.slots:
                    client.slots.append(reply)
                elif type(reply) is bytes:
                    client.out.append(reply)
                else:
                    client.slots = deque((reply,))
            elif mode == REPLY_SKIP:
                client.reply_mode = REPLY_ON

    def _serve_keys_ready(self) -> None:
        """Serve the clients blocked on keys the command created (BLPOP...);
        inside EXEC or a script that waits for the end of the whole."""
        blocking = self.blocking
        blocking.serve_ready()
        self.keys_ready = bool(blocking.ready)

    def _run(self, client: Client, command: Command, argv: list[bytes]) -> Any:
        """The handler, timed (INFO commandstats, SLOWLOG); its reply."""
        start = _PERF_NS()
        try:
            reply = command.handler(self, client, argv)
        except CommandError as exc:
            reply = resp.error(exc.message)
        except Exception as exc:
            # A bug.  Tests and the simulator want it loud (no hook); the
            # server logs it and answers an error rather than dying.
            if self.on_internal_error is None:
                raise
            reply = self.on_internal_error(command, argv, exc)
        elapsed_ns = _PERF_NS() - start
        command.calls += 1
        command.ns += elapsed_ns
        command.hist[elapsed_ns.bit_length()] += 1
        if elapsed_ns >= self.slowlog_ns:
            self._slowlog(client, argv, elapsed_ns // 1000)
        return reply

    def call(self, client: Client, command: Command, argv: list[bytes]) -> bytes:
        """Run a command already checked and return its reply (EXEC's
        queued commands, a script's redis.call): errors are replies."""
        if self.monitors:
            self._feed_monitors(client, argv)
        self.stats.commands += 1
        reply = self._run(client, command, argv)
        if type(reply) is not bytes:
            # Nothing waits inside EXEC or a script (blocking.atomic()): a
            # handler that still did not answer is answered a null.
            reply = resp.null(client.proto) if reply is None else _pending_now(reply)
        return reply

    def _reply_error(self, client: Client, message: str, command: Command | None = None) -> None:
        if client.multi is not None:  # refused inside MULTI: EXEC aborts
            message = transactions.rejected(self, client, command, message)
        if client.slots:
            client.slots.append(resp.error(message))
        else:
            client.out.append(resp.error(message))

    def _feed_monitors(self, client: Client, argv: list[bytes]) -> None:
        # Disque's line: +<sec>.<usec> [<ip>:<port>] "ARG0" "ARG1" ...
        data = b"+%.6f [%s] %s\r\n" % (self.clock(), client.addr.encode(),
                                        b" ".join(map(_repr_arg, argv)))
        for monitor in self.monitors:
            if monitor is not client:
                self.reply(monitor, data)

    def _set_slowlog_threshold(self, usec: int) -> None:
        self.slowlog_ns = usec * 1000 if usec >= 0 else _INF

    def _slowlog(self, client: Client, argv: list[bytes], elapsed_us: int) -> None:
        entry = [self.slowlog_next_id, int(self.clock()), elapsed_us,
                 [a[:128] for a in argv[:32]], client.addr, client.name]
        self.slowlog_next_id += 1
        self.slowlog.insert(0, entry)
        del self.slowlog[self.config.slowlog_max_len:]

    # ------------------------------------------------------------- memory

    def memory_level(self) -> int:
        """Disque's warning levels: 0 fine, 1 above 75%, 2 above 95% of
        maxmemory, 3 at or above it."""
        maxmemory = self.config.maxmemory
        limits = self._memory_limits
        if limits[0] != maxmemory:  # the float products, cached (hot: ADDJOB)
            limits = self._memory_limits = (
                (maxmemory, maxmemory * 0.95, maxmemory * 0.75) if maxmemory
                else (maxmemory, _INF, _INF))
        used = self.used_memory
        if used <= limits[2]:
            return 0
        if used >= maxmemory:
            return 3
        if used > limits[1]:
            return 2
        return 1

    def _memory_changed(self, delta: int) -> None:
        used = self.used_memory + delta
        self.used_memory = used
        if used > self.peak_memory:
            self.peak_memory = used

    # ------------------------------------------------------- job registry

    def create_job(self, queue: bytes, body: bytes, repl: int, ttl_s: int, retry_s: int,
                   delay_s: int, now_ms: int) -> Job:
        etime_ms = now_ms + ttl_s * 1000
        if etime_ms == self._last_etime:
            etime_ms = self._last_etime  # jobs of the same ms share the int (memory)
        else:
            self._last_etime = etime_ms
        # ctime: ms * 1e6, strictly increasing here (FIFO among jobs of a ms)
        ctime = now_ms * 1000000
        if ctime <= self._last_ctime:
            ctime = self._last_ctime + 1
        self._last_ctime = ctime
        job = Job(self.ids.new(ttl_s, retry_s), queue, body, WAIT_REPL, repl,
                  ctime, etime_ms, delay_s, retry_s)
        job.qtime_ms = now_ms + (delay_s or retry_s) * 1000
        return job

    def register(self, job: Job) -> bool:
        """Make ``job`` known here.  Returns False if its ID already is."""
        if self.jobs.setdefault(job.id, job) is not job:
            return False  # (one dict operation: hot in ADDJOB)
        self._memory_changed(job.memory())
        return True

    def unregister(self, job: Job) -> None:
        """Forget ``job`` entirely: out of its queue, timers and registry."""
        if job.state == QUEUED:
            self._remove_from_queue(job)
        self.deadlines.cancel(job)
        jobs = self.jobs
        if job.id in jobs:  # (two lookups of a cached hash: dict.pop is a method call compiled)
            del jobs[job.id]
            self._memory_changed(-job.memory())
            self.deletions += 1
        if job._rare is not None and job.waiter is not None:  # (see Job._rare)
            self.replication.aborted(job)

    def delete_job(self, job: Job) -> None:
        """Evict a job here (DELJOB, FASTACK, GC done) and log it."""
        self.unregister(job)
        if self.log_active:
            self.log.job_deleted(job)

    # ------------------------------------------------------------- queues

    def get_queue(self, name: bytes) -> Queue:
        queue = self.queues.get(name)
        if queue is None:
            queue = Queue(name, self.now_ms() // 1000)
            self.queues[name] = queue
            self._memory_changed(QUEUE_OVERHEAD + len(name))
        return queue

    def drop_queue(self, queue: Queue) -> None:
        del self.queues[queue.name]
        self._memory_changed(-(QUEUE_OVERHEAD + len(queue.name)))
        self.queue_deletions += 1

    def _remove_from_queue(self, job: Job) -> None:
        queue = self.queues[job.queue]
        queue.jobs.remove(job)
        job.state = ACTIVE

    def enqueue(self, job: Job, nack: bool = False) -> bool:
        """Put ``job`` into its queue (Disque's enqueueJob).

        The first time a job is queued nobody else needs to know; a later
        enqueue is a redelivery, announced with QUEUED so other holders
        postpone their own requeue, and counted as a NACK or an additional
        delivery.  Returns False if the job cannot be queued now.
        """
        if job.state == QUEUED or job.qtime_ms == 0:
            return False
        if job.retry_s == 0 and job.flags & DELIVERED:
            return False  # at-most-once: delivered once, never again
        now_ms = self.now_ms()
        job.state = QUEUED
        if job.retry_s:
            job.flags |= BCAST_WILLQUEUE
            job.qtime_ms = now_ms + job.retry_s * 1000 + self.jitter_ms()
        else:
            job.qtime_ms = 0
        if job.flags & BCAST_QUEUED or nack:
            self.requeue.broadcast_queued(job, nack)
            if nack:
                job.nacks += 1
            else:
                job.deliveries += 1
        else:
            job.flags |= BCAST_QUEUED
        self.schedule(job)
        queue = self.get_queue(job.queue)
        if nack:
            queue.nacks += 1
        self._put(job, queue, now_ms)
        return True

    def enqueue_new(self, job: Job, queue: Queue, now_ms: int) -> None:
        """Queue a job just created here, in ``queue`` (its own): the first
        enqueue of enqueue(), without what only a requeue needs."""
        job.state = QUEUED
        if job.retry_s:
            job.flags |= BCAST_WILLQUEUE | BCAST_QUEUED
            job.qtime_ms = now_ms + job.retry_s * 1000 + self.jitter_ms()
        else:
            job.flags |= BCAST_QUEUED
            job.qtime_ms = 0
        self.deadlines.set(job, job.etime_ms)  # queued: only its expiry is due
        self._put(job, queue, now_ms)

    def _put(self, job: Job, queue: Queue, now_ms: int) -> None:
        queue.jobs.add(job)
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
            self.requeue.delivered(job)  # other holders hold back
        if not queue.jobs and self.cluster_size > 1:
            self.federation.queue_drained(queue)  # (federation: nobody to ask alone)
        return job

    def serve_blocked(self, queue: Queue) -> None:
        """Give one job each to the clients blocked on ``queue``, oldest
        first, while it has jobs."""
        now_ms = self.now_ms()
        blocked = queue.blocked
        while blocked and queue.jobs:
            client = next(iter(blocked))
            job = self.fetch(queue, now_ms)
            withcounters = client.blocked.withcounters
            self.unblock(client)
            self.reply(client, b"*1\r\n" + job_reply(job, withcounters))

    # --------------------------------------------------------- scheduling

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
        if (self.on_timers_changed is not None
                and (self.timer_wake_ms is None or wake_ms < self.timer_wake_ms)):
            self.timer_wake_ms = wake_ms
            self.on_timers_changed()

    def run_timers(self) -> int | None:
        """Run every due deadline; return the next one (ms) or None."""
        now_ms = self.now_ms()
        for item in self.deadlines.pop_due(now_ms, MAX_TIMERS_PER_RUN):
            if type(item) is Job:
                self.process_job(item, now_ms)
            elif isinstance(item, PendingReply):
                item.fire(self)
            else:
                self.blocked_timeout(item)
        return self.deadlines.next_ms()

    def blocked_timeout(self, client: Any) -> None:
        blocked = client.blocked
        if blocked is None:
            return
        if type(blocked) is BlockedGet:
            self.unblock(client)
            self.reply(client, resp.null_array(client.disque_proto()))
        else:
            blocked.timeout(self, client)

    def process_job(self, job: Job, now_ms: int) -> None:
        """A job's deadline arrived (Disque's processJob)."""
        if job.etime_ms <= now_ms:
            self.stats.expired_jobs += 1
            self.unregister(job)
            return
        state = job.state
        if (state == ACTIVE and job.flags & BCAST_WILLQUEUE
                and job.qtime_ms
                and job.qtime_ms - WILLQUEUE_ADVANCE_MS <= now_ms
                and self.cluster_size > 1):
            # Rule: tell the other holders we are about to requeue it.
            self.requeue.will_queue(job)
            job.flags &= ~BCAST_WILLQUEUE
            if job.qtime_ms - WILLQUEUE_ADVANCE_MS < now_ms:
                # Woken late (the node was frozen, or its loop busy): the
                # holders still get the advance to answer (SETACK if it
                # was acked meanwhile, QUEUED if queued elsewhere) before
                # it goes back in a queue.
                job.qtime_ms = now_ms + WILLQUEUE_ADVANCE_MS
        if state == ACTIVE and job.qtime_ms and job.qtime_ms <= now_ms:
            queue = self.queues.get(job.queue)
            if job.retry_s and queue is not None and queue.paused & PAUSED_IN:
                job.qtime_ms = now_ms + job.retry_s * 1000 + self.jitter_ms()
            else:
                self.enqueue(job)
        elif state == ACKED:
            self.acks.try_gc(job)
            if job.id not in self.jobs:
                return
        if job.wake_ms is None:
            self.schedule(job)

    # --------------------------------------------------------------- acks

    def ack(self, job: Job) -> None:
        """A consumer acknowledged the job (ACK-JOB then START-GC)."""
        queue = self.queues.get(job.queue)
        if queue is not None:
            queue.acks += 1
        if job.held_only_by(self.id):
            # START-GC would free it at once, with nobody to tell (every
            # job of a lone node): straight there (~11% of an ACKJOB).
            self.delete_job(job)
            return
        # No schedule in between: START-GC may free the job at once (a lone
        # node always does), and otherwise we schedule it just below.
        self.mark_acked(job, schedule=False)
        self.acks.try_gc(job)
        if job.id in self.jobs:
            self.schedule(job)

    def mark_acked(self, job: Job, schedule: bool = True) -> None:
        """The job will never be queued again; GC will free it."""
        if job.state == QUEUED:
            self._remove_from_queue(job)
        job.state = ACKED
        job.qtime_ms = 0
        if job._rare is not None:  # (nodes_confirmed is None unless set)
            job.nodes_confirmed = None
        if self.log_active:
            self.log.job_deleted(job)
        if schedule:
            self.schedule(job)

    # --------------------------------------------------------------- cron

    def cron(self) -> None:
        """Housekeeping every 100 ms: idle queues, keys past their TTL,
        federation for blocked clients, the cluster's own cron."""
        now_ms = self.now_ms()
        self.evict_idle_queues(now_ms)
        keyspace = self.keyspace
        active_expire(keyspace, now_ms, self.config.hz)
        if keyspace.lazyfree:
            keyspace.free_lazily()
        if self.config.timeout:
            self.close_idle_clients(now_ms)
        self.cluster.cron(now_ms)

    def close_idle_clients(self, now_ms: int) -> None:
        """``timeout`` seconds without a request closes a client, unless it
        is blocked or a monitor (as Redis and Disque do)."""
        limit_ms = self.config.timeout * 1000
        for client in list(self.clients.values()):
            if (client.blocked is None and not client.monitor and not client.killed
                    and now_ms - client.last_ms > limit_ms):
                client.killed = True
                if self.on_wake is not None:
                    self.on_wake(client)

    def evict_idle_queues(self, now_ms: int) -> None:
        """Drop empty queues idle for 300 s (10 s above 75% of maxmemory,
        2 s above 95%), by sampling, as Disque does."""
        if not self.queues:
            return
        max_idle_s = 300
        level = self.memory_level()
        if level > 1:
            max_idle_s = 2
        elif level > 0:
            max_idle_s = 10
        now_s = now_ms // 1000
        sample = list(self.queues.values())
        if len(sample) > 200:
            sample = self.random.sample(sample, 200)
        for queue in sample:
            if (not queue.jobs and not queue.blocked and not queue.paused
                    and now_s - queue.atime_s >= max_idle_s):
                self.drop_queue(queue)

    # ---------------------------------------------------------- invariants

    def check_invariants(self) -> None:
        """Assert the core's rules (used by tests and the simulator)."""
        in_queues = 0
        for queue in self.queues.values():
            for job in queue.jobs:
                assert job.state == QUEUED, job
                assert self.jobs.get(job.id) is job, job
                assert job.queue == queue.name, job
            in_queues += len(queue.jobs)
        queued = 0
        for job in self.jobs.values():
            if job.state == QUEUED:
                queued += 1
            assert job.wake_ms is not None, job
        assert queued == in_queues, (queued, in_queues)


def _pending_now(pending: Any) -> bytes:
    """A PendingReply's data if it is known already, else a null."""
    data = getattr(pending, "data", None)
    return data if type(data) is bytes else resp.NULL2


def _repr_arg(arg: bytes) -> bytes:
    """An argument quoted as C's repr (Disque's sdscatrepr): the MONITOR
    line stays one line whatever the bytes."""
    out = bytearray(b'"')
    for byte in arg:
        if byte == 34 or byte == 92:  # " and backslash
            out += b"\\%c" % byte
        elif 32 <= byte < 127:
            out.append(byte)
        else:
            out += _REPR_ESCAPES.get(byte) or b"\\x%02x" % byte
    out.append(34)
    return bytes(out)


_REPR_ESCAPES: Final[dict[int, bytes]] = {10: b"\\n", 13: b"\\r", 9: b"\\t", 7: b"\\a", 8: b"\\b"}
