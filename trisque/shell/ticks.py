"""Periodic tasks wake together.

A node has several tasks that look at something every 100 ms or so (the
cron, the heap's trim check, the AOF's cron...).  Each wake-up of a task is
a pass through trio's scheduler for the client loop too (shell/socket_set.py:
it sleeps outside trio only while every other task is blocked), and such a
pass costs more than the work these tasks do.  Sleeping until the next
multiple of their period on trio's clock, rather than a period after they
last ran, puts tasks of the same period (or of multiples of one) on the same
instants, so trio wakes them in one pass (bench/README.md, "A turn's fixed
costs").
"""

import math

import trio


def next_tick_s(period_s: float) -> float:
    """The first multiple of ``period_s`` on trio's clock after now."""
    now = trio.current_time()
    return (math.floor(now / period_s) + 1) * period_s


async def sleep_to_tick(period_s: float) -> None:
    """Sleep until the next multiple of ``period_s`` on trio's clock."""
    await trio.sleep_until(next_tick_s(period_s))
