"""What a key costs: RSS of a trisque-server and of a redis-server, each
read empty and then loaded with the same data (issue 14: a key must cost
<= 2x what it costs in Redis).

Two loads, each into fresh processes (so neither sees the other's freed
memory):

- ``strings``: ``STRINGS`` small string keys, ``SET key:%08d v:%010d``
  (12-byte keys, 12-byte values that do not read as integers);
- ``lists``: ``ITEMS`` list items in ``LISTS`` lists, ``RPUSH list:%04d
  i:%010d`` (12-byte items), the lists growing side by side (round robin).

Requests go pipelined ``BATCH`` at a time over one connection.  RSS is
/proc/<pid>/status's VmRSS, 0.3 s after the load; redis-server is sent
``MEMORY PURGE`` first (jemalloc keeps the pages its listpacks and hash
tables grew out of for seconds: 1M list items read ~39 bytes an item
before the purge, ~15 after, against ~14.6 of used_memory; trisque gets
no such help).  Bytes per key (or item)
are the RSS growth over the empty process divided by the count.  trisque's
own ``used_memory`` growth is shown beside it (its estimate, what
maxmemory is checked against).
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Callable

from . import client, servers
from .throughput import machine

STRINGS = 1_000_000
ITEMS = 1_000_000
LISTS = 1000
BATCH = 1000
TARGET = 2.0  # trisque's bytes per key at most twice Redis's

Request = Callable[[int], bytes]


def string_request(i: int) -> bytes:
    return client.encode(b"SET", b"key:%08d" % i, b"v:%010d" % i)


def list_request(i: int) -> bytes:
    return client.encode(b"RPUSH", b"list:%04d" % (i % LISTS), b"i:%010d" % i)


def load(port: int, count: int, request: Request) -> None:
    conn = client.Connection(port)
    done = 0
    while done < count:
        n = min(BATCH, count - done)
        conn.call(b"".join(request(done + i) for i in range(n)), n)
        done += n
    conn.close()


def measure(start: Callable[[], servers.Server], count: int,
            request: Request) -> tuple[int, int]:
    """(RSS growth in bytes, used_memory growth) for ``count`` requests
    into a fresh server."""
    with start() as server:
        time.sleep(0.3)
        rss0, used0 = server.rss_bytes(), server.info().get("used_memory", 0)
        load(server.port, count, request)
        if server.kind == "redis":
            server.client.execute_command("MEMORY", "PURGE")
        time.sleep(0.3)
        return (server.rss_bytes() - rss0,
                server.info().get("used_memory", 0) - used0)


def run(rounds: int = 1, strings: int = STRINGS, items: int = ITEMS) -> None:
    load_before = os.getloadavg()
    loads: list[tuple[str, int, Request]] = [
        ("strings", strings, string_request), ("lists", items, list_request)]
    samples: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for r in range(rounds):
        for name, count, request in loads:
            print(f"round {r + 1}/{rounds}: {name} ...", flush=True)
            for kind, start in (("redis", servers.start_redis),
                                ("trisque", servers.start_trisque)):
                samples.setdefault((name, kind), []).append(
                    measure(start, count, request))
    print()
    print(machine(load_before, rounds))
    print(table(samples, strings, items))


def table(samples: dict[tuple[str, str], list[tuple[int, int]]], strings: int,
          items: int) -> str:
    lines = [f"RSS growth over the empty process, bytes each (median of "
             f"{len(samples[('strings', 'redis')])}); used_memory: trisque's estimate",
             f"{'':42}{'trisque':>9}{'redis':>9}{'ratio':>7}{'target':>8}"
             f"{'used_memory':>13}"]
    for name, count, what in (("strings", strings, f"{strings:,} string keys (per key)"),
                              ("lists", items, f"{items:,} items in {LISTS:,} lists (per item)")):
        ours = statistics.median(rss for rss, _ in samples[(name, "trisque")]) / count
        theirs = statistics.median(rss for rss, _ in samples[(name, "redis")]) / count
        used = statistics.median(u for _, u in samples[(name, "trisque")]) / count
        ratio = ours / theirs
        mark = f"{'<=' if ratio <= TARGET else '> '}{TARGET:.1f}"
        lines.append(f"  {what:40}{ours:9.1f}{theirs:9.1f}{ratio:7.2f}{mark:>8}{used:13.1f}")
    return "\n".join(lines)
