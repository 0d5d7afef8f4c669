"""The node: its clients, the command table they call, the keyspace, and
its timers and housekeeping.  The jobs and their rules are its base,
``JobLifecycle`` (jobs/lifecycle.py).

Nothing here blocks or awaits: the shell feeds the node commands and the
time, and carries out what it asks for (replies to send, timers to wake).
"""

import math
import os
import random as _random
import time
from typing import TYPE_CHECKING, Any, Callable, Final


from mypy_extensions import mypyc_attr

from ..protocol import errors, resp
from ..protocol.errors import CommandError

from .client import BlockedGet, Client, ClientWaker, PendingReply, REPLY_ON, REPLY_SKIP
from .keyspace import Keyspace, active_expire, transactions
from .jobs.job import QUEUED, Job
from .jobs.job_reply import job_reply
from .jobs.lifecycle import NO_WAKE_MS, JobLifecycle
from .jobs.queue import Queue
from .jobs.schedules import Schedules
from .command import Command
from .admin.config import Config
from .hooks import ClusterHooks, WaitHooks
from .jobs.waits import Waits
from .keyspace.blocking import KeyBlocking
from .pubsub.channels import PubSub
from .pubsub import keyspace_events
from .admin.client_pause import ClientPause
from .admin.latency_monitor import LatencyMonitor

if TYPE_CHECKING:
    from .keyspace.scripting import Scripting


# A threshold in ns no command reaches (~36 years), for "never": an int, so
# that _run's compares with a command's time stay native (an int against
# a float was a generic compare, ~120 instructions a command each).
_NEVER_NS: Final = 1 << 60
# memory_level without maxmemory: more bytes than a node ever counts
_NO_LIMIT: Final = (1 << 62) - 1
# A command's timing clock (INFO commandstats, SLOWLOG), a static: no
# globals lookup per command.  In seconds: a float is unboxed from its free
# list, where perf_counter_ns made and freed an int object (~100 a reading).
_PERF: Final = time.perf_counter
MAX_TIMERS_PER_RUN: Final = 10000  # bounded work per timer turn
# Replies already sent are cut from the front of a client's slots once
# this many pile up behind a pending one (else only when all are sent).
SLOTS_COMPACT: Final = 1024
# Node.turn_ms outside the event loop's turns (every now_ms reads the
# clock: the simulator's, a test's), and in a turn before its first reading.
NO_TURN: Final = -2
TURN_UNREAD: Final = -1


@mypyc_attr(allow_interpreted_subclasses=True)  # the simulator's ObservedNode
class Node(JobLifecycle):
    config: Config
    table: dict[bytes, Command]
    keyspace: Keyspace
    blocking: KeyBlocking
    clients: dict[int, Client]
    monitors: list[Client]
    cluster: ClusterHooks
    waits: Waits
    wait_hooks: WaitHooks
    log_failing: str | None
    keys_ready: bool
    pubsub: PubSub
    client_pause: ClientPause
    paused: int
    slowlog: list[Any]
    slowlog_next_id: int
    slowlog_ns: int
    latency: LatencyMonitor
    latency_ns: int
    # memory_level's thresholds for maxmemory _memory_for, in whole bytes:
    # above _memory_warn (75%), above _memory_high (95%)
    _memory_for: int
    _memory_warn: int
    _memory_high: int
    next_client_id: int
    loading: bool
    # The shell's hooks (None: no shell, as in tests and the simulator)
    on_wake: ClientWaker | None
    on_shutdown: Callable[[str], None] | None
    on_internal_error: Callable[[Command, list[bytes], Exception], bytes] | None
    scripting: "Scripting | None"
    error_counted: bool
    on_busy: Callable[[], None] | None
    on_log: Callable[[str, str], None] | None
    schedules: Schedules
    turn_ms: int
    # A client's pipeline (the shell's loop): the last command's end, which
    # the next one's _run takes as its start (chain_s), saving a clock read
    # (perf_counter's seconds; 0.0: none)
    chain_s: float
    last_end_s: float

    def __init__(self, config: Config, node_id: str, clock: Callable[[], float],
                 rng: _random.Random | None = None, *, table: dict[bytes, Command],
                 random_bytes: Callable[[int], bytes] | None = None) -> None:
        self.turn_ms = NO_TURN  # (first: the base's __init__ reads now_ms)
        self.chain_s = self.last_end_s = 0.0
        super().__init__(node_id, clock, rng, random_bytes or os.urandom)
        self.config = config
        self.table = table  # name -> Command (table.COMMANDS): the node imports no command
        self.keyspace = Keyspace(self, config.databases)  # Redis's keys, node-local
        self.blocking = self.keyspace.blocking  # (read after every command)
        self.clients = {}  # id -> Client
        self.pubsub = PubSub(self)  # channels and patterns, and who listens
        self.monitors = []
        self.client_pause = ClientPause(self)  # CLIENT PAUSE: held clients
        self.paused = 0  # its kind (0: not paused), tested per command
        self.cluster = ClusterHooks(self)  # the cluster as a whole (its parts: JobLifecycle)
        self.waits = Waits(self)  # WAITJOB's waits on jobs (in self.waited)
        self.wait_hooks = WaitHooks()  # ... and the other nodes' part (cluster/waitjob.py)
        # Read before and after every command, so kept here natively: why
        # the AOF cannot be written (its log sets it), and whether a command
        # made keys ready that blocked clients wait for.
        self.log_failing = None
        self.keys_ready = False
        self.slowlog = []  # newest first: [id, unix_s, usec, argv, addr, name]
        self.slowlog_next_id = 0
        # slowlog-log-slower-than in ns, as execute() compares (-1: never)
        self.slowlog_ns = _NEVER_NS
        self._set_slowlog_threshold(config.slowlog_log_slower_than)
        config.on_change["slowlog-log-slower-than"] = self._set_slowlog_threshold
        self.latency = LatencyMonitor(config.latency_monitor_threshold, self.clock)
        self.latency_ns = _NEVER_NS  # its threshold in ns, as _run compares
        self._set_latency_threshold(config.latency_monitor_threshold)
        config.on_change["latency-monitor-threshold"] = self._set_latency_threshold
        self._memory_for = -1  # (none computed yet)
        self._memory_warn = self._memory_high = 0
        self.next_client_id = 1
        self.loading = False
        self.on_wake = None  # shell hook: a client has output to flush
        self.on_shutdown = None  # shell hook: SHUTDOWN was asked for
        self.on_internal_error = None  # shell hook: a handler raised (a bug)
        self.scripting = None  # keyspace/scripting.py's Scripting, on first use
        # set by a script whose error reply was counted inside it (redis.call)
        self.error_counted = False
        self.schedules = Schedules(self)  # periodic jobs (docs/schedules.md)
        self.on_busy = None  # shell hook: serve others while a script is too long
        self.on_log = None  # shell hook: (level name, text) to the server log

    # --------------------------------------------------------------- time

    def now_ms(self) -> int:
        """The wall clock in ms, read once per turn of the shell's loop
        (begin_turn): a job's turns read it a dozen times, each a generic
        call of time.time.  Outside a turn, read each time."""
        ms = self.turn_ms
        if ms >= 0:
            return ms
        ms = self._clock_ms()
        if self.turn_ms == TURN_UNREAD:
            self.turn_ms = ms
        return ms

    def begin_turn(self) -> None:
        """The shell's loop starts a turn: now_ms's first reading holds
        for the rest of it."""
        self.turn_ms = TURN_UNREAD

    def end_turn(self) -> None:
        """The turn is over (the loop waits next): now_ms reads the clock."""
        self.turn_ms = NO_TURN

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
        if client.pubsub is not None:
            self.pubsub.drop(client)
        if client.slots:
            for slot in client.slots[client.slots_head:]:
                if type(slot) is not bytes:
                    self.deadlines.cancel(slot)
                    slot.cancel(self)
            client.slots = None
            client.slots_head = 0
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
            self.on_wake.wake(client)

    def push(self, client: Client, data: bytes) -> None:
        """Send a push (a Pub/Sub message or confirmation): as reply(),
        but CLIENT REPLY OFF/SKIP does not silence it (Redis 7.0)."""
        if client.slots:
            client.slots.append(data)
            self._release_slots(client)
            return
        client.out.append(data)
        if self.on_wake is not None:
            self.on_wake.wake(client)

    def resolve(self, pending: PendingReply, data: bytes) -> None:
        """A PendingReply is now known: send it and the replies behind it."""
        self.deadlines.cancel(pending)
        pending.data = data
        assert pending.client is not None  # (a timer is never resolved)
        self._release_slots(pending.client)

    def _release_slots(self, client: Client) -> None:
        """Send the replies from the head of ``client.slots`` that are known,
        up to the first still pending."""
        slots = client.slots
        if not slots:
            return
        head = start = client.slots_head
        end = len(slots)
        out = client.out
        while head < end:
            slot = slots[head]
            if type(slot) is not bytes:
                # (typed: compiled, its data is then read natively, not by a
                # generic getattr: ~350 instructions a replicated ADDJOB)
                pending: PendingReply = slot
                data = pending.data
                if data is None:
                    break
                slot = data
            out.append(slot)
            head += 1
        if head == start:
            return
        if head == end:
            client.slots = None  # (all sent: the next pending reply starts a list)
            head = 0
        elif head >= SLOTS_COMPACT:
            del slots[:head]  # (a long pipeline behind a pending reply: sent ones go)
            head = 0
        client.slots_head = head
        if self.on_wake is not None:
            self.on_wake.wake(client)

    def block(self, client: Client, blocked: Any, timeout_ms: int) -> None:
        client.blocked = blocked
        if timeout_ms:
            # The clock itself, not the turn's reading: later in a long turn,
            # that would cut the wait short (Node.now_ms).
            now_ms = self._clock_ms()
            # (a clock step not seen yet would move this new TIMEOUT back
            # too at the timers' next look, ending the wait at once)
            self.watch_clock(now_ms)
            wake_ms = now_ms + timeout_ms
            if wake_ms < NO_WAKE_MS:  # (past it, ~146 million years: never, as TIMEOUT 0)
                self.deadlines.set(client, wake_ms)
                self.timers_changed(wake_ms)

    def unblock(self, client: Client, now_ms: int = -1, served: Queue | None = None) -> None:
        """``now_ms`` as in block(); ``served``: the queue whose blocked
        clients ``client`` is taken from (serve_blocked)."""
        blocked = client.blocked
        if blocked is None:
            return
        client.blocked = None
        # idle time (timeout) counts from here
        client.last_ms = now_ms if now_ms >= 0 else self.now_ms()
        self.deadlines.cancel(client)
        if type(blocked) is BlockedGet:
            names = blocked.queues
            if served is not None and len(names) == 1:
                # (its one queue is that one: no look-up of it by name)
                del served.blocked[client]
                return
            for name in names:
                # (the queue named last answers after a compare: a timed-out
                # GETJOB's name, a new bytes object, hashed no more)
                queue = self.queue_named(name)
                if queue is not None:
                    waiting = queue.blocked
                    if client in waiting:  # (compiled: no method call, as pop is)
                        del waiting[client]
        else:
            blocked.cancel(self, client)

    def blocked_clients(self) -> int:
        return sum(1 for c in self.clients.values() if c.blocked is not None)

    # ----------------------------------------------------------- dispatch

    def execute(self, client: Client, argv: list[bytes]) -> None:
        """Run one request; its reply (if any) is appended to client.out."""
        # (taken here: a request refused below leaves no stale start behind)
        start_s = self.chain_s
        self.chain_s = self.last_end_s = 0.0
        name = argv[0]
        command = client.last_command
        if command is None or name != client.last_name:
            # (the client's last two commands are mostly the ones it sends:
            # see Client.last_name; a node's table is made once, so they stay)
            command = client.other_command
            if command is None or name != client.other_name:
                table = self.table
                command = table.get(name)
                if command is None:
                    command = table.get(name.upper())
                    if command is None:
                        self._reply_error(client, errors.unknown_command(
                            name.decode("utf-8", "replace")))
                        return
            client.other_name = client.last_name
            client.other_command = client.last_command
            client.last_name = name
            client.last_command = command
        arity = command.arity
        if (arity > 0 and len(argv) != arity) or len(argv) < -arity:
            self._reply_error(client, errors.wrong_arity(command.lname), command)
            return
        if not client.authenticated and command.name not in ("AUTH", "HELLO", "QUIT", "RESET"):
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
        if (self.config.min_replicas_to_write and self.config.min_replicas_max_lag
                and "write" in command.flags and command.group not in ("jobs", "queues")):
            self._reply_error(client, errors.NOREPLICAS, command)  # (no Redis replicas)
            return
        if client.pubsub is not None and client.proto == 2 and command.name not in SUBSCRIBED_OK:
            self._reply_error(client, subscribed_refusal(command, argv), command)
            return
        if self.loading and not command.ok_loading:
            self._reply_error(client, errors.LOADING, command)
            return
        if self.paused and self.client_pause.holds(client, command, argv):
            return  # run when the pause ends (admin/client_pause.py)
        if client.multi is not None and command.name not in transactions.NOT_QUEUED:
            if command.name in transactions.NO_MULTI:
                self._reply_error(client, transactions.NO_MULTI_ERROR, command)
                return
            transactions.queue(self, client, command, argv)
            return
        if self.monitors:
            self._feed_monitors(client, argv)
        self.stats.commands += 1
        client.last_cmd = command.lname
        reply = self._run(client, command, argv, start_s)
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
                    client.slots = [reply]
            elif mode == REPLY_SKIP:
                client.reply_mode = REPLY_ON

    def _serve_keys_ready(self) -> None:
        """Serve the clients blocked on keys the command created (BLPOP...);
        inside EXEC or a script that waits for the end of the whole."""
        blocking = self.blocking
        blocking.serve_ready()
        if self.client_pause.resuming:
            self.client_pause.resume()  # (CLIENT UNPAUSE's: the same flag)
        self.keys_ready = bool(blocking.ready or self.client_pause.resuming)

    def _run(self, client: Client, command: Command, argv: list[bytes],
             start: float = 0.0) -> Any:
        """The handler, timed (INFO commandstats, SLOWLOG); its reply.
        ``start``: the clock already read for it (execute's chain_s), or 0.0."""
        if not start:
            start = _PERF()
        try:
            if self.keyspace.notify_flags:
                reply = keyspace_events.run_command(self, client, command, argv)
            else:
                reply = command.handler(self, client, argv)
        except CommandError as exc:
            reply = resp.error(exc.message)
        except Exception as exc:
            # A bug.  Tests and the simulator want it loud (no hook); the
            # server logs it and answers an error rather than dying.
            if self.on_internal_error is None:
                raise
            reply = self.on_internal_error(command, argv, exc)
        answered = True  # (not an error reply)
        if type(reply) is bytes and reply and reply[0] == 45:  # an error reply
            answered = False
            command.failed += 1  # (INFO commandstats failed_calls)
            if self.error_counted:
                self.error_counted = False  # a script's error already counted inside it
            else:
                self.stats.error_reply(reply)
        end = _PERF()
        self.last_end_s = end
        elapsed_ns = int((end - start) * 1e9)
        command.calls += 1
        command.ns += elapsed_ns
        command.count_time(elapsed_ns)
        if command.container and answered and len(argv) > 1:
            command.count_subcommand(argv[1], elapsed_ns)
        if elapsed_ns >= self.slowlog_ns:
            self._slowlog(client, argv, elapsed_ns // 1000)
        if elapsed_ns >= self.latency_ns:
            self.latency.record("fast-command" if "fast" in command.flags else "command",
                                elapsed_ns // 1_000_000)
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
            reply = resp.null(client.proto) if reply is None else _pending_now(reply, client)
        return reply

    def _reply_error(self, client: Client, message: str, command: Command | None = None) -> None:
        if command is not None:
            command.rejected += 1
        self.stats.error_reply(b"-" + message.encode("utf-8", "replace"))
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
        self.slowlog_ns = usec * 1000 if usec >= 0 else _NEVER_NS

    def _set_latency_threshold(self, ms: int) -> None:
        self.latency.threshold_ms = ms
        self.latency_ns = ms * 1_000_000 if ms > 0 else _NEVER_NS

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
        if self._memory_for != maxmemory:
            self._set_memory_thresholds(maxmemory)
        used = self.used_memory
        if used <= self._memory_warn:
            return 0
        if used >= maxmemory:
            return 3
        if used > self._memory_high:
            return 2
        return 1

    def _set_memory_thresholds(self, maxmemory: int) -> None:
        """75% and 95% of maxmemory, rounded down to whole bytes: for a
        whole number of bytes, above x is above floor(x).  Compared as
        ints (hot: every ADDJOB), where the float products cost a boxed
        int and a generic comparison (~300 instructions)."""
        self._memory_for = maxmemory
        if maxmemory:
            self._memory_warn = math.floor(maxmemory * 0.75)
            self._memory_high = math.floor(maxmemory * 0.95)
        else:  # no limit: level 0 whatever is used
            self._memory_warn = self._memory_high = _NO_LIMIT

    def settle_waits(self, job_id: bytes, state: int) -> None:
        self.waits.settled(job_id, state)

    # ------------------------------------------------------------- queues

    def serve_blocked(self, queue: Queue) -> None:
        """Give one job each to the clients blocked on ``queue``, oldest
        first, while it has jobs."""
        now_ms = self.now_ms()
        blocked = queue.blocked
        jobs = queue.jobs
        while blocked and len(jobs):
            # the oldest waiter: the dict's first key (a native walk
            # compiled, where next(iter()) was two generic calls)
            client: Client | None = None
            for waiter in blocked:
                client = waiter
                break
            assert client is not None
            job = self.fetch(queue, now_ms)
            get: BlockedGet = client.blocked  # (typed: a native read of withcounters)
            withcounters = get.withcounters
            self.unblock(client, now_ms, queue)
            self.reply(client, job_reply(job, withcounters, b"*1\r\n"))

    # ------------------------------------------------------------ timers

    def run_timers(self) -> int | None:
        """Run every due deadline; return the next one (ms) or None."""
        now_ms = self.now_ms()
        self.watch_clock(now_ms)
        for item in self.deadlines.pop_due(now_ms, MAX_TIMERS_PER_RUN):
            if type(item) is Job:
                self.process_job(item, now_ms)
            elif isinstance(item, PendingReply):
                item.fire(self)
            else:
                self.blocked_timeout(item, now_ms)
        return self.deadlines.next_ms()

    def clock_set_back(self, step_ms: int) -> None:
        """The jobs' timers (JobLifecycle), and a blocked client's TIMEOUT:
        a GETJOB TIMEOUT 200 must not block as long as the step."""
        super().clock_set_back(step_ms)
        deadlines = self.deadlines
        for client in self.clients.values():
            if client.blocked is not None and client.wake_ms is not None:
                deadlines.set(client, client.wake_ms - step_ms)

    def blocked_timeout(self, client: Client, now_ms: int = -1) -> None:
        """``now_ms`` as in block()."""
        blocked = client.blocked
        if blocked is None:
            return
        if type(blocked) is BlockedGet:
            self.unblock(client, now_ms)
            self.reply(client, resp.null_array(client.disque_proto()))
        else:
            blocked.timeout(self, client)

    # --------------------------------------------------------------- cron

    def cron(self) -> None:
        """Housekeeping every 100 ms: idle queues, keys past their TTL,
        federation for blocked clients, the cluster's own cron."""
        now_ms = self.now_ms()
        self.watch_clock(now_ms)
        if self.paused:
            self.client_pause.cron(now_ms)
        self.evict_idle_queues(now_ms)
        self.expire_tombstones(now_ms)  # (idempotency keys of gone jobs)
        keyspace = self.keyspace
        if keyspace.expiry_due(now_ms):  # (most ticks: no TTL is due)
            started = _PERF()
            active_expire(keyspace, now_ms, self.config.hz)
            if self.latency.threshold_ms:
                self.latency.timed("expire-cycle", started, _PERF())
        if keyspace.lazyfree:
            keyspace.free_lazily()
        if self.config.timeout:
            self.close_idle_clients(now_ms)
        self.cluster.cron(now_ms)
        if self.schedules.by_name:  # (an interpreted call with nothing to do)
            self.schedules.cron(now_ms, self.config.schedule_grace_ms,
                                self.config.schedule_tombstone_ms)

    def close_idle_clients(self, now_ms: int) -> None:
        """``timeout`` seconds without a request closes a client, unless it
        is blocked or a monitor (as Redis and Disque do)."""
        limit_ms = self.config.timeout * 1000
        for client in list(self.clients.values()):
            if (client.blocked is None and not client.monitor and not client.killed
                    and now_ms - client.last_ms > limit_ms):
                client.killed = True
                if self.on_wake is not None:
                    self.on_wake.wake(client)

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


# What a RESP2 client in subscribed mode may run (Redis 7.0's processCommand).
SUBSCRIBED_OK: Final = frozenset((
    "PING", "SUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "SUNSUBSCRIBE", "PSUBSCRIBE",
    "PUNSUBSCRIBE", "QUIT", "RESET"))


def subscribed_refusal(command: Command, argv: list[bytes]) -> str:
    name = command.lname
    if command.container and len(argv) > 1:
        name += "|" + argv[1].decode("utf-8", "replace").lower()
    return (f"ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE "
            "/ PING / QUIT / RESET are allowed in this context")


def _pending_now(pending: Any, client: Client) -> bytes:
    """A PendingReply's data if it is known already, else a null."""
    data = getattr(pending, "data", None)
    return data if type(data) is bytes else resp.null(client.proto)


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
