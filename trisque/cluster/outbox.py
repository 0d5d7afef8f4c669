"""What this node sends its peers in one turn of the event loop.

Job messages to one peer are coalesced: consecutive messages of the same
type and flags travel in one frame, encoded when the turn ends (or early,
in a long turn).  The frames go to a *transport*: the real one is
cluster/tcp/transport.py, the simulator's is in memory.

A message sent ``lazy`` (the ack's garbage collection: SETACK, GOTACK,
the DELJOB once every holder confirmed; and WORKING, requeue.py) waits
for the next message to the same peer that is not, and goes before it,
in order; or for the next cron tick (``flush_held``).  No client waits on
those, and each sent alone cost the peer a wake-up and us a send
(bench/README.md, "Fewer wake-ups a job").
"""

from collections.abc import Sequence
from typing import Any, Callable, Final

from mypy_extensions import mypyc_attr

from ..protocol import bus, jobcodec
from ..core.jobs.job import Job
from ..core.node import Node
from .membership import ClusterNode, Membership

EARLY_FLUSH_ITEMS: Final = 128  # messages in the outbox: send them before the turn ends
# A frame carries job records up to about this many bytes (a bigger job
# alone), so the largest frame is one max-job-size job plus this and the
# headers: what a peer's cluster-bus-max-frame must take (64mb by default).
JOBS_FRAME_BYTES: Final = 1024 * 1024
JOBIDS_FRAME_ITEMS: Final = 16384  # job IDs per frame (44 bytes each: ~700 KB)


# Every transport extends it: the compiled code calls a compiled one's
# methods natively (an interpreted one's, the simulator's and tests', go
# through Python's method look-up: mypyc's glue for interpreted subclasses).
@mypyc_attr(allow_interpreted_subclasses=True)
class Transport:
    """What a transport provides, doing nothing: links to nobody (a node
    alone, or a test or benchmark that carries frames its own way)."""

    def send(self, node_id: str, frame: bytes) -> None:
        """Queue ``frame`` for the node ``node_id``."""

    def flush_soon(self) -> None:
        """Frames are queued in the outbox: have it flushed at the end of
        this turn.  (A transport may also offer ``push()``: write what is
        queued now, in the middle of a long turn.)"""

    def ensure_link(self, node: ClusterNode) -> None:
        """Connect to ``node`` unless already linked."""

    def drop_link(self, node_id: str) -> None:
        """Close the link to ``node_id``, if any."""

    def rename_link(self, old_id: str, new_id: str) -> None:
        """A handshake node got its real ID: its link follows."""

    def cron(self, now_ms: int) -> None:
        """Optional: the transport's own housekeeping, each cron tick."""


# acyclic: it holds job records and (id, aux) pairs, never itself: compiled,
# not tracked by the cyclic GC
@mypyc_attr(acyclic=True)
class Batch:
    """Messages to one peer of one type and mflags, in a row: one frame.
    (A class, not a list: compiled, its fields are read natively.)  Kept
    by its peer and used again once encoded (its list emptied)."""

    __slots__ = ("type", "mflags", "items", "frame")
    type: int
    mflags: int
    items: list[Any]  # job records, or (job id, aux) pairs and job IDs (aux 0)
    # While encode() runs: the one frame made of it (b"": split in several),
    # offered to the next peer's batch at the same place (Outbox.encode).
    frame: bytes

    def __init__(self, type_: int, mflags: int) -> None:
        self.type = type_
        self.mflags = mflags
        self.items = []
        self.frame = b""


@mypyc_attr(acyclic=True)
class PeerOut:
    """One peer's batches, kept from turn to turn: a turn's messages fill
    its first ``used`` batches, and no batch, list or dict entry is made
    and freed per frame (bench/README.md, "Bus frames a job, twenty-sixth session")."""

    __slots__ = ("node_id", "batches", "used", "due", "node", "version")
    node_id: str
    batches: list[Batch]
    used: int  # the batches with messages, in order
    due: bool  # one of them is not lazy (a flag: no set of IDs hashed a message)
    # The peer's ClusterNode as found in the node table at its ``version``
    # (Membership.version): not looked up again each encode while it stays.
    node: ClusterNode | None
    version: int

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self.batches = []
        self.used = 0
        self.due = False
        self.node = None
        self.version = -1


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


def _emptied(out: PeerOut, used: int) -> None:
    """``out``'s first ``used`` batches were encoded: emptied to be used
    again (see PeerOut), their frames let go."""
    batches = out.batches
    for i in range(used):
        batch = batches[i]
        batch.items.clear()
        batch.frame = b""


class Outbox:
    """The messages of this turn, by peer, in order."""

    node: Node
    transport: Transport
    membership: Membership
    peers: dict[str, PeerOut]
    pending: list[PeerOut]
    _due_count: int
    _queued: int
    _push: Callable[[], None] | None
    _epoch: int
    _all_epoch: int
    _all_ids: list[str]
    _all_type: int
    _all_mflags: int
    _all_lists: list[list[Any]]
    _last: PeerOut | None
    _before: PeerOut | None

    def __init__(self, node: Node, transport: Transport, membership: Membership) -> None:
        self.node = node  # (its id: nothing goes to myself)
        self.transport = transport
        self.membership = membership
        self.peers = {}  # node id -> its PeerOut (kept: see PeerOut)
        self.pending = []  # the peers with messages, in the order of their first
        self._due_count = 0  # peers with a message that is not lazy (PeerOut.due)
        self._queued = 0  # messages in the outbox
        # The transport's "write what is queued now", if it has one.
        self._push = getattr(transport, "push", None)
        # Counts the batches started and the encodes: send_to_all's last
        # lists are still the last batches of their peers while it stays.
        self._epoch = 0
        self._all_epoch = -1
        self._all_ids = []
        self._all_type = -1
        self._all_mflags = 0
        self._all_lists = []
        # The last two peers _batch found (a job's messages go to its
        # holders in turn): matched by their ID's identity before the dict.
        self._last = None
        self._before = None

    def send_jobid(self, node_id: str, type_: int, job_id: bytes, aux: int = 0,
                   mflags: int = 0, lazy: bool = False) -> None:
        # (an ID alone for aux 0, as bus.jobids takes it: no pair made and freed)
        self._enqueue(node_id, type_, mflags, (job_id, aux) if aux else job_id, lazy)

    def send_jobids(self, node_id: str, type_: int,
                    items: Sequence[bytes | tuple[bytes, int]], mflags: int = 0) -> None:
        """send_jobid for each of ``items``: (job id, aux) pairs, or job IDs
        alone for aux 0 (bus.jobids takes both)."""
        if node_id == self.node.id or not items:
            return
        self._batch(node_id, type_, mflags).extend(items)
        self._count_queued(len(items))

    def send_job(self, node_id: str, type_: int, record: bytes, mflags: int = 0) -> None:
        self._enqueue(node_id, type_, mflags, record)

    def send_to_holders(self, job: Job, type_: int, aux: int = 0, mflags: int = 0,
                        lazy: bool = False) -> None:
        # (one item for every holder, never changed; an ID alone for aux 0)
        item: bytes | tuple[bytes, int] = (job.id, aux) if aux else job.id
        for node_id in job.nodes_delivered:
            self._enqueue(node_id, type_, mflags, item, lazy)  # (skips ours)

    def send_last_error(self, job: Job, text: bytes) -> None:
        """LASTERROR to the job's other holders that read policies: its own
        frame, sent now (before or after the DEADJOB it goes with: either
        way the copy ends up dead with it)."""
        membership = self.membership
        nodes = membership.nodes
        frame = bus.last_error(membership.header(), job.id, text)
        for node_id in job.nodes_delivered:
            peer = nodes.get(node_id)
            if peer is not None and peer.policies and not peer.myself:
                self.transport.send(node_id, frame)

    def send_setack(self, node_id: str, job: Job, lazy: bool = False) -> None:
        self._enqueue(node_id, bus.SETACK, 0, (job.id, len(job.nodes_delivered)), lazy)

    def send_setacks(self, job: Job, confirmed: set[str]) -> None:
        """A lazy SETACK to each of the job's holders not in ``confirmed``:
        one item for all (no pair made per holder, and encode() shares
        their frames)."""
        holders = job.nodes_delivered
        item = (job.id, len(holders))
        for node_id in holders:
            if node_id not in confirmed:
                self._enqueue(node_id, bus.SETACK, 0, item, True)  # (skips ours)

    def send_to_all(self, node_ids: list[str], type_: int, mflags: int, item: bytes) -> None:
        """The same message to several other nodes (a REPLJOB record to
        each new holder): _enqueue's work, one call for all.  The lists it
        appended to last time are used again while no batch was started or
        sent since (pipelined ADDJOBs replicate to the same nodes in a row)."""
        lists = self._all_lists
        if (self._all_epoch == self._epoch and type_ == self._all_type
                and mflags == self._all_mflags and node_ids == self._all_ids):
            for items in lists:
                items.append(item)
        else:
            lists = [self._batch(node_id, type_, mflags) for node_id in node_ids]
            for items in lists:
                items.append(item)
            self._all_lists = lists
            self._all_ids = node_ids
            self._all_type = type_
            self._all_mflags = mflags
            self._all_epoch = self._epoch
        self._count_queued(len(node_ids))

    def _enqueue(self, node_id: str, type_: int, mflags: int,
                 item: bytes | tuple[bytes, int], lazy: bool = False) -> None:
        if node_id == self.node.id:
            return
        self._batch(node_id, type_, mflags, lazy).append(item)
        self._count_queued(1)

    def _count_queued(self, n: int) -> None:
        """Past EARLY_FLUSH_ITEMS, a long turn (a pipelined batch of
        hundreds of ADDJOBs, a frame of hundreds of REPLJOBs) sends what it
        produced so far, so the peers work on it meanwhile."""
        self._queued += n
        if self._queued >= EARLY_FLUSH_ITEMS and self._push is not None:
            self.encode(True)
            self._push()

    def _batch(self, node_id: str, type_: int, mflags: int, lazy: bool = False) -> list[Any]:
        """Where a message for ``node_id`` goes: the last batch to it if of
        the same type (one frame carries a run of them), else a new one."""
        peer = self._last
        if peer is None or peer.node_id is not node_id:
            found = self._before
            if found is None or found.node_id is not node_id:
                found = self.peers.get(node_id)
                if found is None:
                    found = PeerOut(node_id)
                    self.peers[node_id] = found
            self._before = peer  # (the two swap: holders come in turn)
            self._last = peer = found
        if not lazy and not peer.due:
            if not self._due_count:  # the first since the last encode: ask for one
                self.transport.flush_soon()
            peer.due = True
            self._due_count += 1
        used = peer.used
        batches = peer.batches
        if used:
            last = batches[used - 1]
            if last.type == type_ and last.mflags == mflags:
                return last.items
        else:
            self.pending.append(peer)
        self._epoch += 1
        peer.used = used + 1
        if used < len(batches):
            batch = batches[used]
            batch.type = type_
            batch.mflags = mflags
            return batch.items
        batch = Batch(type_, mflags)
        batches.append(batch)
        return batch.items

    def flush_held(self) -> None:
        """(Each cron tick.)  Send the lazy messages still waiting."""
        if self.pending:
            self.encode(True)

    def encode(self, everything: bool = False) -> None:
        """Encode every batch into frames and hand them to the transport;
        a peer that has only lazy messages keeps them unless ``everything``."""
        self._queued = 0
        self._epoch += 1
        pending = self.pending
        if not pending:
            return
        self.pending = []
        held = not everything and self._due_count < len(pending)
        header = self.membership.header()
        transport = self.transport
        membership = self.membership
        version = membership.version
        # The last peer encoded: its batches are emptied only after the next
        # peer's, whose batch at the same place, when the same messages (a
        # job's messages go to each of its holders in the same order), is
        # sent the same frame rather than encoded again (every peer gets
        # the same header).
        prev: PeerOut | None = None
        prev_batches = pending[0].batches  # (read only past a first peer: no list made)
        prev_used = 0
        prev_old = False
        for out in pending:
            node_id = out.node_id
            if held and not out.due:
                self.pending.append(out)  # lazy messages alone: kept
                for i in range(out.used):
                    self._queued += len(out.batches[i].items)
                continue
            out.due = False
            if out.version == version:
                peer = out.node
            else:
                peer = out.node = membership.nodes.get(node_id)
                out.version = version
            if peer is None:  # forgotten: its batches are not kept for it
                del self.peers[node_id]
                self._last = self._before = None
            # A peer from before delivery policies (no F_POLICIES seen):
            # jobs without their policy, no policy messages (bus.py).
            old_peer = peer is None or not peer.policies
            batches = out.batches
            used = out.used
            out.used = 0
            shared = prev_used if prev_old == old_peer else 0
            for i in range(used):
                batch = batches[i]
                type_, mflags, items = batch.type, batch.mflags, batch.items
                if i < shared:
                    other = prev_batches[i]
                    frame = other.frame
                    other_items = other.items
                    count = len(items)
                    # (a lone message by identity: send_to_holders and
                    # send_setacks give every holder the one item)
                    if (len(frame) and other.type == type_ and other.mflags == mflags
                            and len(other_items) == count
                            and (items[0] is other_items[0] if count == 1
                                 else other_items == items)):
                        batch.frame = frame
                        transport.send(node_id, frame)
                        continue
                batch.frame = b""
                # (the types compared one by one: Final ints to the compiled
                # code, where a search of bus's tuples was a generic one)
                if old_peer and (type_ == bus.DEADJOB or type_ == bus.REVIVE
                                 or type_ == bus.QPOLICY):
                    pass
                elif type_ == bus.REPLJOB or type_ == bus.YOURJOBS:
                    records = items
                    if old_peer:
                        records = [jobcodec.without_policy(r) for r in items]
                    size = 0  # (a loop: sum(map(len, ...)) read three builtins a frame)
                    for record in records:
                        size += len(record)
                    if len(records) > 1 and size > JOBS_FRAME_BYTES:
                        for part in _split_records(records):
                            transport.send(node_id, bus.jobs(header, type_, part, mflags))
                    else:
                        frame = bus.jobs(header, type_, records, mflags, size)
                        batch.frame = frame
                        transport.send(node_id, frame)
                elif len(items) > JOBIDS_FRAME_ITEMS:
                    for start in range(0, len(items), JOBIDS_FRAME_ITEMS):
                        ids = items[start:start + JOBIDS_FRAME_ITEMS]
                        transport.send(node_id, bus.jobids(header, type_, ids, mflags))
                else:
                    frame = bus.jobids(header, type_, items, mflags)
                    batch.frame = frame
                    transport.send(node_id, frame)
            if prev is not None:
                _emptied(prev, prev_used)
            prev = out
            prev_batches = batches
            prev_used = used
            prev_old = old_peer
        if prev is not None:
            _emptied(prev, prev_used)
        self._due_count = 0
