"""Producers and consumers of a simulated run.

Producers ADDJOB to random nodes with random REPLICATE, RETRY, TTL and
ASYNC.  Consumers GETJOB on random nodes and then ACKJOB (sometimes on
another node), FASTACK, NACK, WORKING then ACKJOB, or die without acking.

With ``polling`` (issue 13's clients): one queue, jobs replicated to every
node (or most), RETRY 1-3, and polling consumers (polling.py) instead.

With ``policies`` (docs/lifecycle.md): a QCONFIG default on q1 (a delivery
limit, a backoff), and a third of the jobs with a MAXDELIVERIES of 1-3 of
their own (half of them with a DEADLETTER queue), a fifth with a BACKOFF;
NACKs say REASON, half of them with a DELAY; 30% of them say DEAD instead
(failed for good: to the dead-letter queue now; their own generator);
consumers take from the dead-letter queues too.  A quarter of the jobs have an IDEMPOTENCY key,
and their producer sends the same ADDJOB again 50 ms to 3 s after the
answer, to a random node (checker.py's idempotency rule); those draws
come from a generator of their own, as the PRIORITY (1, 3, 7 or 9)
of 30% of the jobs, and the WAITJOBs: a quarter of the jobs are waited
on, 0 to 1.5 s after their ADDJOB's answer, from a random node (holder or
not), with a TIMEOUT of 0.3 to 20 s (checker.py's WAITJOB rules).
Without it the run draws the same random numbers as before, so other
campaigns replay unchanged.
"""

import random

from .polling import CONSUMERS, POLL_COUNT, POLL_TIMEOUT_MS, PollingConsumer
from .world import SimClient

QUEUES = (b"q0", b"q1", b"q2")
DEAD_LETTER_QUEUES = (b"dead", b"q0:dead", b"q1:dead", b"q2:dead")
POLLING_RETRIES_S = (1, 2, 2, 3)
# Issue 13's producers were fast (queues build up): 3x the rate at 3 nodes;
# the same bus traffic at more nodes, where every node takes every job.
POLLING_TRAFFIC = 9


class Workload:
    def __init__(self, world, rate_per_s=40, consumers=6, faults=False,
                 slow_consumers=False, burst=False, polling=False, policies=False):
        self.world = world
        self.rng = world.rng
        self.rate_per_s = rate_per_s
        self.consumer_count = consumers
        self.faults = faults  # consumers may die, NACK, hop nodes
        self.slow_consumers = slow_consumers
        self.burst = burst
        self.polling = polling
        self.policies = policies and not polling
        self.queues = QUEUES + DEAD_LETTER_QUEUES if self.policies else QUEUES
        self.keys_rng = random.Random(world.seed * 1000003 + 28)  # idempotent adds
        self.waits_rng = random.Random(world.seed * 1000003 + 4)  # WAITJOB
        self.dead_rng = random.Random(world.seed * 1000003 + 9)  # NACK ... DEAD
        if polling:
            rng = self.rng
            self.consumer_count = rng.choice(CONSUMERS)
            self.poll_timeout_ms = rng.choice(POLL_TIMEOUT_MS)
            self.poll_count = rng.choice(POLL_COUNT)
            self.rate_per_s = rate_per_s * max(1, POLLING_TRAFFIC // len(world.nodes))
        self.producing = False
        self.draining = False
        self.producers = {}  # node index -> SimClient
        self.consumers = []

    # --------------------------------------------------------- producing

    def start(self, until_ms):
        self.producing = True
        self.until_ms = until_ms
        if self.policies:
            self._set_queue_defaults()
        self.world.at(self.world.now_ms, self._produce)
        for _ in range(self.consumer_count):
            self._start_consumer()

    def _set_queue_defaults(self):
        """QCONFIG on one node: the others get it over the bus.  Jobs of q1
        added before it arrives somewhere have no limit: the checker reads
        each job's limit from its ADDJOB (``limit_of``)."""
        nodes = self.alive_nodes()
        client = SimClient(self.world, self.rng.choice(nodes))
        client.call([b"QCONFIG", b"q1", b"SET", b"MAXDELIVERIES", b"3",
                     b"BACKOFF", b"linear", b"1", b"2"], lambda reply: None)

    def alive_nodes(self):
        return [n for n in self.world.nodes if n.alive]

    def connection(self, clients, sim_node):
        """The client's connection to ``sim_node`` in ``clients`` (node
        index -> SimClient), a new one if that one is gone."""
        client = clients.get(sim_node.index)
        if client is None or not client.alive or client.sim_node.node is None \
                or client.client.id not in sim_node.node.clients:
            client = clients[sim_node.index] = SimClient(self.world, sim_node)
        return client

    def _produce(self):
        world = self.world
        if not self.producing or world.now_ms >= self.until_ms:
            self.producing = False
            return
        batch = 1
        if self.burst and self.rng.random() < 0.05:
            batch = self.rng.randint(20, 60)
        for _ in range(batch):
            self._add_one()
        gap = max(1, int(self.rng.expovariate(self.rate_per_s) * 1000))
        world.at(world.now_ms + gap, self._produce)

    def _add_one(self):
        rng = self.rng
        nodes = self.alive_nodes()
        if not nodes:
            return
        sim_node = rng.choice(nodes)
        size = len(self.world.nodes)
        if self.polling:
            replicate = size if rng.random() < 0.6 else rng.randint(2, max(2, size - 1))
            retry = rng.choice(POLLING_RETRIES_S)
            queue = QUEUES[0]
        else:
            replicate = rng.randint(1, min(3, size))
            retry = rng.randint(1, 4)
            if replicate == 1 and rng.random() < 0.2:
                retry = 0
            queue = rng.choice(QUEUES)
        ttl = rng.randint(40, 90)
        asynchronous = not self.polling and rng.random() < 0.1
        argv = [b"ADDJOB", queue, b"body-%d" % world_counter(self),
                b"2000", b"REPLICATE", replicate, b"RETRY", retry, b"TTL", ttl]
        if asynchronous:
            argv.append(b"ASYNC")
        limit = 0
        if self.policies:
            if rng.random() < 0.33:
                limit = rng.randint(1, 3)
                argv += [b"MAXDELIVERIES", limit]
                if rng.random() < 0.5:
                    argv += [b"DEADLETTER", b"dead"]
            if rng.random() < 0.2:
                argv += [b"BACKOFF", b"exponential", b"1", b"3"]
        if self.policies and self.keys_rng.random() < 0.3:
            argv += [b"PRIORITY", self.keys_rng.choice((1, 3, 7, 9))]
        key = None
        if self.policies and self.keys_rng.random() < 0.25:
            key = b"key-%d" % world_counter(self)
            argv += [b"IDEMPOTENCY", key]
        client = self.connection(self.producers, sim_node)
        sender = sim_node

        def on_reply(reply):
            if isinstance(reply, bytes):
                self.world.checker.accepted(reply, not asynchronous, ttl * 1000, retry,
                                            limit or self.limit_of(sender, queue, reply))
                if key is not None and not asynchronous:
                    self.world.checker.keyed_added(key, reply)
                    self.world.at(self.world.now_ms + self.keys_rng.randint(50, 3000),
                                  self._add_again, argv, key, ttl, retry, limit)
                if self.policies and not asynchronous and self.waits_rng.random() < 0.25:
                    self.world.at(self.world.now_ms + self.waits_rng.randint(0, 1500),
                                  self._wait, reply)
        client.call(argv, on_reply)

    def _wait(self, job_id):
        """WAITJOB on a random node, on a connection of its own."""
        nodes = self.alive_nodes()
        if not nodes:
            return
        sim_node = nodes[self.waits_rng.randrange(len(nodes))]
        timeout_ms = self.waits_rng.choice((300, 2000, 8000, 20000))
        client = SimClient(self.world, sim_node)
        checker = self.world.checker
        started_ms = self.world.now_ms
        node_started_ms = started_ms + sim_node.clock_offset_ms  # (its clock may jump)

        def on_reply(reply):
            # At its timeout: by the node's clock (one jumped ahead ends the
            # wait early), or by the time that passed (the node keeps what
            # was left of the wait when its clock went back 1 s or more:
            # JobLifecycle.watch_clock; seed 766 at 3 nodes, mixed).
            elapsed = self.world.now_ms - started_ms
            by_clock = self.world.now_ms + sim_node.clock_offset_ms - node_started_ms
            timed_out = max(elapsed, by_clock) >= timeout_ms
            checker.wait_answered(job_id, sim_node.index, started_ms, timed_out, reply)
            client.close()
        client.call([b"WAITJOB", job_id, b"TIMEOUT", timeout_ms], on_reply)

    def _add_again(self, argv, key, ttl, retry, limit):
        """The producer did not see the answer (say): the same ADDJOB again,
        to a random node."""
        nodes = self.alive_nodes()
        if not nodes:
            return
        sim_node = nodes[self.keys_rng.randrange(len(nodes))]
        checker = self.world.checker
        known = set(checker.key_ids.get(key, ()))
        holder = sim_node.index in checker.key_holders(key)
        client = self.connection(self.producers, sim_node)

        def on_reply(reply):
            if not isinstance(reply, bytes):
                return
            checker.keyed_retry(key, sim_node.index, known, holder, reply)
            if reply not in checker.key_ids.get(key, ()):
                # a second job (a node that never held the first): judged as any
                checker.accepted(reply, True, ttl * 1000, retry,
                                 limit or self.limit_of(sim_node, argv[1], reply))
                checker.keyed_added(key, reply)
        client.call(argv, on_reply)

    def limit_of(self, sim_node, queue, job_id):
        """The delivery limit a job got from its queue's default (0: none)."""
        if not self.policies or sim_node.node is None:
            return 0
        job = sim_node.node.jobs.get(job_id)
        policy = None if job is None else job.policy
        return 0 if policy is None else policy.max_deliveries

    # --------------------------------------------------------- consuming

    def _start_consumer(self):
        if self.polling:
            consumer = PollingConsumer(self, QUEUES[0])
            self.consumers.append(consumer)
            consumer.poll()
            return
        nodes = self.alive_nodes()
        if not nodes:
            self.world.at(self.world.now_ms + 500, self._start_consumer)
            return
        consumer = Consumer(self, self.rng.choice(nodes))
        self.consumers.append(consumer)
        consumer.fetch()

    def drain(self):
        """Stop misbehaving: every consumer acks promptly from now on, and
        every node gets one.  Polling consumers go on as they were: they
        are what must get every job."""
        self.draining = True
        self.slow_consumers = False
        if self.polling:
            return
        for sim_node in self.alive_nodes():
            consumer = Consumer(self, sim_node)
            self.consumers.append(consumer)
            consumer.fetch()

    def stop(self):
        self.producing = False
        for consumer in self.consumers:
            consumer.stopped = True


def world_counter(workload):
    workload.world.counter = getattr(workload.world, "counter", 0) + 1
    return workload.world.counter


class Consumer:
    def __init__(self, workload, sim_node):
        self.workload = workload
        self.world = workload.world
        self.rng = workload.rng
        self.sim_node = sim_node
        self.client = SimClient(self.world, sim_node)
        self.stopped = False
        self.dead = False

    def fetch(self):
        if self.stopped or self.dead:
            return
        if not self.client.alive:
            self._reconnect()
            return
        argv = [b"GETJOB", b"TIMEOUT", b"500", b"COUNT", self.rng.randint(1, 3),
                b"WITHCOUNTERS", b"FROM", *self.workload.queues]
        if not self.client.call(argv, self._on_jobs):
            self._reconnect()

    def _reconnect(self):
        nodes = self.workload.alive_nodes()
        if not nodes or self.stopped:
            self.world.at(self.world.now_ms + 300, self.fetch)
            return
        self.sim_node = self.rng.choice(nodes)
        self.client = SimClient(self.world, self.sim_node)
        self.world.at(self.world.now_ms + 50, self.fetch)

    def _on_jobs(self, reply):
        if isinstance(reply, Exception) or reply is None:
            if reply is None:
                self.world.checker.polled_empty()
            self.world.at(self.world.now_ms + (50 if isinstance(reply, Exception) else 1),
                          self.fetch)
            return
        checker = self.world.checker
        for item in reply:
            job_id = item[1]
            checker.delivered(job_id, self.sim_node.index, item[0])
            self._process(job_id)
        self.world.at(self.world.now_ms + 1, self.fetch)

    def _process(self, job_id):
        rng = self.rng
        workload = self.workload
        checker = self.world.checker
        if workload.slow_consumers and rng.random() < 0.2:
            delay = rng.randint(1500, 6000)  # longer than most RETRY values
            checker.redelivery_expected(job_id)
        else:
            delay = rng.randint(5, 300)
        action = "ack"
        if workload.faults and not workload.draining:
            roll = rng.random()
            if roll < 0.05:
                action = "die"
            elif roll < 0.10:
                action = "nack"
            elif roll < 0.15:
                action = "ack-elsewhere"
        roll = rng.random()
        if action == "ack" and roll < 0.1:
            action = "fastack"
        elif action == "ack" and roll < 0.2:
            action = "working"
        if action == "die":
            checker.redelivery_expected(job_id)
            self.world.at(self.world.now_ms + delay, self._die)
            return
        if action == "nack":
            checker.redelivery_expected(job_id)
        self.world.at(self.world.now_ms + delay, self._finish, job_id, action)

    def _finish(self, job_id, action):
        checker = self.world.checker
        client = self.client
        if action == "ack-elsewhere":
            nodes = self.workload.alive_nodes()
            if nodes:
                client = SimClient(self.world, self.rng.choice(nodes))
            action = "ack"
        if action == "working":
            def on_working(reply, job_id=job_id):
                self.world.at(self.world.now_ms + self.rng.randint(5, 200),
                              self._finish, job_id, "ack")
            if not client.call([b"WORKING", job_id], on_working):
                checker.redelivery_expected(job_id)
            return
        command = {"ack": b"ACKJOB", "fastack": b"FASTACK", "nack": b"NACK"}[action]
        if command != b"NACK":
            checker.ack_sent(job_id)

        def on_reply(reply):
            if command != b"NACK" and not isinstance(reply, Exception):
                checker.acked(job_id, fast=command == b"FASTACK")
        argv = [command, job_id]
        dead = False
        if command == b"NACK" and self.workload.policies:
            dead = self.workload.dead_rng.random() < 0.3
            if self.rng.random() < 0.5 and not dead:
                argv += [b"DELAY", self.rng.randint(1, 2)]
            argv += [b"REASON", b"failed at %d" % self.world.now_ms]
            if dead:
                argv.append(b"DEAD")
                index = client.sim_node.index

                def on_reply(reply, index=index):  # noqa: F811 (NACK's own)
                    if reply == 1:
                        checker.nacked_dead(job_id, index)
        if not client.call(argv, on_reply):
            checker.redelivery_expected(job_id)  # the node died: we could not ack

    def _die(self):
        self.dead = True
        self.client.close()
        self.world.at(self.world.now_ms + self.rng.randint(100, 1000),
                      self.workload._start_consumer)
