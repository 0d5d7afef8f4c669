"""Fault injection: what the network and the machines do to a run.

Each profile schedules its faults during the workload phase; ``heal``
undoes them all (network back to normal, every node restarted) before the
checker's quiescence phase.

restart-empty (issue 13): on a loaded machine (load.py: nodes stall, the
bus is slow), one node at a time is killed and restarted empty under its
old ID (nodes.conf kept, no AOF), after 0.5-8 s (often past the node
timeout), slowly (its process stalls before its loop runs); half of the
kills strike a node as it sends or receives a YOURJOBS (federation).
Polling consumers (polling.py) take the jobs.  The load and the slow bus
last through the drain: ``unload`` ends them before the cluster settles.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trisque.protocol import bus

from .load import Load

if TYPE_CHECKING:
    from .world import SimNode

PROFILES = ("none", "loss", "delay", "reorder", "duplicate", "partition",
            "oneway", "minority", "flapping", "crash", "crash-noaof",
            "clockjump", "slow", "burst", "mixed", "restart-empty")
EMPTY_DOWN_MS = (500, 8000)  # how long a node restarted empty stays down


class Faults:
    def __init__(self, world, profile):
        if profile not in PROFILES:
            raise ValueError(f"unknown fault profile {profile!r}; try one of {PROFILES}")
        self.world = world
        self.rng = world.rng
        self.profile = profile
        self.active = False
        self.load = Load(world) if profile == "restart-empty" else None
        self.armed = False  # the next jobs frame on the bus kills a node

    @property
    def workload_options(self):
        """How the workload should behave under this profile."""
        return {
            "faults": self.profile != "none",
            "slow_consumers": self.profile in ("slow", "mixed"),
            "burst": self.profile in ("burst", "mixed"),
            "polling": self.profile == "restart-empty",
        }

    def start(self, until_ms):
        self.active = True
        self.until_ms = until_ms
        net = self.world.network
        p = self.profile
        if p in ("loss", "mixed"):
            net.loss = 0.02
        if p in ("delay", "mixed"):
            net.delay_ms = (5, 60)
        if p in ("reorder", "mixed"):
            net.jitter_ms = 40
        if p in ("duplicate", "mixed"):
            net.duplicate = 0.05
        if self.load is not None:
            self.load.start()
            net.on_jobs_sent = self._jobs_sent
        if p in ("partition", "oneway", "minority", "flapping", "crash",
                 "crash-noaof", "clockjump", "mixed", "restart-empty"):
            self._schedule_next()

    def _schedule_next(self):
        world = self.world
        at = world.now_ms + self.rng.randint(1000, 4000)
        if at < self.until_ms:
            world.at(at, self._strike)

    def _strike(self):
        if not self.active:
            return
        world = self.world
        rng = self.rng
        nodes = world.nodes
        p = self.profile
        if p == "mixed":
            p = rng.choice(("partition", "oneway", "minority", "crash", "clockjump"))
        net = world.network
        if p == "partition":  # two random nodes cannot talk, both ways
            a, b = rng.sample(range(len(nodes)), 2)
            net.blocked |= {(a, b), (b, a)}
            world.at(world.now_ms + rng.randint(500, 5000), self._unblock, {(a, b), (b, a)})
        elif p == "oneway":
            a, b = rng.sample(range(len(nodes)), 2)
            net.blocked.add((a, b))
            world.at(world.now_ms + rng.randint(500, 5000), self._unblock, {(a, b)})
        elif p in ("minority", "flapping"):
            minority = set(rng.sample(range(len(nodes)), max(1, (len(nodes) - 1) // 2)))
            cut = {(a, b) for a in range(len(nodes)) for b in range(len(nodes))
                   if (a in minority) != (b in minority)}
            net.blocked |= cut
            length = rng.randint(200, 800) if p == "flapping" else rng.randint(2000, 6000)
            world.at(world.now_ms + length, self._unblock, cut)
        elif p in ("crash", "crash-noaof"):
            victims = [n for n in nodes if n.alive]
            if len(victims) > 1:
                victim = rng.choice(victims)
                keep = p == "crash" or rng.random() < 0.5
                victim.crash(keep_aof=keep)
                world.at(world.now_ms + rng.randint(500, 6000), self._restart, victim)
        elif p == "clockjump":
            victim = rng.choice(nodes)
            victim.clock_offset_ms += rng.choice((-1, 1)) * rng.randint(500, 20000)
        elif p == "restart-empty" and all(n.alive for n in nodes):
            if not self.armed and rng.random() < 0.5:
                self.armed = True  # see _jobs_sent
            else:  # (armed, no YOURJOBS came since the last strike: now then)
                self.armed = False
                self._restart_empty(rng.choice(nodes))
        self._schedule_next()

    def _jobs_sent(self, src: SimNode, dst: SimNode, frame: bytes) -> None:
        """Armed, the next YOURJOBS kills its sender or its receiver before
        the jobs arrive: a restart during federation."""
        if (not self.armed or not self.active
                or bus.HEADER.unpack_from(frame)[3] != bus.YOURJOBS):
            return
        self.armed = False
        victim = src if self.rng.random() < 0.5 else dst
        world = self.world
        # At the end of this turn: the sender is in the middle of a flush.
        world.at(world.now_ms, self._restart_empty, victim)

    def _restart_empty(self, victim: SimNode) -> None:
        """kill -9 without an AOF; back later under the same ID (its
        nodes.conf), with no jobs, and slow to start."""
        if not victim.alive or not self.active:
            return
        victim.crash(keep_aof=False)
        down_ms = self.rng.randint(*EMPTY_DOWN_MS)
        self.world.at(self.world.now_ms + down_ms, self._restart, victim)

    def _unblock(self, pairs):
        self.world.network.blocked -= pairs

    def _restart(self, sim_node):
        if not sim_node.alive:
            sim_node.start()
            if self.load is not None:
                self.load.slow_start(sim_node)

    def heal(self):
        self.active = False
        net = self.world.network
        net.loss = net.duplicate = 0.0
        net.delay_ms = (1, 3)
        net.jitter_ms = 0
        net.blocked.clear()
        self.armed = False
        for sim_node in self.world.nodes:
            if not sim_node.alive:
                self._restart(sim_node)
        if self.load is not None:
            net.delay_ms = self.load.bus_delay_ms  # the machine is still loaded

    def unload(self) -> None:
        """The machine is quiet again (before the cluster settles)."""
        if self.load is not None:
            self.load.stop()
