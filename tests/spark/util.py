"""Reading the broker's state back in the Spark tests."""

from __future__ import annotations

from typing import Any

import redis


def jobs_on(client: redis.Redis, queue: str | None = None,
            states: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """Every job a node holds (JSCAN REPLY all), by ID."""
    out: dict[str, dict[str, Any]] = {}
    cursor = b"0"
    args: list[Any] = ["COUNT", 5000, "BUSYLOOP"]
    if queue is not None:
        args += ["QUEUE", queue]
    for state in states:
        args += ["STATE", state]
    while True:
        cursor, items = client.execute_command("JSCAN", cursor, *args, "REPLY", "all")
        for item in items:
            fields = {k.decode(): v for k, v in zip(item[::2], item[1::2])}
            out[fields["id"].decode()] = fields
        if int(cursor) == 0:
            return out


def bodies(jobs: dict[str, dict[str, Any]]) -> list[bytes]:
    return sorted(job["body"] for job in jobs.values())


def nodes_option(*servers: Any) -> str:
    return ",".join(f"127.0.0.1:{s.port}" for s in servers)
