"""Periodic work wakes together.

A node has work that looks at something every 100 ms or so (the cron, the
heap's trim check, the AOF's cron...).  Run on the next multiple of its
period, rather than a period after it last ran, work of the same period
(or of multiples of one) falls on the same instants and shares a wake-up:
one turn of the client loop (shell/timers.py), or, for a task sleeping in
trio, one pass through trio's scheduler, which costs more than the work
itself (bench/README.md, "A turn's fixed costs").
"""

import math
import time
from typing import Final

import trio

# The clock of the client loop's turns and timers (shell/socket_set.py,
# shell/timers.py).  Final: compiled, a C static, where a name imported
# from time is a look-up in the importing module's dict at each call,
# read a few times a turn.
perf_counter: Final = time.perf_counter


def tick_after(now_s: float, period_s: float) -> float:
    """The first multiple of ``period_s`` after ``now_s``."""
    return (math.floor(now_s / period_s) + 1) * period_s


def next_tick_s(period_s: float) -> float:
    """The first multiple of ``period_s`` on trio's clock after now."""
    return tick_after(trio.current_time(), period_s)


async def sleep_to_tick(period_s: float) -> None:
    """Sleep until the next multiple of ``period_s`` on trio's clock."""
    await trio.sleep_until(next_tick_s(period_s))
