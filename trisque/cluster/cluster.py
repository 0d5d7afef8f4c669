"""The cluster as the node core sees it: ``Cluster`` is the core's
``ClusterHooks`` for a node with peers.

It owns one object per state machine, each the single owner of its state:
membership (membership.py), replication, requeue, acks and federation.  The
core calls them directly (``node.requeue.timer_fired(job, now_ms)``); bus
messages reach them through ``receive``, by message type.  What they send
goes through the outbox (outbox.py), coalesced per peer and turn, to the
*transport*: cluster/tcp/ over TCP, or the simulator's in memory.  A
transport calls ``receive(frame, link)``, ``link_up(node_id)`` and
``link_down(node_id)`` here.
"""

from collections.abc import Callable
from typing import Any

from ..protocol import bus
from ..protocol.jobid import IdGenerator
from ..core.hooks import ClusterHooks
from ..core.jobs.commands_queues import set_paused
from ..core.jobs import policy as policy_codec
from ..core.jobs.policy import QueuePolicy
from ..core.jobs import schedule as schedule_codec
from ..core.jobs.registry import JobIdSet
from ..core.node import Node
from .acks import Acks
from .bus_guard import BusGuard
from .federation import Federation
from .membership import ClusterNode, Membership
from .outbox import Outbox, Transport
from .replication import Replication
from .requeue import Requeue
from .waitjob import WaitJobs

# A message from a known peer, for the part that answers it.
Handler = Callable[[ClusterNode, bus.Message], None]
TOMBSTONE_RESEND_MS = 1000  # schedule tombstones a peer was not seen holding


class Cluster(ClusterHooks):
    transport: Transport
    membership: Membership
    outbox: Outbox
    replication: Replication
    requeue: Requeue
    acks: Acks
    federation: Federation
    waitjobs: WaitJobs
    tombstones: JobIdSet
    handlers: dict[int, Handler]
    received: list[bus.FrameCount]
    _transport_cron: Callable[[int], None] | None
    _senders_version: int
    _sender_id: str
    _other_sender_id: str
    _sender: ClusterNode
    _other_sender: ClusterNode
    bus_guard: BusGuard
    publish_too_big: int
    # Lone SETACK, GOTACK and DELJOB frames are held until the turn's
    # replies and GOTJOBs have gone out (handle_held_acks): they are the lazy
    # messages that ride in front of a later job's REPLJOB or GOTJOB
    # (outbox.py), and handled first they held that job up (bench/README.md,
    # "Where a job's latency goes, thirtieth session").  On with the TCP
    # transport and in the simulator (a ms's frames are a turn there); off
    # by default, where frames are handed in one at a time (unit tests).
    hold_acks: bool
    held_acks: list[tuple[int, ClusterNode, bytes, int]]  # (type, sender, job ID, aux)
    save_config: Callable[[], None]  # set by the shell (nodes.conf)

    def __init__(self, node: Node, transport: Transport, ip: str, port: int, bus_port: int) -> None:
        self.node = node
        self.transport = transport
        self.membership = membership = Membership(node, transport, ip, port, bus_port)
        self.outbox = outbox = Outbox(node, transport, membership)
        self.tombstones = JobIdSet()  # IDs of acked jobs freed recently (acks.py)
        self.replication = Replication(node, outbox, membership, self.tombstones)
        self.requeue = Requeue(node, outbox)
        self.acks = Acks(node, outbox, membership, self.replication, self.tombstones)
        self.federation = Federation(node, outbox, membership, self.tombstones)
        node.replication, node.requeue, node.acks, node.federation = (
            self.replication, self.requeue, self.acks, self.federation)
        self.waitjobs = node.wait_hooks = WaitJobs(node, outbox, membership, self.tombstones)
        self.handlers = self._handlers()
        self.received = bus.frame_counts()  # by message type (/metrics)
        # The transport's own housekeeping each cron tick (links' deadlines).
        self._transport_cron = getattr(transport, "cron", None)
        self.bus_guard = BusGuard()  # refused links: counts, log pacing
        self.publish_too_big = 0  # PUBLISHes over cluster-bus-max-frame, kept local
        self._tombstones_sent_ms = 0  # schedule tombstones resent (_resend_tombstones)
        # _job_sender's last two senders ("": none) at the node table's version
        self._senders_version = -1
        self._sender_id = self._other_sender_id = ""
        self._sender = self._other_sender = membership.myself
        self.hold_acks = False
        self.held_acks = []
        node.cluster = self

    def _handlers(self) -> dict[int, Handler]:
        """The handlers of the rarer message types (``receive`` calls those
        of every job's frames itself: REPLJOB, GOTJOB, WORKING, SETACK,
        GOTACK, DELJOB)."""
        requeue, federation = self.requeue, self.federation
        return {
            bus.QUEUED: lambda sender, msg: requeue.on_queued_or_working(
                sender, msg.body, bus.QUEUED, msg.mflags),
            bus.WILLQUEUE: lambda sender, msg: requeue.on_willqueue(sender, msg.body),
            bus.ENQUEUE: lambda sender, msg: requeue.on_enqueue(sender, msg.body),
            bus.FAIL: lambda sender, msg: self.membership.on_fail(msg),
            bus.NEEDJOBS: lambda sender, msg: federation.on_needjobs(
                sender, msg.body[1], msg.body[0]),
            bus.YOURJOBS: lambda sender, msg: federation.on_yourjobs(sender, msg.body),
            bus.PAUSE: lambda sender, msg: self._on_pause(msg.body[1], msg.body[0]),
            bus.PUBLISH: lambda sender, msg: self._on_publish(msg),
            bus.DEADJOB: lambda sender, msg: requeue.on_deadjob(sender, msg.body),
            bus.REVIVE: lambda sender, msg: requeue.on_revive(sender, msg.body),
            bus.LASTERROR: lambda sender, msg: requeue.on_last_error(sender, *msg.body),
            bus.QPOLICY: lambda sender, msg: self._on_queue_policy(*msg.body),
            bus.WAITJOB: lambda sender, msg: self.waitjobs.on_waitjob(sender, msg.body),
            bus.JOBSTATE: lambda sender, msg: self.waitjobs.on_jobstate(sender, msg.body),
            bus.SCHEDULE: lambda sender, msg: self._on_schedule(sender, msg.mflags, *msg.body),
            bus.SCHEDFIRED: lambda sender, msg: self._on_schedule_fired(*msg.body),
        }

    def set_node_id(self, node_id: str) -> None:
        """Adopt ``node_id`` (from nodes.conf, or a hard reset)."""
        self.node.id = node_id
        self.node.ids = IdGenerator(node_id, self.node.random_bytes)

    # ------------------------------------------------- hooks of the core

    def size(self) -> int:
        return self.membership.size()

    def reachable_count(self) -> int:
        return len(self.membership.reachable)

    def leaving(self) -> bool:
        return self.membership.myself.leaving

    def pause_broadcast(self, queue_name: bytes, flags: int) -> None:
        frame = bus.queue_op(self.membership.header(), bus.PAUSE, queue_name, flags)
        for other in self.membership.others():
            if other.link_ok and not other.handshake:
                self.transport.send(other.id, frame)

    def publish(self, channel: bytes, message: bytes, shard: bool) -> None:
        """Redis Cluster's rule: a PUBLISH goes to every node, whose own
        subscribers hear it.  Only to peers that read PUBLISH frames
        (membership.py's reads_publish), and only a frame the peers accept
        (cluster-bus-max-frame: a bigger one would close the link)."""
        peers = [other for other in self.membership.nodes.values()
                 if other.reads_publish and other.link_ok and not other.myself]
        if not peers:
            return
        frame = bus.publish(self.membership.header(), channel, message, shard)
        if len(frame) > self.node.config.cluster_bus_max_frame:
            self.publish_too_big += 1
            return
        send = self.transport.send
        for other in peers:
            send(other.id, frame)

    def _on_publish(self, msg: bus.Message) -> None:
        channel, message = msg.body
        self.node.pubsub.publish(channel, message, bool(msg.mflags & bus.SHARD))
    def queue_policy_changed(self, queue_name: bytes) -> None:
        """QCONFIG: every peer that knows policies gets it (last writer
        wins by version, then origin: any order of arrival converges)."""
        for other in self.membership.others():
            if other.policies and not other.handshake:
                self._send_queue_policies(other.id, [queue_name])

    def _send_queue_policies(self, node_id: str, names: list[bytes]) -> None:
        header = self.membership.header()
        for name in names:
            entry = self.node.queue_policies.get(name)
            if entry is not None:
                self.transport.send(node_id, bus.queue_policy(
                    header, name, entry.version_ms, entry.origin,
                    policy_codec.encode(entry.policy)))

    def _on_queue_policy(self, version_ms: int, origin: str, name: bytes,
                         raw: bytes) -> None:
        try:
            policy = policy_codec.decode(raw)
        except ValueError:
            return  # (a newer node's policy we cannot read: keep ours)
        self.node.apply_queue_policy(name, QueuePolicy(policy, version_ms, origin))

    # ------------------------------- periodic jobs (core/jobs/schedules.py)

    def schedule_changed(self, name: bytes) -> None:
        for other in self.membership.others():
            if other.schedules and not other.handshake:
                self._send_schedules(other.id, [name], fired=False)

    def schedule_fired(self, name: bytes, tick_ms: int, job_id: bytes) -> None:
        frame = bus.schedule_fired(self.membership.header(), name, tick_ms, self.node.id,
                                   job_id)
        for other in self.membership.others():
            if other.schedules and not other.handshake:
                self.transport.send(other.id, frame)

    def schedule_rank(self) -> int:
        """Rank by ID among me and the peers I can talk to that know
        schedules (a link down is enough: a killed node is passed over at
        once, not after the failure detector's node timeout)."""
        me = self.node.id
        return sum(1 for other in self.membership.reachable
                   if other.schedules and other.link_ok and other.id < me)

    def _send_schedules(self, node_id: str, names: list[bytes], fired: bool = True,
                        mflags: int = 0) -> None:
        """The schedules (and, with ``fired``, their last ticks: a node that
        was away learns what fired meanwhile)."""
        header = self.membership.header()
        by_name = self.node.schedules.by_name
        for name in names:
            entry = by_name.get(name)
            if entry is None:
                continue
            self.transport.send(node_id, bus.schedule(
                header, name, entry.version_ms, entry.origin, schedule_codec.encode(entry),
                mflags))
            if fired and entry.fired_tick_ms:
                self.transport.send(node_id, bus.schedule_fired(
                    header, name, entry.fired_tick_ms, entry.fired_by, entry.fired_job))

    def _on_schedule(self, sender: ClusterNode, mflags: int, version_ms: int, origin: str,
                     name: bytes, raw: bytes) -> None:
        try:
            entry = schedule_codec.decode(name, raw, version_ms, origin)
        except ValueError:
            return  # (a newer node's schedule we cannot read: keep ours)
        schedules = self.node.schedules
        applied = schedules.apply(entry)
        ours = schedules.by_name.get(name)
        if ours is None or not ours.deleted:
            return
        # Deletions are acknowledged (schedules.py, drop_tombstones): a
        # record equal to our tombstone says the sender holds it; a record
        # gets our tombstone back as an ECHO, which gets no answer unless
        # ours is newer than the echo (or the echo was newer than ours: we
        # send it back as a record, so the sender hears that we hold it).
        if (version_ms, origin) == (ours.version_ms, ours.origin):
            schedules.seen_holding(name, sender.id)
        if not mflags & bus.ECHO:
            self._send_schedules(sender.id, [name], fired=False, mflags=bus.ECHO)
        elif applied or ours.newer_than(entry):
            self._send_schedules(sender.id, [name], fired=False)

    def known_peers(self) -> list[str]:
        return [n.id for n in self.membership.others() if not n.handshake]

    def _resend_tombstones(self, now_ms: int) -> None:
        """Every TOMBSTONE_RESEND_MS, each peer with a link gets the
        tombstones it was not seen holding (a frame or its echo was lost)."""
        if not 0 <= now_ms - self._tombstones_sent_ms < TOMBSTONE_RESEND_MS:
            self._tombstones_sent_ms = now_ms
            schedules = self.node.schedules
            for other in self.membership.others():
                if other.schedules and other.link_ok and not other.handshake:
                    names = schedules.not_held_by(other.id)
                    if names:
                        self._send_schedules(other.id, names, fired=False)

    def _on_schedule_fired(self, name: bytes, tick_ms: int, firer: str, job_id: bytes) -> None:
        schedules = self.node.schedules
        if schedules.mark_fired(name, tick_ms, firer, job_id):
            schedules.ticks_heard += 1

    def hello_nodes(self) -> list[list[str]]:
        membership = self.membership
        nodes = sorted(membership.nodes.values(), key=lambda n: not n.myself)
        return [[n.id, n.ip, str(n.port), str(membership.priority(n))]
                for n in nodes if not n.handshake]

    def info_fields(self) -> list[tuple[str, str | int]]:
        membership = self.membership
        fields: list[tuple[str, str | int]] = [
            ("cluster_state", "ok"),
            ("cluster_known_nodes", len(membership.nodes)),
            ("cluster_reachable_nodes", len(membership.reachable)),
            ("cluster_size", membership.size()),
            ("cluster_stats_messages_sent", membership.messages_sent),
            ("cluster_stats_messages_received", membership.messages_received),
            ("cluster_stats_jobs_let_go", self.requeue.jobs_let_go),
            ("cluster_stats_publish_too_big", self.publish_too_big),
        ]
        return fields + self.federation.info_fields() + self.bus_guard.info_fields()

    def cron(self, now_ms: int) -> None:
        self.outbox.flush_held()  # the lazy messages no other one took along
        self.acks.expire_tombstones(now_ms)
        self.replication.cron()
        self.membership.cron(now_ms)
        self.federation.cron(now_ms)
        if self.node.waited:  # (waitjob.py is interpreted: most ticks, no call)
            self.waitjobs.cron(now_ms)
        if self.node.schedules.by_name:
            self._resend_tombstones(now_ms)
        if self._transport_cron is not None:
            self._transport_cron(now_ms)

    # ----------------------------------------------- the transport's calls

    def flush(self) -> None:
        """End of a turn: encode and hand to the transport what it produced."""
        if self.federation.pending:
            self.federation.before_flush()
        self.outbox.encode()

    def link_up(self, node_id: str) -> None:
        node = self.membership.nodes.get(node_id)
        if node is not None:
            self.membership.link_up(node, self.node.now_ms())
            self.replication.on_link_up(node_id)
            if node.policies:  # (a QCONFIG may have been missed while it was away)
                self._send_queue_policies(node_id, list(self.node.queue_policies))
            if node.schedules:  # (and schedules, and the ticks fired)
                self._send_schedules(node_id, list(self.node.schedules.by_name))

    def link_down(self, node_id: str) -> None:
        node = self.membership.nodes.get(node_id)
        if node is not None:
            # Whether it reads policies stays as its frames last said: the
            # next one says again (a node restarted as an older version),
            # while a flap alone must not strip the policies of the copies
            # and messages sent meanwhile.
            self.membership.link_down(node)
            self.node.schedules.peer_link_down(node_id)

    def receive(self, frame: bytes | bytearray | memoryview, link: Any) -> None:
        """One frame from ``link``.  Raises bus.BusError if malformed."""
        data = frame if isinstance(frame, bytes) else bytes(frame)
        type_, mflags, sender_id = bus.read_header(data)
        if type_ >= bus.TYPE_COUNT:
            return  # a newer node's message type: ignored (protocol/bus.py)
        self.received[type_].n += 1
        # Every job's frames (REPLJOB, GOTJOB, WORKING, SETACK, GOTACK,
        # DELJOB): their body alone, no Message, and their handlers called
        # directly (a native call, not a look-up in ``handlers`` and a call
        # of its lambda).  (The body is read before the sender is known: a
        # malformed frame closes the link whoever sent it.)
        ack = type_ == bus.SETACK or type_ == bus.GOTACK or type_ == bus.DELJOB
        lone = len(data) == bus.ONE_ITEM_FRAME_LEN  # (one job's item, if a job frame)
        if self.held_acks and type_ != bus.REPLJOB and type_ != bus.GOTJOB and not (
                ack and lone):
            # Any other frame goes after the held ones, as it came.  (A
            # REPLJOB or GOTJOB may pass them: a job's copy and its GOTJOB
            # come before any ack message of that job on a link.)
            self.handle_held_acks()
        if type_ == bus.REPLJOB:
            records = bus.decode_body(data, type_)
            sender = self._job_sender(sender_id)
            if sender is not None:
                self.replication.on_repljob(sender, records, mflags)
            return
        if (type_ == bus.GOTJOB or type_ == bus.SETACK or type_ == bus.GOTACK
                or type_ == bus.DELJOB or type_ == bus.WORKING):
            if lone and type_ != bus.GOTJOB:
                # A lone item (a job's every frame at low rates): its ID and
                # aux to the handler, no list of one tuple made.
                job_id = bus.lone_job_id(data, type_)
                sender = self._job_sender(sender_id)
                if sender is None:
                    return
                aux = bus.lone_aux(data)
                if not ack:
                    self.requeue.queued_or_working(sender, job_id, bus.WORKING, mflags)
                elif self.hold_acks:
                    self.held_acks.append((type_, sender, job_id, aux))
                else:
                    self._lone_ack(type_, sender, job_id, aux)
                return
            body = bus.decode_body(data, type_, True)  # (a GOTJOB's items raw)
            sender = self._job_sender(sender_id)
            if sender is None:
                return
            if type_ == bus.GOTJOB:
                self.replication.on_gotjob_frame(sender, body)
            elif type_ == bus.SETACK:
                self.acks.on_setack(sender, body)
            elif type_ == bus.GOTACK:
                self.acks.on_gotack(sender, body)
            elif type_ == bus.DELJOB:
                self.acks.on_deljob(sender, body)
            else:
                self.requeue.on_queued_or_working(sender, body, bus.WORKING, mflags)
            return
        msg = bus.decode(data)
        if type_ == bus.PING or type_ == bus.PONG or type_ == bus.MEET:
            self.membership.on_gossip_message(msg, link)
            peer = self.membership.nodes.get(msg.sender)
            if peer is not None and not peer.myself:
                if not msg.sender_flags & bus.F_POLICIES:
                    peer.policies = False  # an older node: jobs go without their policy
                elif not peer.policies:
                    peer.policies = True  # it reads policies: it gets ours
                    self._send_queue_policies(peer.id, list(self.node.queue_policies))
                if not msg.sender_flags & bus.F_SCHEDULES:
                    peer.schedules = False  # an older node: it is sent no schedule
                elif not peer.schedules:
                    peer.schedules = True
                    self._send_schedules(peer.id, list(self.node.schedules.by_name))
            return
        sender = self._job_sender(sender_id)
        if sender is not None:
            handler = self.handlers.get(type_)
            if handler is not None:
                handler(sender, msg)

    def hold_acks_for_turns(self) -> None:
        """From now on the lone ack frames (``held_acks``) and a consumer's
        START-GC (Acks.hold_gcs) wait for handle_held_acks, which whoever
        calls this runs once a turn's replies are out."""
        self.hold_acks = True
        self.acks.hold_gcs = True

    def has_held_acks(self) -> bool:
        """Whether ack frames or START-GCs wait for handle_held_acks."""
        return bool(self.held_acks) or bool(self.acks.held_gcs)

    def handle_held_acks(self) -> None:
        """The held ack frames, in the order they came (see ``held_acks``),
        then the START-GCs held (Acks.held_gcs)."""
        held, self.held_acks = self.held_acks, []
        for type_, sender, job_id, aux in held:
            self._lone_ack(type_, sender, job_id, aux)
        if self.acks.held_gcs:
            self.acks.start_held_gcs()

    def _lone_ack(self, type_: int, sender: ClusterNode, job_id: bytes, aux: int) -> None:
        """A lone SETACK, GOTACK or DELJOB item, to its handler."""
        if type_ == bus.SETACK:
            self.acks.setack(sender, job_id, aux)
        elif type_ == bus.GOTACK:
            self.acks.gotack(sender, job_id, aux)
        else:
            self.acks.deljob(job_id, aux)

    @property
    def frames_received(self) -> list[int]:
        """Frames received by message type (/metrics)."""
        return [count.n for count in self.received]

    def _job_sender(self, sender_id: str) -> ClusterNode | None:
        """The peer that sent a frame about jobs, counted, or None: only
        known nodes may talk about jobs."""
        membership = self.membership
        # The last two senders found, by the ID's identity (bus.read_header
        # hands a peer's frames the same str), while the node table stays.
        if self._senders_version != membership.version:
            self._senders_version = membership.version
            self._sender_id = self._other_sender_id = ""
            self._sender = self._other_sender = membership.myself
        if sender_id is self._sender_id:
            sender = self._sender
        elif sender_id is self._other_sender_id:
            sender = self._other_sender
        else:
            found = membership.nodes.get(sender_id)
            if found is None:
                return None
            self._other_sender_id = self._sender_id
            self._other_sender = self._sender
            self._sender_id = sender_id
            self._sender = sender = found
        if sender.handshake or sender.myself:
            return None
        membership.messages_received += 1
        return sender

    def _on_pause(self, queue_name: bytes, flags: int) -> None:
        node = self.node
        queue = node.queues.get(queue_name)
        if queue is None:
            if not flags:
                return
            queue = node.get_queue(queue_name)
        set_paused(node, queue, flags & 3)
