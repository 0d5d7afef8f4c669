"""Replication latency to each peer: from a job's ADDJOB here to that
peer's GOTJOB, as counts by power-of-two milliseconds (the /metrics
histogram ``trisque_replication_latency_seconds``).

Measured on the node's clock (ms), so a loopback peer mostly reads 0 or
1 ms; one bucket increment per GOTJOB of a job still waiting for copies.
"""

from typing import Final

BUCKETS: Final = 33  # bit lengths 0..32 of a latency in ms (up to ~50 days)


class ReplicationLatency:
    __slots__ = ("hist", "count", "sum_ms")
    hist: list[int]
    count: int
    sum_ms: int

    def __init__(self) -> None:
        # hist[k]: GOTJOBs that came 2**(k-1) to 2**k - 1 ms after ADDJOB
        self.hist = [0] * BUCKETS
        self.count = 0
        self.sum_ms = 0

    def record(self, latency_ms: int, times: int = 1) -> None:
        """``times`` GOTJOBs that came ``latency_ms`` after their ADDJOB."""
        if latency_ms < 0:
            latency_ms = 0  # the clock stepped back
        # (Final and typed: compiled, BUCKETS was a dict look-up of the
        # module's globals and ``+=`` on the item a generic add)
        if latency_ms < 2:  # 0 or 1 ms, most on loopback: their own bit lengths
            k = latency_ms  # (compiled, bit_length is a method call)
        else:
            k = min(latency_ms.bit_length(), BUCKETS - 1)
        hist = self.hist
        n: int = hist[k]
        hist[k] = n + times
        self.count += times
        self.sum_ms += latency_ms * times
