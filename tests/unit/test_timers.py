"""The node's deadlines and periodic work run by the client loop
(shell/timers.py), on a node core with a fake wall clock: what is due
runs, and ``due_s`` (when the loop must look again, on perf_counter's
clock) follows the earliest of the cron, the periodic checks and the
node's deadlines, including one set after the last run."""

from time import perf_counter

from tests.unit.conftest import Core
from trisque.core.admin.config import Config

from trisque.core.jobs.lifecycle import NO_WAKE_MS
from trisque.shell.timers import MIN_DELAY_S, Timers


def started(core):
    wakes = []
    timers = Timers(core.node, lambda: wakes.append(1))
    timers.start()
    return timers, wakes


def test_nothing_is_due_before_start(core):
    timers = Timers(core.node, lambda: None)
    assert timers.due_s == float("inf")
    core("GETJOB", "TIMEOUT", 20, "FROM", "q")  # a deadline: the node tells nobody
    assert timers.due_s == float("inf")


def test_start_is_due_at_once_and_a_run_looks_again_by_the_next_cron_tick(core):
    timers, wakes = started(core)
    assert wakes and timers.due_s <= perf_counter()
    timers.run()
    period_s = 1 / core.node.config.hz
    left = timers.due_s - perf_counter()
    assert 0 < left <= 1.5 * period_s + 0.001  # (the first run is off the grid: tick_past)
    assert core.node.timer_wake_ms != NO_WAKE_MS


def test_an_earlier_deadline_brings_the_next_look_forward_and_wakes_the_loop():
    config = Config()
    config.hz = 1  # the cron a second apart: the timeout below comes first
    core = Core(config)
    timers, wakes = started(core)
    timers.run()
    if timers.due_s - perf_counter() < 0.5:  # (the cron's tick is near: pass it)
        while perf_counter() < timers.due_s:
            pass
        timers.run()
    wakes.clear()
    core("GETJOB", "TIMEOUT", 20, "FROM", "q")  # blocked: its timeout is a deadline
    left = timers.due_s - perf_counter()
    assert 0.005 < left <= 0.021, left
    assert wakes == [1]
    core("GETJOB", "TIMEOUT", 50, "FROM", "q", client=core.client())  # later: no wake
    assert wakes == [1]


def test_a_due_deadline_runs(core):
    timers, _ = started(core)
    timers.run()
    client = core.client()
    core.node.execute(client, [b"GETJOB", b"TIMEOUT", b"20", b"FROM", b"q"])
    assert not client.out  # blocked
    core.now += 0.03
    timers.run()
    assert core.replies(client) == [None]  # the timeout's null reply
    # nothing left but the cron: the next look is its tick, not at once
    assert timers.due_s - perf_counter() >= MIN_DELAY_S / 2


def test_periodic_work_runs_on_its_ticks(core):
    timers, _ = started(core)
    runs = []
    timers.every(0.05, lambda: runs.append(perf_counter()))
    tick_s = timers.periodic[0].next_s
    assert abs(timers.tick_after(tick_s - 0.01, 0.05) - tick_s) < 1e-9  # on the grid
    timers.run()
    if perf_counter() < tick_s:  # (then the run above came before the tick)
        assert runs == []
        assert timers.due_s <= max(tick_s, perf_counter() + MIN_DELAY_S)
    while perf_counter() < tick_s:
        pass
    timers.run()
    timers.run()
    assert len(runs) == 1 and runs[0] >= tick_s
    assert abs(timers.periodic[0].next_s - timers.tick_after(runs[0], 0.05)) < 1e-9


def test_work_that_ran_at_its_tick_waits_for_the_next_one(core):
    timers, _ = started(core)
    tick_s = timers.tick_after(1000.0, 0.1)
    # run a hair before its tick (the grid's rounding): the next is a period on
    assert abs(timers.tick_past(tick_s, tick_s - 1e-12, 0.1) - (tick_s + 0.1)) < 1e-9
    assert abs(timers.tick_past(tick_s, tick_s + 0.03, 0.1) - (tick_s + 0.1)) < 1e-9
    # late by more than a period: the first tick after now
    assert abs(timers.tick_past(tick_s, tick_s + 0.25, 0.1) - (tick_s + 0.3)) < 1e-9


def test_each_node_has_its_own_tick_phase(core):
    phases = {Timers(core.node, lambda: None).phase_s for _ in range(5)}
    assert len(phases) == 5  # nodes on one machine do not share their cron's instants
