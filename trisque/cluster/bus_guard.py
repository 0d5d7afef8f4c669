"""What the cluster bus refuses, and how loudly.

Rules:

- With ``cluster-secret`` set, a link is trusted only through its frames'
  tags: a link that does not start with a hello, sends a frame without a
  tag, with a bad tag, or an envelope out of its turn (replayed) is
  closed, before any of its frames reaches the cluster rules.  So a node
  without the secret (or with another) never gets past its MEET: it is
  never added, never listed, and hears nothing but our hello.
- A frame over ``cluster-bus-max-frame`` closes its link (before its
  bytes are buffered).
- A peer that stops reading is disconnected once the bytes queued for it
  pass ``cluster-bus-send-queue-limit``; the link reconnects later, and
  replication, requeue and ack gossip repair what the lost frames carried.
- Each refusal is counted (INFO cluster) and logged with the peer's
  address, at most LOG_LINES lines per kind each LOG_PERIOD_MS (a
  misconfigured peer reconnecting all the time, or a flood of bad
  connections, must not fill the log); the next line logged says how many
  were not.
"""

LOG_PERIOD_MS = 1000
LOG_LINES = 10

AUTH = "auth"
TOO_BIG = "too-big"
SLOW_PEER = "slow-peer"
KINDS = (AUTH, TOO_BIG, SLOW_PEER)


def secret_key(secret: str) -> bytes | None:
    """The HMAC key for ``cluster-secret`` (None: links are not
    authenticated)."""
    return secret.encode("utf-8", "surrogateescape") if secret else None


class BusGuard:
    """Counts of refused links, and when to log them."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {kind: 0 for kind in KINDS}
        self._period_end_ms: dict[str, int] = {kind: 0 for kind in KINDS}
        self._lines: dict[str, int] = {kind: 0 for kind in KINDS}  # in this period
        self._unlogged: dict[str, int] = {kind: 0 for kind in KINDS}

    def refused(self, kind: str, now_ms: int) -> str | None:
        """Count one refusal of ``kind``; returns what to add to its log
        line if it should be logged now, else None."""
        self.counts[kind] += 1
        if now_ms >= self._period_end_ms[kind]:
            self._period_end_ms[kind] = now_ms + LOG_PERIOD_MS
            self._lines[kind] = 0
        if self._lines[kind] >= LOG_LINES:
            self._unlogged[kind] += 1
            return None
        self._lines[kind] += 1
        unlogged = self._unlogged[kind]
        self._unlogged[kind] = 0
        return f" ({unlogged} more not logged before this)" if unlogged else ""

    def info_fields(self) -> list[tuple[str, int]]:
        counts = self.counts
        return [
            ("cluster_stats_bus_auth_failures", counts[AUTH]),
            ("cluster_stats_bus_frames_too_big", counts[TOO_BIG]),
            ("cluster_stats_bus_slow_peer_disconnections", counts[SLOW_PEER]),
        ]
