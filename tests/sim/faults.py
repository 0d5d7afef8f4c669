"""Fault injection: what the network and the machines do to a run.

Each profile schedules its faults during the workload phase; ``heal``
undoes them all (network back to normal, every node restarted) before the
checker's quiescence phase.
"""

PROFILES = ("none", "loss", "delay", "reorder", "duplicate", "partition",
            "oneway", "minority", "flapping", "crash", "crash-noaof",
            "clockjump", "slow", "burst", "mixed")


class Faults:
    def __init__(self, world, profile):
        if profile not in PROFILES:
            raise ValueError(f"unknown fault profile {profile!r}; try one of {PROFILES}")
        self.world = world
        self.rng = world.rng
        self.profile = profile
        self.active = False

    @property
    def workload_options(self):
        """How the workload should behave under this profile."""
        return {
            "faults": self.profile != "none",
            "slow_consumers": self.profile in ("slow", "mixed"),
            "burst": self.profile in ("burst", "mixed"),
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
        if p in ("partition", "oneway", "minority", "flapping", "crash",
                 "crash-noaof", "clockjump", "mixed"):
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
        self._schedule_next()

    def _unblock(self, pairs):
        self.world.network.blocked -= pairs

    def _restart(self, sim_node):
        if not sim_node.alive:
            sim_node.start()

    def heal(self):
        self.active = False
        net = self.world.network
        net.loss = net.duplicate = 0.0
        net.delay_ms = (1, 3)
        net.jitter_ms = 0
        net.blocked.clear()
        for sim_node in self.world.nodes:
            if not sim_node.alive:
                sim_node.start()
