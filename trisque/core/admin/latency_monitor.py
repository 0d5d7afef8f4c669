"""The latency monitor: what held the node up, by event (Redis's LATENCY).

With ``latency-monitor-threshold`` N > 0, anything that kept the node
from serving for N ms or more is recorded under its event's name: a
command's run ("command", or "fast-command" for the O(1) ones), the
cron's tick ("cron"), the active expiry inside it ("expire-cycle"), a
collection of the cyclic garbage collector ("gc"), the AOF's write
("aof-write") and its fsync under appendfsync always ("aof-fsync-always").
Each event keeps its last SAMPLES seconds that had one (the worst of a
second) and its worst since the start or LATENCY RESET; LATENCY LATEST,
HISTORY, GRAPH and DOCTOR read them.  Node-local and not persisted, as
in Redis: a restart starts with none.
"""

import time
from typing import Callable, Final

SAMPLES: Final = 160  # seconds with a sample kept per event (Redis's LATENCY_TS_LEN)
GRAPH_COLUMNS: Final = 80


class EventSeries:
    """One event's samples, oldest first: (unix time s, ms)."""

    __slots__ = ("samples", "max_ms")

    def __init__(self) -> None:
        self.samples: list[tuple[int, int]] = []
        self.max_ms = 0


class LatencyMonitor:
    threshold_ms: int  # 0: nothing is recorded
    events: dict[str, EventSeries]
    clock: Callable[[], float]  # unix time in s (the node's wall clock)

    def __init__(self, threshold_ms: int, clock: Callable[[], float] = time.time) -> None:
        self.threshold_ms = threshold_ms
        self.events = {}
        self.clock = clock

    def record(self, event: str, ms: int) -> None:
        """Keep ``ms`` if it reaches the threshold (callers check first
        where the check is on a hot path)."""
        if not self.threshold_ms or ms < self.threshold_ms:
            return
        series = self.events.get(event)
        if series is None:
            series = self.events[event] = EventSeries()
        if ms > series.max_ms:
            series.max_ms = ms
        now_s = int(self.clock())
        samples = series.samples
        if samples and samples[-1][0] == now_s:  # one sample a second: its worst
            if ms > samples[-1][1]:
                samples[-1] = (now_s, ms)
            return
        samples.append((now_s, ms))
        if len(samples) > SAMPLES:
            del samples[0]

    def timed(self, event: str, started_s: float, now_s: float) -> None:
        """Record what ran from ``started_s`` to ``now_s`` (perf_counter's s)."""
        self.record(event, int((now_s - started_s) * 1000))

    def reset(self, names: list[str] | None = None) -> int:
        """Forget the named events (all without names): how many there were."""
        if names is None:
            count = len(self.events)
            self.events.clear()
            return count
        count = 0
        for name in names:
            if self.events.pop(name, None) is not None:
                count += 1
        return count

    def latest(self) -> list[list[object]]:
        """[[event, unix time, latest ms, worst ms], ...] (LATENCY LATEST)."""
        return [[name, s.samples[-1][0], s.samples[-1][1], s.max_ms]
                for name, s in self.events.items() if s.samples]

    def history(self, name: str) -> list[list[int]]:
        series = self.events.get(name)
        return [] if series is None else [[t, ms] for t, ms in series.samples]

    def graph(self, name: str) -> str | None:
        """LATENCY GRAPH's text: a column per sample, the newest right, its
        height the sample's share of the highest; None for an unknown event."""
        series = self.events.get(name)
        if series is None or not series.samples:
            return None
        samples = series.samples[-GRAPH_COLUMNS:]
        values = [ms for _t, ms in samples]
        high, low = max(values), min(values)
        rows = 4
        now_s = int(self.clock())
        lines = [f"{name} - high {high} ms, low {low} ms (all time high {series.max_ms} ms)",
                 "-" * GRAPH_COLUMNS]
        for row in range(rows, 0, -1):
            floor = high * (row - 1) / rows
            lines.append("".join("#" if ms > floor else " " for ms in values).rstrip())
        ages = [_age(now_s - t) for t, _ms in samples]
        width = max(len(a) for a in ages)
        for i in range(width):  # each sample's age, written downwards
            lines.append("".join(a[i] if i < len(a) else " " for a in ages).rstrip())
        return "\n".join(lines) + "\n"

    def doctor(self) -> str:
        """LATENCY DOCTOR: each event's spikes, and what usually causes them."""
        if not self.events:
            if not self.threshold_ms:
                return ("The latency monitor is off: CONFIG SET latency-monitor-threshold "
                        "<milliseconds> turns it on.\n")
            return (f"No event took {self.threshold_ms} ms or more since the monitor "
                    "was started or reset.\n")
        lines = [f"Events of {self.threshold_ms} ms or more (latency-monitor-threshold):"
                 if self.threshold_ms else "Events recorded while the monitor was on (it is "
                 "off now: latency-monitor-threshold 0):", ""]
        for number, (name, series) in enumerate(self.events.items(), 1):
            values = [ms for _t, ms in series.samples]
            average = sum(values) // len(values) if values else 0
            lines.append(f"{number}. {name}: {len(values)} seconds with a spike, average "
                         f"{average} ms, worst since the start or reset {series.max_ms} ms.")
            advice = _ADVICE.get(name)
            if advice:
                lines.append("   " + advice)
        return "\n".join(lines) + "\n"


_ADVICE: Final = {
    "command": "Slow commands: SLOWLOG GET names them (O(N) commands on large "
               "values, scripts, DEBUG SLEEP).",
    "fast-command": "An O(1) command took this long: the machine was busy or swapping.",
    "cron": "The 100 ms housekeeping tick: many clients, queues or keys to look at, "
            "or a busy machine.",
    "expire-cycle": "Many keys expiring at once, or a large value freed when its key "
                    "expired (lazyfree-lazy-expire yes frees it in steps).",
    "gc": "A cyclic garbage collection (INFO stats: gc_pauses).",
    "aof-write": "Writing the append-only file: a slow disk.",
    "aof-fsync-always": "appendfsync always waits for the disk on every write; "
                        "everysec trades a second of writes for it.",
}


def _age(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"
