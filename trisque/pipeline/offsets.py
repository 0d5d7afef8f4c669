"""Streaming offsets: batch k's offset holds the IDs of the jobs leased for
batch k, by the node that leased them.  Spark writes it to the checkpoint's
offset log before it runs the batch, so a restarted query can replay an
uncommitted batch (bodies fetched again by ID) and ack a committed one it
never got to ack."""

from __future__ import annotations

from typing import Any

JobsByNode = dict[str, list[str]]  # "host:port" -> job IDs
MARK = "trisque"  # tells our offsets apart in a query's progress events


def initial() -> dict[str, Any]:
    return {MARK: 1, "seq": 0, "jobs": {}}


def make(seq: int, jobs: JobsByNode) -> dict[str, Any]:
    return {MARK: 1, "seq": seq, "jobs": jobs}


def is_ours(offset: Any) -> bool:
    return isinstance(offset, dict) and offset.get(MARK) == 1


def seq_of(offset: dict[str, Any]) -> int:
    return int(offset["seq"])


def jobs_of(offset: dict[str, Any]) -> JobsByNode:
    return {node: list(ids) for node, ids in offset.get("jobs", {}).items()}


def count(jobs: JobsByNode) -> int:
    return sum(len(ids) for ids in jobs.values())
