"""Streams against redis-server, in the same run on the same machine
(issue 25's targets: XADD and XREADGROUP+XACK unpipelined >= 0.8 of
Redis, -P 16 >= 0.3; 1M entries <= 2x Redis's memory).

- XADD: redis-benchmark's own loop, ``XADD s * f v`` (-c 50), -P 1 and
  -P 16.
- XREADGROUP+XACK: each of the 50 clients has a stream of its own,
  filled beforehand with known IDs (``<n>-1``) and a group at 0; it sends
  ``XREADGROUP GROUP g c COUNT 1 STREAMS s<i> >`` then ``XACK s<i> g
  <n>-1`` in turn (bench/loadgen.c's replay, -P 1 and -P 16: a batch holds
  8 such pairs, in order on its connection, so each ack follows its read).
  Rate in pairs per second; every XACK must answer 1.
- Memory: 1M ``XADD mem <n>-1 field value`` (pipelined), then both
  servers' INFO used_memory against their empty figure.

    .venv/bin/python -m bench.streams [-n 100000] [--entries 1000000]
"""

from __future__ import annotations

import argparse
import os

from . import servers
from .client import encode, replay
from .throughput import CLIENTS, machine, redis_benchmark

TARGETS = {1: 0.8, 16: 0.3}


def _fill(server: servers.Server, key: str, count: int, group: bool) -> None:
    pipe = server.client.pipeline(transaction=False)
    for n in range(1, count + 1):
        pipe.execute_command("XADD", key, f"{n}-1", "field", "value")
        if n % 5000 == 0:
            pipe.execute()
    if group:
        pipe.execute_command("XGROUP", "CREATE", key, "g", "0")
    pipe.execute()


def readgroup_ack_round(server: servers.Server, pairs: int, pipeline: int) -> float:
    per_client = max(1, pairs // CLIENTS)
    server.client.flushall()
    for i in range(CLIENTS):
        _fill(server, f"s{i}", per_client, True)
    requests: list[bytes] = []
    for n in range(1, per_client + 1):
        for step in (0, 1):  # client i gets requests i, i + CLIENTS, ...
            for i in range(CLIENTS):
                if step == 0:
                    requests.append(encode("XREADGROUP", "GROUP", "g", "c", "COUNT", 1,
                                           "STREAMS", f"s{i}", ">"))
                else:
                    requests.append(encode("XACK", f"s{i}", "g", f"{n}-1"))
    got = replay(server.port, requests, CLIENTS, pipeline)
    assert got.errors == 0 and got.int_sum == per_client * CLIENTS, got
    return got.rate / 2


def memory_round(entries: int) -> dict[str, float]:
    out = {}
    for start in (servers.start_trisque, servers.start_redis):
        with start() as server:
            empty = int(server.info()["used_memory"])
            _fill(server, "mem", entries, False)
            used = int(server.info()["used_memory"])
            out[server.kind] = (used - empty) / entries
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=100000, help="requests per row")
    parser.add_argument("--entries", type=int, default=1000000)
    args = parser.parse_args()
    load_before = os.getloadavg()
    rows = []
    with servers.start_trisque() as trisque, servers.start_redis() as redis_server:
        for pipeline in (1, 16):
            ours = redis_benchmark(trisque.port, args.n, pipeline, "XADD", "s", "*", "f", "v")
            theirs = redis_benchmark(redis_server.port, args.n, pipeline, "XADD", "s", "*",
                                     "f", "v")
            rows.append((f"-P {pipeline:<2} XADD s * f v", ours, theirs, TARGETS[pipeline]))
        for pipeline in (1, 16):
            ours = readgroup_ack_round(trisque, args.n // 2, pipeline)
            theirs = readgroup_ack_round(redis_server, args.n // 2, pipeline)
            rows.append((f"-P {pipeline:<2} XREADGROUP+XACK (pairs/s)", ours, theirs,
                         TARGETS[pipeline]))
    print(machine(load_before, 1))
    print(f"{'':38} {'trisque':>10} {'redis':>10} {'ratio':>6} {'target':>7}")
    for label, ours, theirs, target in rows:
        print(f"{label:38} {ours:>10,.0f} {theirs:>10,.0f} {ours / theirs:>6.2f} "
              f"{'>=%.1f' % target:>7}")
    memory = memory_round(args.entries)
    ratio = memory["trisque"] / memory["redis"]
    print(f"{args.entries:,} entries, used_memory per entry: trisque "
          f"{memory['trisque']:.1f}, redis {memory['redis']:.1f}, ratio {ratio:.2f} "
          f"(target <= 2.0)")


if __name__ == "__main__":
    main()
