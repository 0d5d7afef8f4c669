"""CPU load: nodes that do not run when they want to.

On a loaded machine (a 2-core box running the nodes, their clients and
busy loops) a node's event loop often waits for a core: its timers fire
late, frames wait in its sockets, a blocked GETJOB's 200 ms timeout is
answered late, replies miss the client's socket timeout.  Modelled as
stalls: from time to time a node stops for a while (``SimNode.busy_until``)
and every event meant for it waits until it runs again (world.py).

How loaded varies from seed to seed: stalls every ~100 ms to ~1 s, none to
a tenth of them long, a bus of 10 to 100 ms.

Load is a condition of the machine, not a fault: it lasts through the
drain (consumers must get every job while the machine is still slow) and
ends only before the cluster is left to settle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .world import SimNode, World

GAP_MEAN_MS = (100, 300, 1000)  # mean run time between two stalls of a node
SHORT_STALL_MS = (5, 250)  # a slow turn: a core was busy elsewhere
LONG_STALL = (0.0, 0.04, 0.1)  # share of stalls that are long
LONG_STALL_MS = (500, 2500)  # the loop starved: timers and replies very late
STARTUP_STALL_MS = (100, 1500)  # a restarted process before its loop runs
BUS_DELAY_MS = (10, 30, 100)  # the slowest one-way bus latency


class Load:
    def __init__(self, world: World) -> None:
        self.world = world
        rng = self.rng = world.rng
        self.gap_mean_ms = rng.choice(GAP_MEAN_MS)
        self.long_stall = rng.choice(LONG_STALL)
        self.bus_delay_ms = (1, rng.choice(BUS_DELAY_MS))
        self.active = False

    def start(self) -> None:
        self.active = True
        self.world.network.delay_ms = self.bus_delay_ms
        for sim_node in self.world.nodes:
            self._schedule(sim_node, self.world.now_ms)

    def stop(self) -> None:
        self.active = False
        self.world.network.delay_ms = (1, 3)

    def _schedule(self, sim_node: SimNode, after_ms: int) -> None:
        gap = int(self.rng.expovariate(1 / self.gap_mean_ms))
        self.world.at(after_ms + gap, self._stall, sim_node)

    def _stall(self, sim_node: SimNode) -> None:
        if not self.active:
            return
        rng = self.rng
        now = self.world.now_ms
        span = LONG_STALL_MS if rng.random() < self.long_stall else SHORT_STALL_MS
        until = now + rng.randint(*span)
        if sim_node.alive and until > sim_node.busy_until:
            sim_node.busy_until = until
        self._schedule(sim_node, max(now, sim_node.busy_until))

    def slow_start(self, sim_node: SimNode) -> None:
        """A node just restarted: the process loads before its loop runs."""
        start = self.world.now_ms + self.rng.randint(*STARTUP_STALL_MS)
        sim_node.busy_until = max(sim_node.busy_until, start)
