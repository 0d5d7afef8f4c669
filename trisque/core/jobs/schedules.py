"""The node's schedules and the rule that fires them (docs/schedules.md).

Every node keeps every schedule (replicated like QCONFIG: last writer wins)
and what it last heard of each one's firing: the tick, the node, the job.

The firing rule, run from the node's cron (every 100 ms, never awaiting):

    ON CRON, for each live schedule S whose due tick T (the latest at or
    before now, not before this node learnt S) is not known fired:
      my rank R = my place among myself and the reachable peers that know
      schedules, by node ID (0: the lowest ID);
      IF now >= T + R * grace (grace = min(schedule-grace-ms, gap / 8),
      gap = the time from T to the next tick):
        add the tick's job: ADDJOB S.queue S.body 0 ASYNC
        IDEMPOTENCY schedule:<name>:<T> and S's options (REPLICATE at
        most what is reachable: a tick with fewer copies beats none);
        mark T fired; tell every peer "S fired T" (bus SCHEDFIRED).
    ON SCHEDFIRED S T: if T is after the last tick fired, mark it.

So in a healthy cluster the lowest ID fires at T and the others hear it
long before their turn: one job a tick.  With nodes down, the lowest
reachable ID fires; a rank-1 node fires after one grace if it heard
nothing (the rank-0 node died at T, or has not got the schedule yet).  A
node that just started waits one and a half graces more than its rank
says, so that it hears its peers first and its wait is no other node's.
Two fires for one tick collapse into one job on any node that holds a
copy of the first (the idempotency key).

A deleted schedule stays as a tombstone until every node knows it: a node
drops it once every other known node has been seen holding it (or a newer
record) over a link that has stayed up since, and ``schedule-tombstone-ms``
has passed since the last of them was seen (docs/schedules.md,
"Tombstones").  Before that, any older ADD that turns up loses to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ...protocol import resp
from ...protocol.errors import CommandError
from .schedule import HOLDER_BYTES, Schedule, encode

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

FIRED_TICKS_KEPT: Final = 16  # per schedule: ticks fired, latest ones
RANK_STEPS: Final = 8  # a rank waits at most a gap / 8 more than the one before


class Schedules:
    """``node.schedules``: name -> Schedule, tombstones included."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.by_name: dict[bytes, Schedule] = {}
        self.memory = 0
        self.fired = 0  # ticks this node added a job for (INFO schedule_fires)
        self.fire_errors = 0  # tries whose ADDJOB failed here (a paused queue, ...)
        self.ticks_heard = 0  # ticks another node fired, heard over the bus
        self.tombstones_dropped = 0  # deleted schedules forgotten (every node knew)
        self.started_ms = node.now_ms()
        self._client: Client | None = None

    def live(self) -> list[Schedule]:
        return [s for s in self.by_name.values() if not s.deleted]

    def apply(self, entry: Schedule, log: bool = True) -> bool:
        """Adopt a schedule (SCHEDULE here, a peer's, the AOF's) if newer
        than ours; its firing history stays ours (a newer definition of the
        same name keeps counting ticks where the old one was)."""
        old = self.by_name.get(entry.name)
        if not entry.newer_than(old):
            return False
        if old is not None:
            entry.fired_tick_ms, entry.fired_by, entry.fired_job = (
                old.fired_tick_ms, old.fired_by, old.fired_job)
            entry.fired_ticks = old.fired_ticks
            # (a tombstone's: when it came, which its drop waits from)
            entry.since_ms = (old.since_ms if not old.deleted and not entry.deleted
                              else self.node.now_ms())
            self._account(-old.memory())
        else:
            entry.since_ms = self.node.now_ms()
        self.by_name[entry.name] = entry
        self._account(entry.memory())
        if log:
            self.node.log.append_command(b"SCHEDULE", entry.name, b"STORE",
                                         b"%d" % entry.version_ms, entry.origin.encode(),
                                         encode(entry))
        return True

    def mark_fired(self, name: bytes, tick_ms: int, by: str, job_id: bytes,
                   log: bool = True) -> bool:
        """Tick ``tick_ms`` of ``name`` was fired (here, by a peer, in the
        AOF); false if we knew that already."""
        entry = self.by_name.get(name)
        if entry is None:
            return False
        ticks = entry.fired_ticks
        if tick_ms in ticks or (len(ticks) >= FIRED_TICKS_KEPT and tick_ms < ticks[0]):
            return False
        ticks.append(tick_ms)
        ticks.sort()
        if len(ticks) > FIRED_TICKS_KEPT:
            del ticks[0]
        if tick_ms > entry.fired_tick_ms:
            entry.fired_tick_ms, entry.fired_by, entry.fired_job = tick_ms, by, job_id
        if log:
            self.node.log.append_command(b"SCHEDULE", name, b"FIRED", b"%d" % tick_ms,
                                         by.encode(), job_id)
        return True

    # -------------------------------------------------------- tombstones

    def seen_holding(self, name: bytes, node_id: str) -> None:
        """``node_id`` holds our tombstone of ``name`` or a newer record
        (it sent it over its current link)."""
        entry = self.by_name.get(name)
        if entry is not None and entry.deleted and node_id not in entry.held_by:
            entry.held_by[node_id] = self.node.now_ms()
            self._account(HOLDER_BYTES)

    def peer_link_down(self, node_id: str) -> None:
        """Its marks go: it may come back from an AOF that missed a
        tombstone (kill -9 before the fsync); its link-up brings them again."""
        for entry in self.by_name.values():
            if entry.held_by.pop(node_id, None) is not None:
                self._account(-HOLDER_BYTES)

    def not_held_by(self, node_id: str) -> list[bytes]:
        """Our tombstones ``node_id`` has not been seen holding."""
        return [name for name, entry in self.by_name.items()
                if entry.deleted and node_id not in entry.held_by]

    def tombstones(self) -> int:
        return sum(1 for entry in self.by_name.values() if entry.deleted)

    def drop_tombstones(self, now_ms: int, keep_ms: int, peers: list[str]) -> None:
        """Forget each tombstone every node in ``peers`` (every other known
        node) was seen holding, ``keep_ms`` after it came and after the
        last of them was seen: no node can send an older record of it any
        more, so it has nothing left to win against."""
        for name, entry in list(self.by_name.items()):
            if not entry.deleted:
                continue
            held_by = entry.held_by
            if any(peer not in held_by for peer in peers):
                continue
            last_ms = max([entry.since_ms, *(held_by[peer] for peer in peers)])
            if now_ms - last_ms < keep_ms:
                continue
            del self.by_name[name]
            self._account(-entry.memory())
            self.tombstones_dropped += 1
            self.node.log.append_command(b"SCHEDULE", name, b"DROP",
                                         b"%d" % entry.version_ms, entry.origin.encode())

    def replay_drop(self, name: bytes, version_ms: int, origin: str) -> None:
        """The AOF's DROP record: forget that very tombstone (a newer
        record of the name stays)."""
        entry = self.by_name.get(name)
        if (entry is not None and entry.deleted and entry.version_ms == version_ms
                and entry.origin == origin):
            del self.by_name[name]
            self._account(-entry.memory())

    def _account(self, delta: int) -> None:
        self.memory += delta
        self.node.memory_changed(delta)

    # ------------------------------------------------------------ firing

    def cron(self, now_ms: int, grace_ms: int, tombstone_ms: int) -> None:
        if not self.by_name:
            return
        if any(entry.deleted for entry in self.by_name.values()):
            self.drop_tombstones(now_ms, tombstone_ms, self.node.cluster.known_peers())
        half_steps = -1  # my wait after a tick, in half steps (grace above)
        for entry in self.by_name.values():
            if entry.deleted:
                continue
            tick = entry.due_tick(now_ms)
            if not tick or tick < entry.since_ms or tick in entry.fired_ticks:
                continue
            if half_steps < 0:
                # (rank R: 2R half steps.  A node that just started waits
                # three more, to hear its peers first and never share a
                # wait with another node, started or not: two nodes waiting
                # alike both fired when their crons ran within the bus's
                # latency of each other.)
                half_steps = 2 * self.node.cluster.schedule_rank()
                if now_ms - self.started_ms < grace_ms:
                    half_steps += 3
            wait_ms = half_steps * min(grace_ms, entry.gap_ms() // RANK_STEPS) // 2
            if now_ms >= tick + wait_ms:
                self.fire(entry, tick)

    def fire(self, entry: Schedule, tick_ms: int) -> None:
        node = self.node
        argv = [b"ADDJOB", entry.queue, entry.body, b"0"]
        options = entry.options
        wanted = min(3, node.cluster_size)
        i = 0
        while i < len(options):
            if options[i] == b"REPLICATE":
                wanted = int(options[i + 1])
                i += 2
                continue
            argv.append(options[i])
            i += 1
        # A tick with fewer copies beats no job: never more than reachable.
        replicate = max(1, min(wanted, node.cluster.reachable_count() + 1))
        argv += [b"REPLICATE", b"%d" % replicate, b"ASYNC",
                 b"IDEMPOTENCY", entry.idempotency_key(tick_ms)]
        client = self._client
        if client is None:
            from ..client import Client
            client = self._client = Client(0, "schedule", "", now_ms=tick_ms)
        command = node.table[b"ADDJOB"]
        try:
            reply = command.handler(node, client, argv)
        except CommandError:
            reply = b"-"
        if type(reply) is not bytes or not reply.startswith(b"+"):
            self.fire_errors += 1
            return  # (tried again next cron: the tick stays due)
        job_id = reply[1:-2]
        self.fired += 1
        self.mark_fired(entry.name, tick_ms, node.id, job_id)
        node.cluster.schedule_fired(entry.name, tick_ms, job_id)

    # ------------------------------------------------------------ reports

    def info_fields(self) -> list[tuple[str, int]]:
        return [("schedules", len(self.live())), ("schedule_tombstones", self.tombstones()),
                ("schedule_tombstones_dropped", self.tombstones_dropped),
                ("schedule_fires", self.fired),
                ("schedule_fire_errors", self.fire_errors),
                ("schedule_ticks_heard", self.ticks_heard)]

    def show(self, name: bytes, proto: int) -> bytes:
        entry = self.by_name.get(name)
        if entry is None or entry.deleted:
            return resp.null_array(proto)
        entry.due_tick(self.node.now_ms())
        return resp.encode(entry.fields(), proto)
