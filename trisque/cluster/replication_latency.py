"""Replication latency to each peer: from a job's ADDJOB here to that
peer's GOTJOB, as counts by power-of-two milliseconds (the /metrics
histogram ``trisque_replication_latency_seconds``).

Measured on the node's clock (ms), so a loopback peer mostly reads 0 or
1 ms; one bucket increment per GOTJOB of a job still waiting for copies.
"""

from typing import Final

BUCKETS: Final = 33  # bit lengths 0..32 of a latency in ms (up to ~50 days)


class ReplicationLatency:
    __slots__ = ("_hist", "_ms0", "_ms1", "count", "sum_ms")
    _hist: list[int]
    # GOTJOBs after 0 and 1 ms (most, on a LAN), not yet in _hist (read
    # through ``hist``): compiled, a list item's += makes an int object
    # each call and frees the one before, where these add natively.
    _ms0: int
    _ms1: int
    count: int
    sum_ms: int

    def __init__(self) -> None:
        # hist[k]: GOTJOBs that came 2**(k-1) to 2**k - 1 ms after ADDJOB
        self._hist = [0] * BUCKETS
        self._ms0 = 0
        self._ms1 = 0
        self.count = 0
        self.sum_ms = 0

    @property
    def hist(self) -> list[int]:
        """The counts by bucket, every GOTJOB recorded so far in them."""
        hist = self._hist
        if self._ms0:
            n: int = hist[0]
            hist[0] = n + self._ms0
            self._ms0 = 0
        if self._ms1:
            n = hist[1]
            hist[1] = n + self._ms1
            self._ms1 = 0
        return hist

    def record(self, latency_ms: int, times: int = 1) -> None:
        """``times`` GOTJOBs that came ``latency_ms`` after their ADDJOB."""
        if latency_ms < 0:
            latency_ms = 0  # the clock stepped back
        self.count += times
        if latency_ms == 0:
            self._ms0 += times
            return
        self.sum_ms += latency_ms * times
        if latency_ms == 1:
            self._ms1 += times
            return
        # (Final and typed: compiled, BUCKETS was a dict look-up of the
        # module's globals and ``+=`` on the item a generic add)
        k = min(latency_ms.bit_length(), BUCKETS - 1)
        hist = self._hist
        n: int = hist[k]
        hist[k] = n + times
