"""Periodic jobs in the simulator (``--schedules``, docs/schedules.md).

The workload adds one schedule that fires every second into q0 when the
work starts (``SCHEDULE ADD`` on a random node) and deletes it when the
drain starts; its jobs are consumed and acked like the others, and are
judged like ASYNC adds (liveness.py, leaks).  Its draws come from a
generator of its own, so other campaigns replay unchanged.

Rules, over the ticks from 1.5 s after the ADD was answered to 1.5 s
before the DEL was sent (world time: the nodes' clocks agree but in the
clockjump profile):

- *once a tick* (the "none" profile: no fault): every tick got exactly one
  job (one job ID for its key ``schedule:s1:<tick>``);
- *at least once a tick* (every profile): a tick got no job although some
  node held the schedule (learnt before the tick) and ran its cron, by its
  own clock, after every rank's turn for that tick was over and before the
  next tick (core/jobs/schedules.py: such a node fires the tick unless it
  heard that another did, so no job means a broken rule).  A node that
  started less than a grace ago waits one and a half steps more than its
  rank says: its turn is over that much later.  Nodes down,
  stalled or with a clock jumped past the tick do not count.
- *deleted stays deleted* (every profile): once the run has settled, no
  node holds the schedule (nor s2, deleted while the faults ran, unless
  the node that took its DEL lost its disk after), live, and none holds
  its deletion any more either (every node was up and linked for the whole drain, many times
  schedule-tombstone-ms: a tombstone kept means one was never
  acknowledged; one dropped too early means the schedule came back).
"""

import random

from trisque.core.jobs.schedules import RANK_STEPS

from .world import EPOCH_MS, SimClient

NAME = b"s1"
KEY_PREFIX = b"schedule:s1:"
GAP_MS = 1000  # "* * * * * *": every second
SCHEDULE_ADD = [b"SCHEDULE", b"ADD", NAME, b"* * * * * *", b"q0", b"tick",
                b"RETRY", b"3", b"TTL", b"60"]
TTL_MS = 60_000
RETRY_S = 3
MARGIN_MS = 1500
# A second schedule that never fires in a run (once a year), added with the
# first and deleted while the faults run: its deletion must outlive the
# nodes that were down or cut off then, and be forgotten after the heal.
RARE = b"s2"
RARE_ADD = [b"SCHEDULE", b"ADD", RARE, b"0 0 1 1 *", b"q0", b"rare"]
RARE_DEL_AFTER_MS = 5000


class ScheduleChecker:
    def __init__(self, world):
        self.world = world
        self.rng = random.Random(world.seed * 1000003 + 6)
        self.jobs_by_tick = {}  # tick ms -> job ids created for it
        # (node clock ms, since ms, just started) of crons run holding the schedule
        self.crons = []
        self.added_ms = None
        self.deleted_ms = None
        self.rare_del_node = None  # the node that took s2's DEL

    # -------------------------------------------------------- the workload

    def add(self, nodes):
        client = SimClient(self.world, self.rng.choice(nodes))

        def on_reply(reply):
            if reply == b"OK":
                self.added_ms = self.world.now_ms
        client.call(list(SCHEDULE_ADD), on_reply)
        client.call(list(RARE_ADD), lambda reply: None)
        self.world.at(self.world.now_ms + RARE_DEL_AFTER_MS, self._delete_rare)

    def _delete_rare(self):
        alive = [n for n in self.world.nodes if n.alive]
        if alive:
            node = self.rng.choice(alive)
            self.rare_del_node = (node.index, self.world.now_ms)
            SimClient(self.world, node).call([b"SCHEDULE", b"DEL", RARE], lambda reply: None)

    def delete(self, nodes):
        self.deleted_ms = self.world.now_ms
        SimClient(self.world, self.rng.choice(nodes)).call(
            [b"SCHEDULE", b"DEL", NAME], lambda reply: None)

    # -------------------------------------------------------- observations

    def job_created(self, job_id, key):
        tick = int(key[len(KEY_PREFIX):])
        ids = self.jobs_by_tick.setdefault(tick, set())
        if job_id not in ids:
            ids.add(job_id)
            # judged as an ASYNC add: liveness, leaks, acked then delivered
            self.world.checker.accepted(job_id, False, TTL_MS, RETRY_S)

    def node_cron(self, node):
        entry = node.schedules.by_name.get(NAME)
        if entry is not None and not entry.deleted:
            now_ms = node.now_ms()
            # (schedules.py's cron: such a node waits 3 half steps more)
            just_started = now_ms - node.schedules.started_ms < node.config.schedule_grace_ms
            self.crons.append((now_ms, entry.since_ms, just_started))

    # -------------------------------------------------------------- rules

    def judge(self, healthy, node_count):
        if self.added_ms is None or self.deleted_ms is None:
            return ["schedule: SCHEDULE ADD was not answered OK"] if self.deleted_ms else []
        violations = []
        names = [NAME]
        if self.rare_del_node is not None:
            index, at_ms = self.rare_del_node
            if self.world.checker.wiped_disk_ms.get(index, -1) < at_ms:
                names.append(RARE)
        for sim_node in self.world.nodes:
            for name in names:
                entry = sim_node.node.schedules.by_name.get(name) if sim_node.alive else None
                if entry is not None:
                    violations.append(
                        f"schedule: node {sim_node.index} still holds {name.decode()} "
                        f"{'deleted' if entry.deleted else 'LIVE'} after the drain "
                        f"(deleted stays deleted, then forgotten)")
        first = (EPOCH_MS + self.added_ms + MARGIN_MS) // GAP_MS * GAP_MS + GAP_MS
        last = EPOCH_MS + self.deleted_ms - MARGIN_MS
        # every rank's turn is over by then (schedules.py: rank * gap / 8)
        turns_over_ms = (node_count - 1) * (GAP_MS // RANK_STEPS)
        # ... and a node that just started waits one and a half steps more
        started_extra_ms = 3 * (GAP_MS // RANK_STEPS) // 2
        crons = sorted(self.crons)
        for tick in range(first, last + 1, GAP_MS):
            fired = len(self.jobs_by_tick.get(tick, ()))
            if healthy and fired != 1:
                violations.append(f"schedule: tick {tick} got {fired} jobs in a healthy "
                                  f"cluster (once a tick)")
            elif not fired and self._coverable(crons, tick, turns_over_ms,
                                               started_extra_ms):
                violations.append(f"schedule: tick {tick} got no job although a node "
                                  f"holding the schedule ran after every rank's turn")
        return violations

    @staticmethod
    def _coverable(crons, tick, turns_over_ms, started_extra_ms):
        return any(tick + turns_over_ms + (started_extra_ms if just_started else 0) < at
                   < tick + GAP_MS and since <= tick
                   for at, since, just_started in crons)

    def summary(self):
        ticks = len(self.jobs_by_tick)
        return {"schedule_ticks": ticks,
                "schedule_extra_jobs": sum(len(ids) for ids in self.jobs_by_tick.values())
                - ticks}
