"""Executor side of a read: a partition's jobs become rows (queue, id,
body, nacks, additional_deliveries, ctime).  A partition planned from the
driver's cache carries bodies; one replayed from the checkpoint carries
IDs only, and SHOW fetches the rest (a job no node knows any more was acked
or expired: nothing to replay)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence, Union

from .connection import Address, Connection, NodeUnavailable, encode
from .lease import LeasedJob
from .nodes import parse_address_key

SOURCE_SCHEMA = ("queue string, id string, body string, nacks long, "
                 "additional_deliveries long, ctime timestamp")

Body = Union[str, bytes]
Row = tuple[str, str, Body, int, int, Optional[datetime.datetime]]


@dataclass(frozen=True)
class PartitionJobs:
    """What one Spark partition reads: leased jobs, or bare IDs to replay."""
    jobs: tuple[LeasedJob, ...] = ()
    replay: tuple[tuple[str, str], ...] = ()  # (node, id)


def split(jobs: Sequence[LeasedJob], replay: Sequence[tuple[str, str]],
          partitions: int) -> list[PartitionJobs]:
    """Contiguous slices, so jobs of one node mostly share a partition."""
    total = len(jobs) + len(replay)
    if not total:
        return []
    n = max(1, min(partitions, total))
    out = []
    for k in range(n):
        lo, hi = k * total // n, (k + 1) * total // n
        out.append(PartitionJobs(
            tuple(jobs[max(lo, 0):min(hi, len(jobs))]),
            tuple(replay[max(lo - len(jobs), 0):max(hi - len(jobs), 0)])))
    return out


def _int_field(fields: dict[bytes, object], name: bytes) -> int:
    value = fields.get(name, 0)
    return value if isinstance(value, int) else 0


def _show_fields(reply: object) -> Optional[dict[bytes, object]]:
    if not isinstance(reply, list):
        return None  # unknown job: a null
    return dict(zip(reply[::2], reply[1::2]))


def _ctime(fields: Optional[dict[bytes, object]]) -> Optional[datetime.datetime]:
    if fields is None:
        return None
    ns = fields.get(b"ctime")
    if not isinstance(ns, int):
        return None
    return datetime.datetime.fromtimestamp(ns / 1e9, tz=datetime.timezone.utc)


def show_all(by_node: dict[str, list[str]], nodes: Sequence[Address],
             timeout_s: float) -> dict[str, dict[bytes, object]]:
    """SHOW each ID on its node, then on the other nodes for those not
    found there (a node down, or the job moved)."""
    found: dict[str, dict[bytes, object]] = {}
    for key, ids in by_node.items():
        home = parse_address_key(key)
        missing = list(ids)
        for address in [home] + [n for n in nodes if n != home]:
            if not missing:
                break
            try:
                with Connection(address, timeout_s) as conn:
                    replies = conn.pipeline([encode("SHOW", i) for i in missing])
            except NodeUnavailable:
                continue
            still = []
            for job_id, reply in zip(missing, replies):
                fields = _show_fields(reply)
                if fields is None:
                    still.append(job_id)
                else:
                    found[job_id] = fields
            missing = still
    return found


def rows(part: PartitionJobs, nodes: Sequence[Address], timeout_s: float,
         body_binary: bool) -> Iterator[Row]:
    def body(raw: bytes) -> Body:
        return raw if body_binary else raw.decode("utf-8", errors="replace")

    by_node: dict[str, list[str]] = {}
    for job in part.jobs:
        by_node.setdefault(job.node, []).append(job.id)
    for node, job_id in part.replay:
        by_node.setdefault(node, []).append(job_id)
    shown = show_all(by_node, nodes, timeout_s)
    for job in part.jobs:
        yield (job.queue.decode(), job.id, body(job.body), job.nacks, job.deliveries,
               _ctime(shown.get(job.id)))
    for _, job_id in part.replay:
        fields = shown.get(job_id)
        if fields is None or fields.get(b"state") == b"acked":
            continue
        raw = fields.get(b"body")
        queue = fields.get(b"queue")
        assert isinstance(raw, bytes) and isinstance(queue, bytes)
        yield (queue.decode(), job_id, body(raw), _int_field(fields, b"nacks"),
               _int_field(fields, b"additional-deliveries"), _ctime(fields))
