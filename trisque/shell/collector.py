"""The cyclic garbage collector, set for a broker's allocation pattern.

Every request allocates a few short-lived containers (its argument list,
tuples) and some requests a long-lived job.  Python's default first
generation ran a young collection every hundred or so ADDJOBs, walking
each new job and the containers still alive (bench/README.md, "The
collector"); with a larger one most short-lived objects are freed by
their reference count before any collection sees them.

The old generation is never collected on its own: a full pass walks every
job the node holds (about a second per million jobs: a stall every client
waits through, bench/README.md "Tails") and finds nothing, because the
node makes no reference cycles that outlive a young collection
(tests/server/test_collector.py keeps it so; DEBUG GC runs a full pass on
demand and says what it found).  Young collections still free the cycles
that die young.

``watch`` times every collection into the node's stats (INFO stats:
gc_pauses, gc_pause_ms_total, gc_pause_ms_max) and its latency monitor
("gc").
"""

import gc
import time
from typing import Any

YOUNG_OBJECTS = 20_000  # first-generation threshold (Python's default: 700)
OLD_NEVER = 2**31 - 1  # old-generation threshold: no automatic full pass


def tune() -> None:
    _young, middle, _old = gc.get_threshold()
    gc.set_threshold(YOUNG_OBJECTS, middle, OLD_NEVER)


def watch(stats: Any, latency: Any) -> None:
    """Time each collection into ``stats`` (core/admin/stats.py) and
    ``latency`` (core/admin/latency_monitor.py)."""
    started = [0]

    def timed(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter_ns()
            return
        took_ms = (time.perf_counter_ns() - started[0]) / 1e6
        stats.gc_pauses += 1
        stats.gc_pause_ms_total += took_ms
        if took_ms > stats.gc_pause_ms_max:
            stats.gc_pause_ms_max = took_ms
        latency.record("gc", int(took_ms))
    gc.callbacks.append(timed)
