"""One chaos run: producers, consumers and kill -9 / SIGSTOP against a real cluster.

``run(cluster, plan)`` drives an already meshed ``tests.cluster.conftest``
cluster of nodes with ``appendonly yes`` (``start_cluster`` builds one):

- producers ADDJOB unique bodies to random live nodes; only a job ID in
  reply counts as "answered" (redis-py retries are off, so an error or a
  timeout means the broker promised nothing);
- consumers GETJOB from random live nodes and ACKJOB most jobs, FASTACK
  some, ACKJOB some late (perhaps after RETRY requeued them) and never ack
  some (RETRY must bring them back);
- the chaos thread kill -9s one or more nodes, restarts them with the same
  directory after a short down time, and lets the cluster settle; with
  ``faults=("kill", "stop")`` (or ``("stop",)``) some faults instead
  freeze nodes with SIGSTOP for 0.5-5 s (below and above the 2 s node
  timeout: a GC pause, a stuck VM, a partition) and SIGCONT them. Calls
  to a frozen node time out (an error, like a call to a dead node) and
  new calls go to the other nodes.

Then chaos and producers stop, the consumers drain, and the summary says
whether every answered body was delivered (nothing acknowledged is lost)
and whether the ack GC freed every job on every node.
"""

import collections
import contextlib
import dataclasses
import random
import signal
import threading
import time

import redis
from redis.backoff import ExponentialWithJitterBackoff, NoBackoff
from redis.retry import Retry

from tests.cluster.conftest import build_cluster
from tests.harness import wait_for

QUEUE = "chaos"


@dataclasses.dataclass
class Plan:
    replicate: int = 2
    duration: float = 60.0       # seconds of load under chaos
    seed: int = 0                # drives the kill schedule and ack policies
    producers: int = 2
    consumers: int = 2
    rate: float = 300.0          # ADDJOBs per second, all producers together
    retry: int = 2               # ADDJOB RETRY (s): unacked jobs come back soon
    add_timeout_ms: int = 2000
    # Between a restart and the next kill: longer than appendfsync
    # everysec's window, so a job's copies are never all in unwritten
    # buffers of nodes killed one after the other.
    pause: tuple = (1.5, 3.0)
    down: tuple = (0.5, 1.5)     # how long killed nodes stay down
    faults: tuple = ("kill",)    # drawn from for each fault: "kill", "stop"
    stopped: tuple = (0.5, 5.0)  # how long SIGSTOPped nodes stay frozen
    drain_timeout: float = 60.0  # after chaos: delivery, then ack GC
    # Consumers: GETJOB COUNT, and whether they ack job by job with the
    # mixed policies ("mixed") or whole batches, leaving unacked_batches
    # of them for RETRY to bring back ("batch").
    count: int = 10
    acking: str = "mixed"
    unacked_batches: float = 0.05
    socket_timeout: float = 0.0  # client socket timeout (s); 0: chosen from the faults
    # redis-py's own retries of a call that failed or timed out (its default
    # since 6 is 3): a retried ADDJOB may create a second job, a retried
    # GETJOB leaves the jobs of the first answer to RETRY.
    client_retries: int = 0
    # Consumers pick a random live node for every GETJOB ("random"), or keep
    # the node they picked until a call to it fails ("sticky": a worker
    # connected to one node; one killed moves its workers for good, and a
    # node may be left with no consumer at all).
    polling: str = "random"
    # Stalls: every 0.2-1 s one random node is SIGSTOPped this long (s), through
    # the load and the drain: a loaded machine's late timers, slow bus turns
    # and replies past the client's timeout. None: no stalls.
    stalls: tuple | None = None
    # "random": faults drawn every pause until duration ends; "once": one
    # node killed at kill_at s and restarted at restart_at s (issue 13's
    # scenario, where nodes without an AOF come back empty).
    schedule: str = "random"
    kill_at: float = 8.0
    restart_at: float = 12.0


def node_config(fsync="everysec"):
    """Nodes that keep their jobs in an AOF across a kill -9."""
    return f"appendonly yes\nappendfsync {fsync}\n"


def start_cluster(nodes, fsync="everysec"):
    return build_cluster(nodes, config=node_config(fsync))


def max_down(nodes, replicate):
    """Nodes killed at once: fewer than the copies of a job (one survives),
    and enough left up for ADDJOB to find ``replicate`` of them."""
    return max(1, min(replicate - 1, nodes - replicate))


class Chaos:
    """The shared record of a run, filled by its threads."""

    def __init__(self, cluster, plan):
        self.cluster = cluster
        self.plan = plan
        self.lock = threading.Lock()
        self.answered = {}                      # body -> job ID
        self.answered_at = {}                   # body -> when (monotonic)
        self.slowest_first_delivery = 0.0       # seconds from answer to delivery
        self.unanswered = 0
        self.delivered = collections.Counter()  # body -> deliveries
        self.acked = {}                         # body -> (when answered, ACKJOB/FASTACK)
        self.acks = 0
        self.redelivered_after_ack = collections.Counter()  # by the ack command
        self.kills = 0
        self.stops = 0
        self.stalls = 0
        self.frozen = set()                     # nodes SIGSTOPped right now
        self.slowest_restart = 0.0              # seconds until loaded and answering
        self.crashes = []                       # nodes that exited unasked
        self.errors = collections.Counter()     # "ADDJOB ConnectionError" -> n
        self.thread_failures = []
        self.stop_chaos = threading.Event()
        self.stop_producers = threading.Event()
        self.stop_consumers = threading.Event()
        assert plan.faults and set(plan.faults) <= {"kill", "stop"}, plan.faults
        # A call to a frozen node hangs until this timeout: longer than an
        # ADDJOB's own replication timeout, so only a frozen node makes it.
        self.socket_timeout = plan.socket_timeout or (
            10 if "stop" not in plan.faults else plan.add_timeout_ms / 1000 + 1)
        assert plan.schedule in ("random", "once") and plan.acking in ("mixed", "batch")
        assert plan.polling in ("random", "sticky")

    # ------------------------------------------------------------ helpers

    @contextlib.contextmanager
    def clients(self):
        """A thread's own clients, one per node, that never retry by themselves."""
        retry = (Retry(NoBackoff(), 0) if not self.plan.client_retries else
                 Retry(ExponentialWithJitterBackoff(base=1, cap=10), self.plan.client_retries,
                       supported_errors=(redis.ConnectionError, redis.TimeoutError)))
        clients = [s.client(socket_timeout=self.socket_timeout, socket_connect_timeout=2,
                            retry=retry) for s in self.cluster.servers]
        try:
            yield clients
        finally:
            for c in clients:
                c.close()

    def call(self, clients, rng, *command, node=None):
        """(node asked, reply) for ``command`` on ``node`` or, if it is down
        or not given, a random live node; the reply is None if no node is up
        or the call failed (the error is counted). Frozen nodes count as down
        (a call sent just before the freeze times out: an error)."""
        node, reply, _ = self.checked_call(clients, rng, *command, node=node)
        return node, reply

    def checked_call(self, clients, rng, *command, node=None):
        """call(), and whether the node answered (a null reply is an answer)."""
        with self.lock:
            live = [i for i in self.cluster.alive() if i not in self.frozen]
        if node is None or node not in live:
            if not live:
                return None, None, False
            node = rng.choice(live)
        try:
            return node, clients[node].execute_command(*command), True
        except redis.RedisError as e:
            with self.lock:
                self.errors[f"{command[0]} {type(e).__name__}"] += 1
            return node, None, False

    def thread(self, target, *args):
        def guarded():
            try:
                target(*args)
            except BaseException as e:  # reported in the summary, never lost
                self.thread_failures.append(f"{target.__name__}: {e!r}")
        t = threading.Thread(target=guarded, name=target.__name__, daemon=True)
        t.start()
        return t

    # ------------------------------------------------------------ threads

    def producer(self, index):
        with self.clients() as clients:
            self.produce(clients, random.Random(f"{self.plan.seed}-p{index}"), index)

    def produce(self, clients, rng, index):
        interval = self.plan.producers / self.plan.rate
        next_at = time.monotonic()
        seq = 0
        while not self.stop_producers.is_set():
            next_at = max(next_at + interval, time.monotonic() - 1)
            time.sleep(max(0.0, next_at - time.monotonic()))
            seq += 1
            body = f"{self.plan.seed}-p{index}-{seq}"
            _, job_id = self.call(clients, rng, "ADDJOB", QUEUE, body,
                                  self.plan.add_timeout_ms, "REPLICATE",
                                  self.plan.replicate, "RETRY", self.plan.retry)
            with self.lock:
                if job_id is None:
                    self.unanswered += 1
                else:
                    self.answered[body] = job_id.decode()
                    self.answered_at[body] = time.monotonic()
            if job_id is None:
                time.sleep(0.02)  # a node just died: don't spin on it

    def consumer(self, index):
        with self.clients() as clients:
            self.consume(clients, random.Random(f"{self.plan.seed}-c{index}"))

    def consume(self, clients, rng):
        late = []  # (due, node, job ID, body): acked after a while
        sticky = None  # the node a sticky consumer polls
        while not self.stop_consumers.is_set():
            due = [item for item in late if item[0] <= time.monotonic()]
            late = [item for item in late if item[0] > time.monotonic()]
            for _, node, job_id, body in due:
                self.ack(clients, rng, "ACKJOB", node, [(job_id, body)])
            asked_at = time.monotonic()
            node, jobs, answered = self.checked_call(
                clients, rng, "GETJOB", "TIMEOUT", 200, "COUNT", self.plan.count,
                "FROM", QUEUE, node=sticky)
            if self.plan.polling == "sticky":
                sticky = node if answered else None
            if not jobs:
                if node is None:
                    time.sleep(0.02)
                continue
            if self.plan.acking == "batch":
                batch = [(job_id.decode(), body.decode()) for _, job_id, body in jobs]
                for _, body in batch:
                    self.record_delivery(body, asked_at)
                if rng.random() >= self.plan.unacked_batches:
                    self.ack(clients, rng, "ACKJOB", node, batch)
                continue
            now_ack, fast_ack = [], []
            for _, job_id, body in jobs:
                job = (job_id.decode(), body.decode())
                self.record_delivery(job[1], asked_at)
                policy = rng.random()
                if policy < 0.7:
                    now_ack.append(job)
                elif policy < 0.8:
                    fast_ack.append(job)
                elif policy < 0.9:  # maybe after RETRY requeued it
                    late.append((time.monotonic() + rng.uniform(0.5, 3), node, *job))
                # else never acked: RETRY must deliver it again
            self.ack(clients, rng, "ACKJOB", node, now_ack)
            self.ack(clients, rng, "FASTACK", node, fast_ack)

    def record_delivery(self, body, asked_at):
        with self.lock:
            if not self.delivered[body] and body in self.answered_at:
                self.slowest_first_delivery = max(self.slowest_first_delivery,
                                                  time.monotonic() - self.answered_at[body])
            self.delivered[body] += 1
            # Asked for after our ack of it was answered: the broker let an
            # acknowledged job come back (allowed, but worth counting).
            acked_at, command = self.acked.get(body, (asked_at, None))
            if acked_at < asked_at:
                self.redelivered_after_ack[command] += 1

    def ack(self, clients, rng, command, node, jobs):
        if not jobs:
            return
        _, reply = self.call(clients, rng, command, *(i for i, _ in jobs), node=node)
        if reply is None:
            return  # not acked: RETRY will deliver them again
        with self.lock:
            self.acks += len(jobs)
            for _, body in jobs:
                self.acked.setdefault(body, (time.monotonic(), command))

    def chaos(self):
        if self.plan.schedule == "once":
            return self.kill_once()
        rng = random.Random(self.plan.seed)
        nodes = range(len(self.cluster))
        most = max_down(len(self.cluster), self.plan.replicate)
        while not self.stop_chaos.wait(rng.uniform(*self.plan.pause)):
            self.restart_crashed()
            # A kill-only plan draws exactly what it drew before "stop" existed.
            faults = self.plan.faults
            fault = rng.choice(faults) if len(faults) > 1 else faults[0]
            victims = rng.sample(nodes, rng.randint(1, most))
            if fault == "stop":
                self.freeze(victims, rng.uniform(*self.plan.stopped))
                continue
            for i in victims:
                self.cluster.kill(i)
            with self.lock:
                self.kills += len(victims)
            time.sleep(rng.uniform(*self.plan.down))
            for i in victims:
                restarted = time.monotonic()
                self.cluster.restart(i)  # waits until it is loaded and answers
                self.slowest_restart = max(self.slowest_restart,
                                           time.monotonic() - restarted)

    def kill_once(self):
        """One node kill -9ed at kill_at, restarted at restart_at."""
        started = time.monotonic()
        victim = random.Random(self.plan.seed).randrange(len(self.cluster))
        if self.stop_chaos.wait(self.plan.kill_at):
            return
        self.cluster.kill(victim)
        with self.lock:
            self.kills += 1
        time.sleep(max(0.0, started + self.plan.restart_at - time.monotonic()))
        restarted = time.monotonic()
        self.cluster.restart(victim)
        self.slowest_restart = time.monotonic() - restarted

    def freeze(self, victims, seconds):
        """SIGSTOP ``victims`` for ``seconds``, then SIGCONT them."""
        with self.lock:
            self.frozen.update(victims)
            self.stops += len(victims)
        try:
            for i in victims:
                self.cluster.servers[i].proc.send_signal(signal.SIGSTOP)
            time.sleep(seconds)
        finally:
            for i in victims:
                self.cluster.servers[i].proc.send_signal(signal.SIGCONT)
            with self.lock:
                self.frozen.difference_update(victims)

    def staller(self):
        """Short freezes of random nodes until the consumers stop (see Plan)."""
        rng = random.Random(f"{self.plan.seed}-stalls")
        while not self.stop_consumers.wait(rng.uniform(0.2, 1.0)):
            with self.lock:
                live = [i for i in self.cluster.alive() if i not in self.frozen]
            if not live:
                continue
            victim = rng.choice(live)
            proc = self.cluster.servers[victim].proc
            try:
                proc.send_signal(signal.SIGSTOP)
                self.stalls += 1
                time.sleep(rng.uniform(*self.plan.stalls))
            finally:
                proc.send_signal(signal.SIGCONT)

    def restart_crashed(self):
        """A node down that we did not kill crashed: note it, bring it back."""
        for i, server in enumerate(self.cluster.servers):
            if server.proc.poll() is not None:
                self.crashes.append(f"node {i} exited with {server.proc.returncode}")
                self.cluster.restart(i)

    # ------------------------------------------------------------ the run

    def run(self):
        producers = [self.thread(self.producer, i) for i in range(self.plan.producers)]
        consumers = [self.thread(self.consumer, i) for i in range(self.plan.consumers)]
        chaos = self.thread(self.chaos)
        staller = self.thread(self.staller) if self.plan.stalls else None
        try:
            started = time.monotonic()
            time.sleep(self.plan.duration)
            self.stop_chaos.set()
            chaos.join()  # ends after restarting its victims
            self.stop_producers.set()
            for t in producers:
                t.join()
            load_seconds = time.monotonic() - started
            self.restart_crashed()

            # Drain: the consumers go on until every answered body came out
            # and every node freed every job (acks reached all holders).
            drained = time.monotonic()
            deadline = drained + self.plan.drain_timeout
            delivered = poll(self.all_delivered, deadline, "every answered body delivered")
            gc_complete = delivered and poll(self.all_freed, deadline, "0 jobs everywhere")
        finally:  # no thread outlives the run, whatever happened
            for event in (self.stop_chaos, self.stop_producers, self.stop_consumers):
                event.set()
            try:
                for t in [chaos, *producers, *consumers, *filter(None, [staller])]:
                    t.join()
            finally:
                resume(self.cluster)
        return self.summary(load_seconds, time.monotonic() - drained, gc_complete)

    def all_delivered(self):
        with self.lock:
            return all(self.delivered[body] for body in self.answered)

    def all_freed(self):
        try:
            return self.cluster.registered_jobs() == [0] * len(self.cluster)
        except redis.RedisError:
            return False

    def copies(self, job_id):
        """{node: state} of the live nodes that still hold ``job_id``."""
        held = {}
        for i in self.cluster.alive():
            try:
                reply = self.cluster[i].execute_command("SHOW", job_id)
            except redis.RedisError as e:
                held[i] = repr(e)
                continue
            if reply:
                fields = dict(zip(reply[::2], reply[1::2]))
                if fields[b"state"] != b"acked":
                    held[i] = (f"{fields[b'state'].decode()} requeue-in "
                               f"{fields[b'next-requeue-within']} ms")
        return held

    def queue_stats(self):
        """QSTAT of the queue on every live node: what a starved job's
        queues were doing."""
        stats = {}
        for i in self.cluster.alive():
            try:
                reply = self.cluster[i].execute_command("QSTAT", QUEUE)
            except redis.RedisError as e:
                stats[i] = repr(e)
                continue
            fields = dict(zip(reply[::2], reply[1::2])) if reply else {}
            stats[i] = {k.decode(): fields[k] for k in (b"len", b"blocked", b"jobs-in",
                        b"jobs-out", b"import-rate") if k in fields}
        return stats

    def summary(self, load_seconds, drain_seconds, gc_complete):
        with self.lock:
            undelivered = sorted(b for b in self.answered if not self.delivered[b])
            # Never delivered while consumers polled: starved if a copy is
            # left somewhere (a liveness failure), lost if none is.
            held = {b: self.copies(self.answered[b]) for b in undelivered}
            starved = [b for b in undelivered if held[b]]
            lost = [b for b in undelivered if not held[b]]
            try:
                registered = self.cluster.registered_jobs()
            except redis.RedisError as e:
                registered = repr(e)
            return {
                "nodes": len(self.cluster), "replicate": self.plan.replicate,
                "seed": self.plan.seed, "load_seconds": round(load_seconds, 1),
                "faults": list(self.plan.faults), "schedule": self.plan.schedule,
                "kills": self.kills, "stops": self.stops, "stalls": self.stalls,
                "crashes": self.crashes,
                "slowest_restart_seconds": round(self.slowest_restart, 1),
                "answered_adds": len(self.answered), "unanswered_adds": self.unanswered,
                "deliveries": sum(self.delivered.values()),
                "distinct_delivered": len(self.delivered),
                "acks": self.acks,
                "redelivered_after_ack": dict(self.redelivered_after_ack),
                "slowest_first_delivery_seconds": round(self.slowest_first_delivery, 1),
                "undelivered": len(undelivered),
                "starved": len(starved),
                "starved_examples": [(b, self.answered[b], held[b]) for b in starved[:10]],
                "queues": self.queue_stats() if starved else None,
                "lost": len(lost),
                "lost_examples": [(b, self.answered[b]) for b in lost[:10]],
                "drain_seconds": round(drain_seconds, 1),
                "gc_complete": gc_complete, "registered_jobs": registered,
                "errors": dict(self.errors), "thread_failures": self.thread_failures,
                "ok": (not undelivered and gc_complete and not self.crashes
                       and not self.thread_failures),
            }


def resume(cluster):
    """SIGCONT every node process still running: none stays frozen (a
    frozen process would also ignore the SIGTERM that stops it)."""
    for server in cluster.servers:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.send_signal(signal.SIGCONT)


def poll(condition, deadline, message):
    """Whether ``condition`` came true before ``deadline`` (monotonic)."""
    try:
        wait_for(condition, max(0.0, deadline - time.monotonic()), 0.1, message)
        return True
    except AssertionError:
        return False


def run(cluster, plan):
    """Run ``plan`` against ``cluster``; the summary of what happened."""
    return Chaos(cluster, plan).run()
