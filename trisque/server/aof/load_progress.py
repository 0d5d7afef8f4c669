"""How far the AOF load has come: bytes, jobs, rate and ETA.

The loader (aof_load.py) updates it every few thousand records; the log
line, INFO persistence (Redis's ``loading_*`` fields plus jobs) and the
HTTP port's /metrics and dashboard read it.
"""

import time
from typing import Optional


class LoadProgress:
    __slots__ = ("total_bytes", "loaded_bytes", "jobs", "started", "started_unix")

    def __init__(self) -> None:
        self.total_bytes = 0
        self.loaded_bytes = 0
        self.jobs = 0
        self.started = time.monotonic()
        self.started_unix = int(time.time())

    def update(self, loaded_bytes: int, jobs: int) -> None:
        self.loaded_bytes = loaded_bytes
        self.jobs = jobs

    def percent(self) -> float:
        return self.loaded_bytes * 100 / self.total_bytes if self.total_bytes else 0.0

    def jobs_per_s(self, now: Optional[float] = None) -> float:
        elapsed = (time.monotonic() if now is None else now) - self.started
        return self.jobs / elapsed if elapsed > 0 else 0.0

    def eta_s(self, now: Optional[float] = None) -> float:
        """Seconds left at the byte rate so far (0 until a rate is known)."""
        elapsed = (time.monotonic() if now is None else now) - self.started
        if elapsed <= 0 or not self.loaded_bytes:
            return 0.0
        return (self.total_bytes - self.loaded_bytes) * elapsed / self.loaded_bytes

    def info_fields(self) -> dict[str, object]:
        """Redis's INFO persistence loading fields, and the jobs so far."""
        now = time.monotonic()
        return {
            "loading_start_time": self.started_unix,
            "loading_total_bytes": self.total_bytes,
            "loading_loaded_bytes": self.loaded_bytes,
            "loading_loaded_perc": f"{self.percent():.2f}",
            "loading_eta_seconds": int(self.eta_s(now)),
            "loading_loaded_jobs": self.jobs,
            "loading_jobs_per_sec": int(self.jobs_per_s(now)),
        }

    def log_line(self) -> str:
        now = time.monotonic()
        return (f"Loading the AOF: {self.percent():.1f}% ({self.loaded_bytes} of "
                f"{self.total_bytes} bytes, {self.jobs} jobs, "
                f"{self.jobs_per_s(now):.0f} jobs/s, {now - self.started:.1f} s, "
                f"ETA {self.eta_s(now):.0f} s)")
