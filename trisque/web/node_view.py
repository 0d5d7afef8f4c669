"""The node as the HTTP side sees it: read from the core at request time.

Everything here reads counters the core (and INFO) already keeps; nothing
is stored.  Each read is bounded: the queues reported one by one are the
top ``TOP_QUEUES`` by length (the rest summed as ``OTHER_QUEUES``), and jobs
are counted by state only up to ``JOB_SCAN_MAX`` jobs (beyond, only the
queued ones, which the queues count for free).
"""

import heapq
import time
from dataclasses import dataclass
from typing import Any, Optional

from ..protocol.bus import NAMES
from ..core.admin.info import rss_bytes
from ..core.jobs.job import STATE_NAMES
from ..core.command import unique_commands

TOP_QUEUES = 20
OTHER_QUEUES = "(other)"
JOB_SCAN_MAX = 100_000


@dataclass
class QueueView:
    name: str
    length: int = 0
    enqueued: int = 0
    dequeued: int = 0
    acked: int = 0
    nacked: int = 0
    blocked: int = 0


def queues(node: Any, top: int = TOP_QUEUES) -> list[QueueView]:
    """The ``top`` longest queues, then (if any are left) the others summed."""
    all_queues = node.queues.values()
    picked = heapq.nlargest(top, all_queues, key=len)
    views = [_view(q.name.decode("utf-8", "replace"), [q]) for q in picked]
    if len(node.queues) > len(picked):
        chosen = {id(q) for q in picked}
        views.append(_view(OTHER_QUEUES, [q for q in all_queues if id(q) not in chosen]))
    return views


def _view(name: str, group: list[Any]) -> QueueView:
    view = QueueView(name)
    for q in group:
        view.length += len(q.jobs)
        view.enqueued += q.jobs_in
        view.dequeued += q.jobs_out
        view.acked += q.acks
        view.nacked += q.nacks
        view.blocked += len(q.blocked)
    return view


def jobs_by_state(node: Any) -> dict[str, int]:
    """Jobs in each state; only ``queued`` once the node holds more than
    JOB_SCAN_MAX jobs (counting the others means visiting every job)."""
    queued = sum(len(q.jobs) for q in node.queues.values())
    if len(node.jobs) > JOB_SCAN_MAX:
        return {"queued": queued}
    counts = dict.fromkeys(STATE_NAMES, 0)
    for job in node.jobs.values():
        counts[STATE_NAMES[job.state]] += 1
    return counts


@dataclass
class PeerView:
    id: str
    address: str
    state: str  # myself, ok, pfail, fail, handshake, leaving, noaddr
    link: bool


def peers(node: Any) -> list[PeerView]:
    """Every node this one knows (itself included), with its state as seen here."""
    membership = getattr(node.cluster, "membership", None)
    if membership is None:  # a node without the cluster rules
        return [PeerView(node.id, f"127.0.0.1:{node.config.port}", "myself", True)]
    out = []
    for n in membership.nodes.values():
        out.append(PeerView(n.id, n.address(), _state(n), bool(n.myself or n.link_ok)))
    out.sort(key=lambda p: (p.state != "myself", p.address))
    return out


def _state(n: Any) -> str:
    for flag, name in (("myself", "myself"), ("fail", "fail"), ("pfail", "pfail"),
                       ("leaving", "leaving"), ("handshake", "handshake"),
                       ("noaddr", "noaddr")):
        if getattr(n, flag):
            return name
    return "ok"


@dataclass
class CommandView:
    name: str
    calls: int
    seconds: float
    # cumulative counts at each upper bound in seconds, then +Inf
    buckets: list[tuple[float, int]]


# Histogram bounds: a command's time falls in power-of-two nanosecond slots
# (the core's Command.hist, by bit length); these report every other one,
# from 1 us (2**10 ns) to 1 s (2**30 ns).
BUCKET_BITS = tuple(range(10, 31, 2))


def commands(node: Any) -> list[CommandView]:
    out = []
    for c in unique_commands(node.table):
        if not c.calls:
            continue
        hist = c.histogram()
        buckets = []
        below = 0
        start = 0
        for bits in BUCKET_BITS:
            below += sum(hist[start:bits + 1])  # bit length <= bits: < 2**bits ns
            start = bits + 1
            buckets.append((2 ** bits / 1e9, below))
        buckets.append((float("inf"), sum(hist)))
        out.append(CommandView(c.lname, c.calls, c.ns / 1e9, buckets))
    return out


def aof(node: Any) -> dict[str, Any]:
    """INFO persistence's fields, plus the seconds since the last fsync."""
    fields: dict[str, Any] = dict(node.log.info())
    last = fields.get("aof_last_fsync") or 0
    fields["fsync_lag_s"] = max(0.0, time.time() - last) if last else None
    return fields


def memory(node: Any) -> dict[str, int]:
    return {"used": node.used_memory, "rss": rss_bytes(), "peak": node.peak_memory,
            "max": node.config.maxmemory, "level": node.memory_level()}


def keyspace(node: Any) -> dict[int, tuple[int, int]]:
    """db number -> (keys, keys with a TTL), for the databases holding keys."""
    return {db.id: (len(db.keys), len(db.expires)) for db in node.keyspace.dbs if db.keys}


def bus_frames(node: Any) -> Optional[tuple[dict[str, int], dict[str, int]]]:
    """Bus frames (received, sent) by type; None for a node without a bus."""
    cluster = node.cluster
    received = getattr(cluster, "frames_received", None)
    transport = getattr(cluster, "transport", None)
    sent = getattr(transport, "frames_sent", None)
    if received is None or sent is None:
        return None
    return ({NAMES[i]: n for i, n in enumerate(received) if n},
            {NAMES[i]: n for i, n in enumerate(sent) if n})


def bus_links_refused(node: Any) -> Optional[dict[str, int]]:
    """Bus links closed by reason (cluster/bus_guard.py: auth, too-big,
    slow-peer); None for a node without a bus."""
    guard = getattr(node.cluster, "bus_guard", None)
    return None if guard is None else dict(guard.counts)


@dataclass
class ReplicationView:
    peer: str
    address: str
    count: int
    seconds: float
    buckets: list[tuple[float, int]]  # cumulative, up to +Inf


# Replication latency bounds: 0, 1, 3, 7 ... 16383 ms (the cluster's
# ReplicationLatency keeps counts by the bit length of whole ms).
REPL_BUCKET_BITS = tuple(range(0, 15))


def replication(node: Any) -> list[ReplicationView]:
    """ADDJOB-to-GOTJOB latency to each known peer (none without a cluster)."""
    latencies = getattr(node.replication, "repl_latency", None)
    membership = getattr(node.cluster, "membership", None)
    if not latencies or membership is None:
        return []
    out = []
    for peer_id, latency in latencies.items():
        peer = membership.nodes.get(peer_id)
        if peer is None:
            continue  # forgotten since
        hist = latency.hist
        buckets = []
        for bits in REPL_BUCKET_BITS:
            # bit lengths 0..bits: whole ms up to 2**bits - 1
            buckets.append(((2 ** bits - 1) / 1e3, sum(hist[:bits + 1])))
        buckets.append((float("inf"), latency.count))
        out.append(ReplicationView(peer_id, peer.address(), latency.count,
                                   latency.sum_ms / 1e3, buckets))
    return out


TOP_SCHEDULES = 20  # the dashboard lists this many schedules, by name


def schedules(node: Any, top: int = TOP_SCHEDULES) -> list[dict[str, Any]]:
    """The live schedules (docs/schedules.md): definition, next tick and
    the latest tick fired with the node that fired it."""
    now_ms = node.now_ms()
    views = []
    for entry in sorted(node.schedules.live(), key=lambda e: e.name)[:top]:
        entry.due_tick(now_ms)
        views.append({"name": entry.name.decode("utf-8", "replace"),
                      "cron": entry.expr.decode("ascii", "replace"),
                      "queue": entry.queue.decode("utf-8", "replace"),
                      "next_tick_ms": entry.next_ms, "last_tick_ms": entry.fired_tick_ms,
                      "last_node": entry.fired_by})
    return views
