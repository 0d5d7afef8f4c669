"""A simulated trisque cluster: many real node cores, virtual time, a
network we control.

Each simulated node is the real ``Node`` core with the real ``Cluster``
rules; only the clock, the bus transport, the client connections and the
disk are replaced.  Frames travel through the real bus codec.  One seeded
``random.Random`` drives everything (the network, the workload, the nodes'
jitter and job IDs), so a seed replays a run exactly.

Time is an integer of milliseconds; events are (time, sequence, action) in
a heap.  After every event the node involved flushes its cluster outbox,
its clients' replies are read, and its next deadline is scheduled.

A node can be stalled (``busy_until``, see load.py): the events meant for
it (frames, timers, cron, client requests) wait until it runs again, in the
order they came.
"""

import heapq
import random
from collections.abc import Callable

import hiredis

from trisque.cluster.cluster import Cluster
from trisque.cluster.outbox import Transport
from trisque.core.jobs import policy as policy_codec
from trisque.protocol import aof, bus
from trisque.core.admin.config import Config
from trisque.core.client import FunctionWaker
from trisque.core.jobs.job import ACKED, DUMMY_ACK, serialize
from trisque.core.jobs.queue import Levels, level_of
from trisque.core.node import Node
from trisque.core.table import COMMANDS
from trisque.server.aof import load as aof_load
from trisque.server.aof import rewrite as aof_rewrite

EPOCH_MS = 1_800_000_000_000  # virtual wall clock starts here
CRON_MS = 100
TOMBSTONE_MS = 3000  # schedule-tombstone-ms: short, so the drain sees deletions forgotten
STOP_CHECK_MS = 100  # run_until's stop condition is checked this often
# A whole seed runs ~20,000 events: this many at one virtual ms is a node
# re-arming a timer that is already due, for ever (a loop the real server
# would spin a core on).
LIVELOCK_EVENTS = 100_000
# The core's invariants are checked after every this many turns of a node:
# the check walks every job (a fifth of a seed's CPU when run every turn),
# and a broken invariant stays broken long enough to be seen a few turns on.
INVARIANTS_EVERY = 8
PORT = 7711


def is_dead_letter_queue(name):
    return name == b"dead" or name.endswith(b":dead")


class Livelock(AssertionError):
    """Virtual time stopped: events kept coming at one ms."""


class ObservedNode(Node):
    """The real core, reporting copies coming and going to the checker."""

    world = None
    index = None

    def register(self, job, *args, **kwargs):
        added = super().register(job, *args, **kwargs)
        if added and job.state != ACKED:
            self.world.checker.copy_added(self.index, job.id)
            if job._rare is not None and job.policy is not None and job.policy.idempotency_key:
                self.world.checker.key_copy_added(self.index, job.id)
                key = job.policy.idempotency_key
                if self.world.schedules is not None and key.startswith(b"schedule:"):
                    self.world.schedules.job_created(job.id, key)
        return added

    def unregister(self, job, *args, **kwargs):
        had = self.jobs.get(job.id) is job
        super().unregister(job, *args, **kwargs)
        if had:
            self.world.checker.copy_gone(self.index, job.id)

    def fetch(self, queue, *args, **kwargs):
        """Priorities (docs/lifecycle.md): the job taken is of the highest
        level queued there."""
        job = super().fetch(queue, *args, **kwargs)
        if queue.jobs._sorted.__class__ is Levels:
            level = level_of(job)
            above = [j.id for j in queue.jobs if level_of(j) > level]
            if above:
                self.world.checker.violations.append(
                    f"priority: node {self.index} gave {job.id.decode()} (level {level}) "
                    f"from {queue.name.decode()} while {above[0].decode()} (level "
                    f"{level_of(queue.jobs[0])}) was queued at {self.world.now_ms} ms")
        return job

    def move_job(self, job, queue):
        """A copy that leaves a dead-letter queue for a live one (another
        holder's live copy came by YOURJOBS and wins, or REVIVE) counts as
        a new copy for the checker's NACK ... DEAD rule."""
        before = job.queue
        super().move_job(job, queue)
        if is_dead_letter_queue(before) and not is_dead_letter_queue(queue):
            self.world.checker.copy_revived(self.index, job.id)

    def mark_acked(self, job, *args, **kwargs):
        super().mark_acked(job, *args, **kwargs)
        self.world.checker.copy_gone(self.index, job.id)


class SimLog:
    """The node's append-only file, on a disk that survives crashes."""

    enabled = True
    failing = False  # the simulated disk never fills up

    def __init__(self, disk):
        self.disk = disk  # a bytearray kept by SimNode across restarts

    def job_stored(self, job):
        self.disk += aof.loadjob(serialize(job, job.etime_ms))

    def job_deleted(self, job):
        self.disk += aof.deljob(job.id)

    def job_updated(self, job):
        self.disk += aof.deljob(job.id) + aof.loadjob(serialize(job, job.etime_ms))

    def append_command(self, *argv):
        self.disk += aof.command(*argv)  # (QCONFIG STORE, SCHEDULE STORE and FIRED)

    def info(self):
        return {"aof_enabled": 1}

    def reload(self):
        pass

    def rewrite(self):
        return "Background append only file rewriting started"


class SimLink:
    """One direction of a simulated TCP connection, as the cluster sees it:
    ``send`` answers on the same connection."""

    def __init__(self, world, owner, peer, node_id=None):
        self.world = world
        self.owner = owner  # SimNode holding this end
        self.peer = peer  # SimNode at the other end
        self.node_id = node_id  # for outgoing links: who we think it is
        self.peer_ip = peer.ip
        self.broken = False
        self.reverse = None  # the peer's end (an inbound link)

    def send(self, frame):
        if not self.broken:
            self.world.network.transmit(self, frame)


class SimTransport(Transport):
    """The cluster's transport (outbox.Transport), in memory."""

    def __init__(self, world, sim_node):
        self.world = world
        self.sim_node = sim_node
        self.out_links = {}  # node id -> SimLink
        self.connecting = set()
        self.flush_needed = False

    def send(self, node_id, frame):
        link = self.out_links.get(node_id)
        if link is not None:
            link.send(frame)

    def ensure_link(self, node):
        if node.id in self.out_links or node.id in self.connecting:
            return
        self.connecting.add(node.id)
        self.world.network.connect(self.sim_node, node.id, node.ip, node.bus_port)

    def drop_link(self, node_id):
        link = self.out_links.pop(node_id, None)
        self.connecting.discard(node_id)
        if link is not None:
            self.world.network.close(link)

    def rename_link(self, old_id, new_id):
        link = self.out_links.pop(old_id, None)
        if link is not None:
            link.node_id = new_id
            stale = self.out_links.pop(new_id, None)
            if stale is not None:
                self.world.network.close(stale)
            self.out_links[new_id] = link

    def flush_soon(self):
        self.flush_needed = True


class SimNode:
    def __init__(self, world, index):
        self.world = world
        self.index = index
        self.ip = f"10.0.0.{index + 1}"
        self.id = world.rng.getrandbits(160).to_bytes(20, "big").hex()
        self.disk = bytearray()  # the AOF
        self.nodes_conf = ""
        self.clock_offset_ms = 0
        self.alive = False
        self.node = None
        self.timer_at = None  # world time of the pending timer event
        self.incarnation = 0
        self.busy_until = 0  # world time until which the node does not run
        self.turns = 0

    def stalled(self, action: Callable[..., object], *args: object) -> bool:
        """True if the node is not running now: ``action(*args)`` is put
        off until it does (behind what already waits, as in a socket)."""
        busy_until = self.busy_until
        if busy_until <= self.world.now_ms:
            return False
        self.world.at(busy_until, action, *args)
        return True

    # ------------------------------------------------------------ life

    def start(self, with_aof=True):
        world = self.world
        self.incarnation += 1
        self.timer_at = None  # the last incarnation's timer event is void
        self.busy_until = 0  # a new process
        config = Config()
        config.port = PORT
        config.cluster_node_timeout = world.node_timeout_ms
        config.maxmemory = 0
        config.appendonly = True
        # deleted schedules are forgotten within the drain (schedules.py)
        config.schedule_tombstone_ms = TOMBSTONE_MS
        rng = random.Random(world.rng.getrandbits(64))
        node = ObservedNode(config, self.id, self.clock, table=COMMANDS,
                            rng=rng, random_bytes=rng.randbytes)
        node.world = world
        node.index = self.index
        node.on_wake = FunctionWaker(world.client_woken)
        self.transport = SimTransport(world, self)
        self.cluster = Cluster(node, self.transport, self.ip, PORT, PORT + 10000)
        # Frames delivered in the same ms are one turn, their lone acks and
        # a client's ACKJOB's START-GC handled at its end, after the turn's
        # GOTJOBs (as the TCP transport's after_replies does): a REPLJOB or
        # GOTJOB passes them.
        self.cluster.hold_acks_for_turns()
        self.turn_end_at = None
        if self.nodes_conf:
            my_id = self.cluster.membership.load_config_text(self.nodes_conf, node.now_ms())
            self.cluster.set_node_id(my_id)
        self.node = node
        self.alive = True
        world.checker.node_started(self.index)
        if not with_aof:
            self.disk.clear()
            world.checker.disk_wiped(self.index)
        node.log = SimLog(self.disk)
        if self.disk:
            self._load_aof()
        world.at(world.now_ms + world.rng.randrange(CRON_MS), self.cron, self.incarnation)
        self.after_event()

    def _load_aof(self):
        node = self.node
        options = aof_load.Options(node.now_ms(), enqueue_once=False)
        buf = bytes(self.disk)
        pos = 0
        node.log = SimLog(bytearray())  # do not log the replay itself
        self.world.checker.replay_started()
        while pos < len(buf):
            argv, pos = aof.parse(buf, pos, len(buf))
            if argv[0] == aof.LOADJOB:
                start, stop = argv[1]
                aof_load.replay_loadjob(node, (buf, start, stop), options)
            elif argv[0] == b"QCONFIG":
                aof_load.replay_qconfig(node, argv, options)
            elif argv[0] == b"IDEMKEY":
                aof_load.replay_idemkey(node, argv, options)
            elif argv[0] == b"SCHEDULE":
                aof_load.replay_schedule(node, argv, options)
            else:
                aof_load.replay_deljob(node, argv, options)
        options.deferred.flush(node)
        self.world.checker.replay_done()
        # A restarted node rewrites its log from what it holds (as a
        # rewrite would): the live jobs and queue defaults, nothing else.
        self.disk.clear()
        node.log = SimLog(self.disk)
        for job in node.jobs.values():
            node.log.job_stored(job)
        for name, entry in node.queue_policies.items():
            node.log.append_command(b"QCONFIG", name, b"STORE", b"%d" % entry.version_ms,
                                    entry.origin.encode(), policy_codec.encode(entry.policy))
        for records in aof_rewrite.tombstone_snapshot(node):  # idempotency keys
            self.disk += records
        for records in aof_rewrite.schedule_snapshot(node):  # periodic jobs
            self.disk += records

    def crash(self, keep_aof=True):
        """kill -9: memory gone; the disk stays unless keep_aof is False."""
        if not self.alive:
            return
        checker = self.world.checker
        self.nodes_conf = self.cluster.membership.config_text()
        self.alive = False
        if not keep_aof:
            self.disk.clear()
            checker.disk_wiped(self.index)
        checker.disk_state(self.index, self.disk)  # before the copies go
        for job_id, job in list(self.node.jobs.items()):
            if job.state != ACKED:
                checker.copy_gone(self.index, job_id, crashed=True, wiped=not keep_aof)
        self.world.network.node_down(self)
        for client in list(self.node.clients.values()):
            self.world.client_lost(client)
        self.node = None

    # ------------------------------------------------------------ time

    def clock(self):
        return (EPOCH_MS + self.world.now_ms + self.clock_offset_ms) / 1000.0

    def cron(self, incarnation):
        if not self.alive or incarnation != self.incarnation:
            return
        if self.stalled(self.cron, incarnation):
            return
        self.node.cron()
        if self.world.schedules is not None:
            self.world.schedules.node_cron(self.node)
        self.after_event()
        self.world.at(self.world.now_ms + CRON_MS, self.cron, incarnation)

    def timers(self, incarnation):
        # Only the event for the pending deadline counts: one left behind
        # by a deadline that moved is void (run, it re-armed the timer and
        # such copies multiplied: 2/3 of all events of a 7-node seed).
        if (not self.alive or incarnation != self.incarnation
                or self.timer_at != self.world.now_ms):
            return
        if self.busy_until > self.world.now_ms:  # late: it runs when the node does
            self.timer_at = self.busy_until
            self.stalled(self.timers, incarnation)
            return
        self.timer_at = None
        self.node.run_timers()
        self.after_event()

    def end_turn_soon(self):
        """The held acks (Cluster.held_acks, Acks.held_gcs) handled once
        the frames delivered and commands run this ms are: one turn-end
        event a ms."""
        if self.cluster.has_held_acks() and self.turn_end_at != self.world.now_ms:
            self.turn_end_at = self.world.now_ms
            self.world.at(self.world.now_ms, self._end_turn, self.incarnation)

    def _end_turn(self, incarnation):
        if not self.alive or incarnation != self.incarnation:
            return
        self.turn_end_at = None
        self.cluster.handle_held_acks()
        self.after_event()

    def after_event(self):
        """End of one turn for this node: send what it produced, arm its
        next deadline, check its invariants."""
        if not self.alive:
            return
        world = self.world
        if self.transport.flush_needed:
            self.transport.flush_needed = False
            self.cluster.flush()
        next_ms = self.node.deadlines.next_ms()
        if next_ms is not None:
            at = max(world.now_ms, next_ms - self.clock_offset_ms - EPOCH_MS)
            if self.timer_at is None or at < self.timer_at:
                self.timer_at = at
                world.at(at, self.timers, self.incarnation)
        self.turns += 1
        if world.check_invariants and not self.turns % INVARIANTS_EVERY:
            self.node.check_invariants()
        world.deliver_client_output()


def _jobs_carried(frame):
    """IDs of the job copies a frame carries (REPLJOB, YOURJOBS): until it
    arrives or is lost, such a copy exists on the wire."""
    if bus.HEADER.unpack_from(frame)[3] not in bus.JOBS_TYPES:
        return ()
    return tuple(fields[0] for fields in bus.decode(frame).body)


class Network:
    """Links between simulated nodes, with the faults of a real network."""

    def __init__(self, world):
        self.world = world
        self.loss = 0.0  # probability a frame is lost
        self.duplicate = 0.0
        self.delay_ms = (1, 3)  # base one-way latency range
        self.jitter_ms = 0  # extra random delay (reorders frames)
        self.blocked = set()  # (from index, to index) pairs that cannot talk
        self.frames = 0
        self.trace = None  # callable(time, src, dst, message) or None
        self.on_jobs_sent = None  # callable(src, dst, frame) for REPLJOB/YOURJOBS

    def reachable(self, a, b):
        return (a.index, b.index) not in self.blocked

    def _latency(self):
        rng = self.world.rng
        low, high = self.delay_ms
        latency = rng.randint(low, high)
        if self.jitter_ms:
            latency += rng.randrange(self.jitter_ms + 1)
        return latency

    def connect(self, src, node_id, ip, bus_port):
        world = self.world
        dst = world.node_by_address(ip, bus_port)
        ok = (dst is not None and dst.alive and self.reachable(src, dst)
              and self.reachable(dst, src))
        world.at(world.now_ms + self._latency(), self._connected, src,
                 src.incarnation, node_id, dst if ok else None)

    def _connected(self, src, incarnation, node_id, dst):
        if not src.alive or src.incarnation != incarnation:
            return
        if src.stalled(self._connected, src, incarnation, node_id, dst):
            return
        transport = src.transport
        if node_id not in transport.connecting:
            return
        transport.connecting.discard(node_id)
        if dst is None or not dst.alive:
            return
        link = SimLink(self.world, src, dst, node_id)
        link.reverse = SimLink(self.world, dst, src)
        link.reverse.reverse = link
        link.dst_incarnation = dst.incarnation
        link.reverse.dst_incarnation = src.incarnation
        transport.out_links[node_id] = link
        src.cluster.link_up(node_id)
        src.after_event()

    def transmit(self, link, frame):
        world = self.world
        src, dst = link.owner, link.peer
        if not self.reachable(src, dst) or world.rng.random() < self.loss:
            if self.trace is not None:
                self.trace(world.now_ms, src.index, dst.index, frame, lost=True)
            return
        copies = 2 if world.rng.random() < self.duplicate else 1
        carried = _jobs_carried(frame)
        if carried and self.on_jobs_sent is not None:
            self.on_jobs_sent(src, dst, frame)
        for _ in range(copies):
            world.checker.in_flight(carried, +1)
            world.at(world.now_ms + self._latency(), self._deliver, link, frame, carried)

    def _deliver(self, link, frame, carried):
        dst = link.peer
        if dst.alive and dst.stalled(self._deliver, link, frame, carried):
            return  # still on its way: waits in the socket
        try:
            if (link.broken or not dst.alive or dst.incarnation != link.dst_incarnation
                    or not self.reachable(link.owner, dst)):
                return
            self.frames += 1
            if self.trace is not None:
                self.trace(self.world.now_ms, link.owner.index, dst.index, frame, lost=False)
            dst.cluster.receive(frame, link.reverse)
            dst.after_event()
            dst.end_turn_soon()
        finally:
            self.world.checker.in_flight(carried, -1)

    def close(self, link):
        link.broken = True
        if link.reverse is not None:
            link.reverse.broken = True

    def node_down(self, sim_node):
        """Every connection of a crashed node resets."""
        for other in self.world.nodes:
            if other is sim_node or not other.alive:
                continue
            transport = other.transport
            for node_id, link in list(transport.out_links.items()):
                if link.peer is sim_node:
                    link.broken = True
                    del transport.out_links[node_id]
                    other.cluster.link_down(node_id)
                    other.after_event()


class SimClient:
    """A client connection to one node: commands in, decoded replies out."""

    def __init__(self, world, sim_node):
        self.world = world
        self.sim_node = sim_node
        self.client = sim_node.node.add_client(addr=f"client:{id(self)}")
        self.client.transport = self
        self.reader = hiredis.Reader()
        self.waiting = []  # callbacks for replies, in order
        self.pending = []  # commands not yet run (behind a blocked one)
        self.alive = True

    def call(self, argv, on_reply):
        """Send one command; ``on_reply(value)`` gets the decoded reply
        (an Exception instance for errors).  Like the real shell, commands
        sent while a blocking command waits run after it."""
        node = self.sim_node
        if not self.alive or not node.alive:
            self.alive = False
            return False
        self.waiting.append(on_reply)
        self.pending.append([a if isinstance(a, bytes) else str(a).encode() for a in argv])
        self.pump()
        return True

    def pump(self):
        node = self.sim_node
        if node.alive and self.pending and node.stalled(self.pump):
            return
        ran = False
        while self.pending and self.alive and node.alive and self.client.blocked is None:
            node.node.execute(self.client, self.pending.pop(0))
            node.end_turn_soon()
            node.after_event()
            ran = True
        if ran:
            self.read_replies()

    def read_replies(self):
        out = self.client.out
        if not out:
            return
        data = b"".join(out)
        out.clear()
        self.reader.feed(data)
        while True:
            reply = self.reader.gets()
            if reply is False:
                break
            callback = self.waiting.pop(0)
            callback(reply)
        self.pump()

    def close(self):
        if self.alive and self.sim_node.alive:
            self.sim_node.node.remove_client(self.client)
            self.sim_node.after_event()
        self.alive = False


class World:
    def __init__(self, seed, nodes=5, node_timeout_ms=3000, check_invariants=True):
        from .checker import Checker
        self.seed = seed
        self.rng = random.Random(seed)
        self.now_ms = 0
        self.events = []
        self.sequence = 0
        self.node_timeout_ms = node_timeout_ms
        self.check_invariants = check_invariants
        self.network = Network(self)
        self.checker = Checker(self)
        self.schedules = None  # a ScheduleChecker with --schedules (schedules.py)
        self.clients_with_output = []
        self.nodes = [SimNode(self, i) for i in range(nodes)]
        self.events_run = 0
        self.faulty = False  # set when a fault profile other than "none" runs

    # ------------------------------------------------------------ events

    def at(self, time_ms, action, *args):
        self.sequence += 1
        heapq.heappush(self.events, (time_ms, self.sequence, action, args))

    def run_until(self, end_ms, stop=None):
        """Run events up to ``end_ms``; with ``stop``, end early at the
        first 100 ms step where stop() holds (checked by virtual time, not
        by event count, so how the simulator schedules its own events does
        not change what a seed does)."""
        if stop is None:
            self._run(end_ms)
            return
        while self.now_ms < end_ms:
            self._run(min(end_ms, self.now_ms + STOP_CHECK_MS))
            if stop():
                return

    def _run(self, end_ms):
        events = self.events
        pop = heapq.heappop
        run = 0
        same_ms = 0  # events run at this virtual ms: a node re-arming at once for ever
        while events and events[0][0] <= end_ms:
            time_ms, _seq, action, args = pop(events)
            if time_ms == self.now_ms:
                same_ms += 1
                if same_ms > LIVELOCK_EVENTS:
                    raise Livelock(f"{same_ms} events at {time_ms} ms without time passing "
                                   f"(the last: {action!r})")
            else:
                same_ms = 0
            self.now_ms = time_ms
            action(*args)
            run += 1
        self.events_run += run
        if self.now_ms < end_ms:
            self.now_ms = end_ms

    # ------------------------------------------------------------ nodes

    def index_of(self, node_id):
        for sim_node in self.nodes:
            if sim_node.id == node_id:
                return sim_node.index
        return None

    def node_by_address(self, ip, bus_port):
        for sim_node in self.nodes:
            if sim_node.ip == ip and bus_port == PORT + 10000:
                return sim_node
        return None

    def start_cluster(self):
        for sim_node in self.nodes:
            sim_node.start()
        first = self.nodes[0]
        for other in self.nodes[1:]:
            first.cluster.membership.meet(other.ip, PORT, PORT + 10000, first.node.now_ms())
        first.after_event()

    def cluster_formed(self):
        n = len(self.nodes)
        return all(s.alive and len(s.cluster.membership.reachable) == n - 1 for s in self.nodes)

    # ----------------------------------------------------------- clients

    def client_woken(self, client):
        sim_client = client.transport
        if sim_client is not None:
            self.clients_with_output.append(sim_client)

    def deliver_client_output(self):
        while self.clients_with_output:
            pending, self.clients_with_output = self.clients_with_output, []
            for sim_client in pending:
                if sim_client.alive:
                    sim_client.read_replies()

    def client_lost(self, client):
        sim_client = client.transport
        if sim_client is not None:
            sim_client.alive = False


def frame_summary(frame):
    """A one-line description of a bus frame, for traces."""
    try:
        msg = bus.decode(frame)
    except bus.BusError as exc:
        return f"<bad frame: {exc}>"
    name = bus.NAMES[msg.type]
    if msg.type in bus.JOBID_TYPES:
        return f"{name} " + " ".join(f"{i.decode()}:{a}" for i, a in msg.body)
    if msg.type in bus.JOBS_TYPES:
        return f"{name} " + " ".join(f[0].decode() for f in msg.body)
    return name


__all__ = ["World", "SimClient", "frame_summary", "DUMMY_ACK"]
