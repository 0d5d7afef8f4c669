"""The node's deadlines and periodic work, run in the client loop's turns.

A job's deadline (a requeue, an ADDJOB's replication timeout, a blocked
GETJOB's TIMEOUT), the node's cron, the AOF's and the heap's periodic
checks: none of them awaits (the core never does), so the client loop
(server/clients/connection.py) runs them itself in the turn that finds
them due, and its wait (shell/socket_set.py) sleeps no longer than the
earliest.  As trio tasks each was a pass through trio's scheduler for
the loop as well: ~20 a second at 1,000 jobs/s for the ADDJOB timeouts
alone, and every cron tick (bench/README.md, "A turn's fixed costs").

Times here are on perf_counter's clock (monotonic: a wall clock set back
holds no tick up); the deadlines are the node's, on its wall clock in ms,
and are converted when they are set.  Work of one period runs on the
period's multiples (shell/ticks.py; shifted by a phase of the node's own),
so work of periods that are multiples of one another shares a turn.
"""

import math
import random
from typing import TYPE_CHECKING, Callable, Final

from ..core.jobs.lifecycle import NO_WAKE_MS
from .ticks import perf_counter, tick_after

if TYPE_CHECKING:
    from ..core.node import Node

NEVER_S: Final = math.inf
# A run that left deadlines due (MAX_TIMERS_PER_RUN) looks again after
# this long at the soonest: the clients' turns come in between.
MIN_DELAY_S: Final = 0.001


class Periodic:
    """``run`` every ``period_s``, on the period's multiples."""

    __slots__ = ("period_s", "run", "next_s")

    def __init__(self, period_s: float, run: Callable[[], None], next_s: float) -> None:
        self.period_s = period_s
        self.run = run
        self.next_s = next_s


class Timers:
    """What the client loop runs when ``due_s`` has come: the node's due
    deadlines, then its cron and each periodic check whose tick came."""

    node: "Node"
    due_s: float  # perf_counter's time of the next run (NEVER_S: stopped)
    wake: Callable[[], None]  # ends the loop's wait (a trio-driven one)
    periodic: list[Periodic]
    cron_s: float  # the node's next cron
    phase_s: float  # this process's offset of the ticks' grid

    def __init__(self, node: "Node", wake: Callable[[], None]) -> None:
        self.node = node
        self.due_s = NEVER_S
        self.wake = wake
        self.periodic = []
        self.cron_s = NEVER_S
        # perf_counter's clock is the machine's: without an offset of
        # their own, nodes sharing a machine would run their crons at the
        # same instants, and what ranks them in time (which node fires a
        # schedule's tick first, core/jobs/schedules.py) would tie.
        self.phase_s = random.random()

    def tick_after(self, now_s: float, period_s: float) -> float:
        """This node's first tick of ``period_s`` after ``now_s``."""
        return tick_after(now_s + self.phase_s, period_s) - self.phase_s

    def tick_past(self, ran_s: float, now_s: float, period_s: float) -> float:
        """The tick after ``now_s`` for work that ran at its tick ``ran_s``:
        past that one too (the grid's rounding may put ``now_s`` a hair
        before it, and it would run twice)."""
        half_s = ran_s + period_s / 2
        return self.tick_after(now_s if now_s > half_s else half_s, period_s)

    def every(self, period_s: float, run: Callable[[], None]) -> None:
        """Also run ``run`` every ``period_s`` once started."""
        self.periodic.append(Periodic(period_s, run,
                                      self.tick_after(perf_counter(), period_s)))

    def start(self) -> None:
        """Run from now on (once the node is loaded): the node tells us of
        an earlier deadline as it sets one (``on_timers_changed``)."""
        self.node.on_timers_changed = self._changed
        self.cron_s = self.due_s = perf_counter()
        self.wake()

    def _changed(self) -> None:
        """A deadline earlier than ``node.timer_wake_ms`` was set (the node
        wrote it there first)."""
        node = self.node
        wake_ms = node.timer_wake_ms
        if wake_ms == NO_WAKE_MS:
            return
        due_s = perf_counter() + wake_ms / 1000 - node.clock()
        if due_s < self.due_s:
            self.due_s = due_s
            self.wake()

    def run(self) -> None:
        """Run what is due; set when to look again."""
        node = self.node
        next_job_ms = node.run_timers()
        now_s = perf_counter()
        ran = False
        if now_s >= self.cron_s:
            node.cron()
            if node.latency.threshold_ms:  # (LATENCY's "cron": the tick's own time)
                node.latency.timed("cron", now_s, perf_counter())
            self.cron_s = self.tick_past(self.cron_s, now_s, 1 / node.config.hz)
            ran = True
        due_s = self.cron_s
        for work in self.periodic:
            if now_s >= work.next_s:
                work.run()
                work.next_s = self.tick_past(work.next_s, now_s, work.period_s)
                ran = True
            if work.next_s < due_s:
                due_s = work.next_s
        if ran:  # (their work took time; most runs are a deadline's alone)
            now_s = perf_counter()
        wall_s = node.clock()  # (the deadlines' clock: exact, not now_ms's floor)
        if next_job_ms is not None:
            job_s = now_s + next_job_ms / 1000 - wall_s
            if job_s < due_s:
                due_s = job_s
        if due_s < now_s + MIN_DELAY_S:
            due_s = now_s + MIN_DELAY_S
        self.due_s = due_s
        # (the node calls _changed only for a deadline before this one)
        node.timer_wake_ms = int((wall_s + due_s - now_s) * 1000)
