"""The node's counters: INFO stats, reset by CONFIG RESETSTAT."""

from typing import Any

ERRORSTATS_CODES = 128  # distinct error codes INFO errorstats tracks (Redis's bound)


class Stats:
    __slots__ = ("commands", "connections", "rejected", "net_in", "net_out",
                 "expired_jobs", "keyspace_hits", "commandstats",
                 "start_ms", "auth_failures", "denied", "query_limit_kills",
                 "output_limit_kills", "tls_handshake_failures",
                 "dead_lettered_jobs", "revived_jobs", "requeues_postponed",
                 "gc_pauses", "gc_pause_ms_total", "gc_pause_ms_max",
                 "deduplicated_adds",
                 "errorstats", "error_replies")
    commands: int
    connections: int
    rejected: int
    net_in: int
    net_out: int
    expired_jobs: int
    keyspace_hits: int
    commandstats: dict[str, Any]
    start_ms: int
    auth_failures: int
    denied: int
    query_limit_kills: int
    output_limit_kills: int
    tls_handshake_failures: int
    dead_lettered_jobs: int
    revived_jobs: int
    requeues_postponed: int
    gc_pauses: int
    gc_pause_ms_total: float
    gc_pause_ms_max: float
    deduplicated_adds: int
    errorstats: dict[bytes, int]
    error_replies: int

    def __init__(self, now_ms: int) -> None:
        self.start_ms = now_ms
        self.reset()

    def reset(self) -> None:
        self.commands = 0
        self.connections = 0
        self.rejected = 0
        self.net_in = 0
        self.net_out = 0
        self.expired_jobs = 0
        self.keyspace_hits = 0
        self.commandstats = {}  # name -> [calls, usec]
        self.auth_failures = 0  # refused AUTH / HELLO AUTH
        self.denied = 0  # connections refused by protected mode
        self.query_limit_kills = 0  # closed past client-query-buffer-limit
        self.output_limit_kills = 0  # closed past client-output-buffer-limit
        self.tls_handshake_failures = 0  # TLS clients and bus peers (shell/tls.py)
        # delivery policies (core/jobs/policy.py)
        self.dead_lettered_jobs = 0  # moved to a dead-letter queue here
        self.revived_jobs = 0  # REVIVE
        self.requeues_postponed = 0  # NACK DELAY and backoffs
        # the cyclic collector's passes, timed by shell/collector.py
        self.gc_pauses = 0
        self.gc_pause_ms_total = 0.0
        self.gc_pause_ms_max = 0.0
        self.deduplicated_adds = 0  # ADDJOB ... IDEMPOTENCY answered an existing ID
        # INFO errorstats and total_error_replies: error replies by code
        self.errorstats = {}
        self.error_replies = 0

    def error_reply(self, reply: bytes) -> None:
        """Count an error reply (``-CODE message``) under its code, as
        Redis's afterErrorReply (at most ERRORSTATS_CODES codes)."""
        self.error_replies += 1
        end = reply.find(b" ")
        if end < 0 or end > 64:
            end = reply.find(b"\r")
        code = reply[1:end]
        errorstats = self.errorstats
        if code in errorstats:
            errorstats[code] += 1
        elif len(errorstats) < ERRORSTATS_CODES:
            errorstats[code] = 1
