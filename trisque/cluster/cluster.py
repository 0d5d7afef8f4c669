"""The cluster as the node core sees it.

``Cluster`` answers the hooks of ``core.standalone.Standalone``
(size, replicate, broadcast_queued, try_gc, ...) with the rules in
membership.py, replication.py, requeue.py, acks.py and federation.py, and
dispatches the messages that arrive from the bus to them.

It does no I/O itself: a *transport* carries frames.  The real one is
cluster/tcp/transport.py (TCP); the simulator's is in-memory.  A transport
provides what ``Transport`` below lists, and calls ``receive(frame,
link)``, ``link_up(node_id)`` and ``link_down(node_id)`` here.

Job messages to one peer produced in one turn of the event loop are
coalesced: consecutive messages of the same type travel in one frame.
"""

from collections import deque
from collections.abc import Callable
from typing import Any

from mypy_extensions import mypyc_attr

from ..protocol import bus
from ..protocol.jobid import IdGenerator
from ..core.jobs.commands_queues import set_paused
from ..core.jobs.job import Job, serialize
from ..core.node import Node
from ..core.jobs.queue import Queue
from . import acks, federation, replication, requeue
from .bus_guard import BusGuard
from .membership import ClusterNode, Membership
from .replication_latency import ReplicationLatency


TOMBSTONE_MS = 10000  # far longer than a frame can be delayed on the bus
EARLY_FLUSH_ITEMS = 128  # messages in the outbox: send them before the turn ends
# A frame carries job records up to about this many bytes (a bigger job
# alone), so the largest frame is one max-job-size job plus this and the
# headers: what a peer's cluster-bus-max-frame must take (64mb by default).
JOBS_FRAME_BYTES = 1024 * 1024
JOBIDS_FRAME_ITEMS = 16384  # job IDs per frame (44 bytes each: ~700 KB)


def _split_records(records: list[bytes]) -> list[list[bytes]]:
    """Job records in runs of about JOBS_FRAME_BYTES (a bigger one alone),
    in order: one frame each."""
    parts: list[list[bytes]] = [[]]
    size = 0
    for record in records:
        if parts[-1] and size + len(record) > JOBS_FRAME_BYTES:
            parts.append([])
            size = 0
        parts[-1].append(record)
        size += len(record)
    return parts


class Batch:
    """Messages to one peer of one type and mflags, in a row: one frame.
    (A class, not a list: compiled, its fields are read natively.)"""

    __slots__ = ("type", "mflags", "items")
    type: int
    mflags: int
    items: list[Any]  # job records, or (job id, aux) pairs

    def __init__(self, type_: int, mflags: int) -> None:
        self.type = type_
        self.mflags = mflags
        self.items = []


@mypyc_attr(allow_interpreted_subclasses=True)  # test transports extend it
class Transport:
    """What a transport provides, doing nothing: links to nobody (a node
    alone, or a test or benchmark that carries frames its own way)."""

    def send(self, node_id: str, frame: bytes) -> None:
        """Queue ``frame`` for the node ``node_id``."""

    def flush_soon(self) -> None:
        """Frames are queued in the cluster's outbox: have it flushed at
        the end of this turn.  (A transport may also offer ``push()``:
        write what is queued now, in the middle of a long turn.)"""

    def ensure_link(self, node: ClusterNode) -> None:
        """Connect to ``node`` unless already linked."""

    def drop_link(self, node_id: str) -> None:
        """Close the link to ``node_id``, if any."""

    def rename_link(self, old_id: str, new_id: str) -> None:
        """A handshake node got its real ID: its link follows."""

    def cron(self, now_ms: int) -> None:
        """Optional: the transport's own housekeeping, each cron tick."""


class Cluster:
    node: Node
    transport: Any  # a Transport, or anything with its methods (duck-typed)
    local_ip: str
    membership: Membership
    outbox: dict[str, list[Batch]]
    frames_received: list[int]
    repl_latency: dict[str, ReplicationLatency]
    federation: federation.Federation
    size: Callable[[], int]
    jobs_queued: Callable[[Queue], None]
    queue_drained: Callable[[Queue], None]
    need_jobs: Callable[[bytes], None]
    replicating: dict[bytes, Job]
    add_timer: replication.AddJobTimer
    holders_tuples: dict[tuple[str, ...], tuple[str, ...]]
    _queued: int
    _push: Callable[[], None] | None
    _transport_cron: Callable[[int], None] | None
    _header: bus.Header | None
    tombstones: set[bytes]
    jobs_let_go: int
    _tombstone_expiry: deque[tuple[int, bytes]]
    bus_guard: BusGuard
    save_config: Callable[[], None]  # set by the shell (nodes.conf)

    def __init__(self, node: Node, transport: Any, ip: str, port: int, bus_port: int) -> None:
        self.node = node
        self.transport = transport
        self.local_ip = ip
        self.membership = Membership(self, node.id, ip, port, bus_port, node.now_ms())
        self.outbox = {}  # node id -> its batches, in order
        self.frames_received = [0] * len(bus.NAMES)  # by message type (/metrics)
        self.repl_latency = {}  # node id -> ReplicationLatency (/metrics)
        self.federation = federation.Federation(self)
        # The hooks the core calls for every job, bound straight to the
        # part that answers them: one Python call each instead of two.
        self.size = self.membership.size
        self.jobs_queued = self.federation.jobs_queued
        self.queue_drained = self.federation.queue_drained
        self.need_jobs = self.federation.need_jobs
        self.replicating = {}  # job id -> job: synchronous ADDJOBs waiting for copies
        self.add_timer = replication.AddJobTimer()  # their first 50 ms
        self.holders_tuples = {}  # nodes_delivered tuples shared between jobs
        self._queued = 0  # messages in the outbox
        # The transport's "write what is queued now", if it has one.
        self._push = getattr(transport, "push", None)
        # ...and its own housekeeping each cron tick (links' deadlines).
        self._transport_cron = getattr(transport, "cron", None)
        self._header = None
        self.tombstones = set()  # IDs of acked jobs freed recently
        self.jobs_let_go = 0  # queued copies handed to a holder with consumers (requeue.py)
        self._tombstone_expiry = deque()  # (expires at ms, job id), in order
        self.bus_guard = BusGuard()  # refused links: counts, log pacing
        node.cluster = self

    # ----------------------------------------------------------- identity

    def header(self) -> bus.Header:
        me = self.membership.myself
        flags = me.wire_flags()
        header = self._header
        if header is None or header.flags != flags or header.node_id != me.id.encode():
            header = self._header = bus.Header(me.id, me.port, me.bus_port, flags)
        return header

    def set_node_id(self, node_id: str) -> None:
        """Adopt ``node_id`` (from nodes.conf, or a hard reset)."""
        self.node.id = node_id
        self.node.ids = IdGenerator(node_id, self.node.random_bytes)
        self._header = None

    # ------------------------------------------------- hooks of the core

    def reachable_count(self) -> int:
        return len(self.membership.reachable)

    def leaving(self) -> bool:
        return self.membership.myself.leaving

    def replicate(self, job: Job, client: Any, timeout_ms: int, asynchronous: bool,
                  external: bool) -> "replication.PendingAddJob | bytes":
        return replication.replicate(self, job, client, timeout_ms, asynchronous, external)

    def replication_achieved(self, job: Job) -> bool:
        return replication.replication_achieved(self, job)

    def replication_aborted(self, job: Job) -> None:
        replication.replication_aborted(self, job)

    def broadcast_queued(self, job: Job, nack: bool) -> None:
        requeue.broadcast_queued(self, job, nack)

    def will_queue(self, job: Job) -> None:
        requeue.will_queue(self, job)

    def working(self, job: Job) -> None:
        requeue.working(self, job)

    def delivered(self, job: Job) -> None:
        requeue.delivered(self, job)

    def try_gc(self, job: Job) -> None:
        acks.try_gc(self, job)

    def next_gc_ms(self, job: Job) -> Any:
        return acks.next_gc_ms(self, job)

    def dummy_ack(self, job_id: bytes) -> None:
        acks.dummy_ack(self, job_id)

    def fast_ack(self, job: Job | None, job_id: bytes) -> None:
        acks.fast_ack(self, job, job_id)

    def import_rate(self, queue: Queue) -> Any:
        return self.federation.import_rate(queue)

    def pause_broadcast(self, queue_name: bytes, flags: int) -> None:
        frame = bus.queue_op(self.header(), bus.PAUSE, queue_name, flags)
        for other in self.membership.others():
            if other.link_ok and not other.handshake:
                self.transport.send(other.id, frame)

    def hello_nodes(self) -> list[list[str]]:
        membership = self.membership
        nodes = sorted(membership.nodes.values(), key=lambda n: not n.myself)
        return [[n.id, n.ip, str(n.port), str(membership.priority(n))]
                for n in nodes if not n.handshake]

    def info_fields(self) -> list[tuple[str, Any]]:
        membership = self.membership
        return [
            ("cluster_state", "ok"),
            ("cluster_known_nodes", len(membership.nodes)),
            ("cluster_reachable_nodes", len(membership.reachable)),
            ("cluster_size", membership.size()),
            ("cluster_stats_messages_sent", membership.messages_sent),
            ("cluster_stats_messages_received", membership.messages_received),
            ("cluster_stats_jobs_let_go", self.jobs_let_go),
        ] + self.federation.info_fields() + self.bus_guard.info_fields()

    def cron(self, now_ms: int) -> None:
        self._expire_tombstones(now_ms)
        self.membership.cron(now_ms)
        self.federation.cron(now_ms)
        if self._transport_cron is not None:
            self._transport_cron(now_ms)

    def free_acked(self, job: Job) -> None:
        """An acked job is freed here.  For TOMBSTONE_MS its ID is
        remembered, so a REPLJOB or YOURJOBS the network delayed or
        duplicated cannot bring it back to life and deliver it again.  A
        job nobody else ever held has no copy on the way: no tombstone (on
        a lone node that bookkeeping was ~16% of an ACKJOB's CPU)."""
        self.node.delete_job(job)
        if self.held_elsewhere(job):
            self.remember_freed(job.id)

    def held_elsewhere(self, job: Job) -> bool:
        """Another node was given a copy: a message about it may still come."""
        holders = job.nodes_delivered
        return len(holders) > 1 or bool(holders and holders[0] != self.node.id)

    def remember_freed(self, job_id: bytes) -> None:
        self.tombstones.add(job_id)
        self._tombstone_expiry.append((self.node.now_ms() + TOMBSTONE_MS, job_id))

    def _expire_tombstones(self, now_ms: int) -> None:
        expiry = self._tombstone_expiry
        while expiry and expiry[0][0] <= now_ms:
            self.tombstones.discard(expiry.popleft()[1])

    def delete_everywhere(self, job: Job) -> None:
        """Best-effort delete of every copy (DELJOB), then ours."""
        self.send_to_holders(job, bus.DELJOB)
        self.node.unregister(job)

    # ---------------------------------------------------------- sending

    def send_jobid(self, node_id: str, type_: int, job_id: bytes, aux: int = 0,
                   mflags: int = 0) -> None:
        self._enqueue(node_id, type_, mflags, (job_id, aux))

    def send_jobids(self, node_id: str, type_: int, items: list[tuple[bytes, int]],
                    mflags: int = 0) -> None:
        """send_jobid for each of ``items`` ((job id, aux) pairs)."""
        if node_id == self.node.id or not items:
            return
        self._outbox_list(node_id, type_, mflags).extend(items)
        self._count_queued(len(items))

    def send_job(self, node_id: str, type_: int, record: bytes, mflags: int = 0) -> None:
        self._enqueue(node_id, type_, mflags, record)

    def send_to_holders(self, job: Job, type_: int, aux: int = 0, mflags: int = 0) -> None:
        my_id = self.node.id
        for node_id in job.nodes_delivered:
            if node_id != my_id:
                self._enqueue(node_id, type_, mflags, (job.id, aux))

    def send_setack(self, node_id: str, job: Job) -> None:
        self._enqueue(node_id, bus.SETACK, 0, (job.id, len(job.nodes_delivered)))

    def _enqueue(self, node_id: str, type_: int, mflags: int,
                 item: bytes | tuple[bytes, int]) -> None:
        if node_id == self.node.id:
            return
        self._outbox_list(node_id, type_, mflags).append(item)
        self._count_queued(1)

    def enqueue_to(self, node_ids: list[str], type_: int, mflags: int, item: bytes) -> None:
        """The same message to several other nodes (a REPLJOB record to
        each new holder): _enqueue's work, one call for all."""
        for node_id in node_ids:
            self._outbox_list(node_id, type_, mflags).append(item)
        self._count_queued(len(node_ids))

    def _count_queued(self, n: int) -> None:
        """``n`` more messages in the outbox: past EARLY_FLUSH_ITEMS, a
        long turn sends them before it ends (see _flush_early)."""
        self._queued += n
        if self._queued >= EARLY_FLUSH_ITEMS and self._push is not None:
            self._flush_early()

    def _outbox_list(self, node_id: str, type_: int, mflags: int) -> list[Any]:
        """Where a message for ``node_id`` goes: the last batch to it if of
        the same type (one frame carries a run of them), else a new one."""
        outbox = self.outbox
        batches = outbox.get(node_id)
        if batches is None:
            if not outbox:
                self.transport.flush_soon()
            batch = Batch(type_, mflags)
            outbox[node_id] = [batch]
            return batch.items
        last = batches[-1]
        if last.type == type_ and last.mflags == mflags:
            return last.items
        batch = Batch(type_, mflags)
        batches.append(batch)
        return batch.items

    def flush(self) -> None:
        """Encode and hand to the transport what this turn produced."""
        if self.federation.pending:
            self.federation.before_flush()
        self._encode_outbox()

    def _flush_early(self) -> None:
        """A long turn (a pipelined client batch of hundreds of ADDJOBs,
        a frame of hundreds of REPLJOBs) sends what it produced so far
        before going on, so the peers work on it meanwhile instead of
        waiting for the end of the turn.  Only the outbox leaves: the
        end-of-turn federation rules run at the real flush."""
        self._encode_outbox()
        if self._push is not None:
            self._push()

    def _encode_outbox(self) -> None:
        self._queued = 0
        outbox, self.outbox = self.outbox, {}
        header = self.header()
        send = self.transport.send
        for node_id, batches in outbox.items():
            for batch in batches:
                type_, mflags, items = batch.type, batch.mflags, batch.items
                if type_ in bus.JOBS_TYPES:
                    if len(items) > 1 and sum(map(len, items)) > JOBS_FRAME_BYTES:
                        for part in _split_records(items):
                            send(node_id, bus.jobs(header, type_, part, mflags))
                    else:
                        send(node_id, bus.jobs(header, type_, items, mflags))
                elif len(items) > JOBIDS_FRAME_ITEMS:
                    for start in range(0, len(items), JOBIDS_FRAME_ITEMS):
                        send(node_id, bus.jobids(header, type_,
                                                 items[start:start + JOBIDS_FRAME_ITEMS], mflags))
                else:
                    send(node_id, bus.jobids(header, type_, items, mflags))

    def serialize_for_bus(self, job: Job) -> bytes:
        return serialize(job, max(1, job.etime_ms - self.node.now_ms()))

    # -------------------------------------------------------- receiving

    def link_up(self, node_id: str) -> None:
        node = self.membership.nodes.get(node_id)
        if node is not None:
            self.membership.link_up(node, self.node.now_ms())
            replication.on_link_up(self, node_id)

    def link_down(self, node_id: str) -> None:
        node = self.membership.nodes.get(node_id)
        if node is not None:
            self.membership.link_down(node)

    def receive(self, frame: bytes | bytearray | memoryview, link: Any) -> None:
        """One frame from ``link``.  Raises bus.BusError if malformed."""
        msg = bus.decode(frame)
        type_ = msg.type
        self.frames_received[type_] += 1
        if type_ in bus.GOSSIP_TYPES:
            self.membership.on_gossip_message(msg, link)
            return
        sender = self.membership.nodes.get(msg.sender)
        if sender is None or sender.handshake or sender.myself:
            return  # only known nodes may talk about jobs
        self.membership.messages_received += 1
        body = msg.body
        if type_ == bus.REPLJOB:
            replication.on_repljob(self, sender, body, msg.mflags)
        elif type_ == bus.GOTJOB:
            replication.on_gotjob(self, sender, body)
        elif type_ in (bus.QUEUED, bus.WORKING):
            requeue.on_queued_or_working(self, sender, body, type_, msg.mflags)
        elif type_ == bus.WILLQUEUE:
            requeue.on_willqueue(self, sender, body)
        elif type_ == bus.ENQUEUE:
            requeue.on_enqueue(self, sender, body)
        elif type_ == bus.SETACK:
            acks.on_setack(self, sender, body)
        elif type_ == bus.GOTACK:
            acks.on_gotack(self, sender, body)
        elif type_ == bus.DELJOB:
            acks.on_deljob(self, sender, body)
        elif type_ == bus.FAIL:
            self.membership.on_fail(msg)
        elif type_ == bus.NEEDJOBS:
            count, queue_name = body
            self.federation.on_needjobs(sender, queue_name, count)
        elif type_ == bus.YOURJOBS:
            self.federation.on_yourjobs(sender, body)
        elif type_ == bus.PAUSE:
            flags, queue_name = body
            self._on_pause(queue_name, flags)

    def _on_pause(self, queue_name: bytes, flags: int) -> None:
        node = self.node
        queue = node.queues.get(queue_name)
        if queue is None:
            if not flags:
                return
            queue = node.get_queue(queue_name)
        set_paused(node, queue, flags & 3)
