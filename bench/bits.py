"""Throughput of the bitmap and HyperLogLog commands against
redis-server's own, in the same run: the same redis-benchmark command line
(-c 50, -r 1000000, unpipelined) sent to both servers, rounds alternating.

    python -m bench.bits [-n REQUESTS] [--rounds R]

Rows: SETBIT, GETBIT and BITCOUNT on a million small bitmaps (one key per
``__rand_int__``: redis-benchmark's random numbers are zero-padded, which
no bit offset may be, so they name the keys), BITCOUNT of one 128 KB
bitmap, and PFADD/PFCOUNT on one HyperLogLog (dense after the first few
thousand adds); GET of the same keys first, as the yardstick of what this
machine's load lets any command reach in that run.  Issue 26's target:
SETBIT/GETBIT/BITCOUNT >= 0.8.
"""

from __future__ import annotations

import argparse
import os
import statistics

from . import servers
from .throughput import CLIENTS, machine, redis_benchmark

# (label, command, target ratio)
ROWS: list[tuple[str, list[str], float | None]] = [
    ("GET (for reference)", ["GET", "bits:__rand_int__"], None),
    ("SETBIT", ["SETBIT", "bits:__rand_int__", "100", "1"], 0.8),
    ("GETBIT", ["GETBIT", "bits:__rand_int__", "100"], 0.8),
    ("BITCOUNT", ["BITCOUNT", "bits:__rand_int__"], 0.8),
    ("BITCOUNT of 128 KB", ["BITCOUNT", "big"], None),
    ("PFADD", ["PFADD", "hll", "__rand_int__"], None),
    ("PFCOUNT", ["PFCOUNT", "hll"], None),
]


def prepare(server: servers.Server) -> None:
    server.client.setbit("big", 128 * 1024 * 8 - 1, 1)
    server.client.pfadd("hll", *[f"seed{i}" for i in range(20000)])


def run(requests: int, rounds: int) -> None:
    load_before = os.getloadavg()
    samples: dict[tuple[str, str], list[float]] = {}
    with servers.start_redis() as redis_server, servers.start_trisque() as trisque:
        for server in (redis_server, trisque):
            prepare(server)
        for r in range(rounds):
            print(f"round {r + 1}/{rounds} ...", flush=True)
            for kind, server in (("redis", redis_server), ("trisque", trisque)):
                for label, command, _ in ROWS:
                    samples.setdefault((kind, label), []).append(
                        redis_benchmark(server.port, requests, 1, *command))
    print()
    print(machine(load_before, rounds))
    print(f"requests/s, redis-benchmark -c {CLIENTS} -n {requests} -P 1 (-r 1000000), same run")
    print(f"{'':28}{'trisque':>10}{'redis':>10}{'ratio':>7}{'target':>8}")
    for label, _, target in ROWS:
        ours = statistics.median(samples[("trisque", label)])
        theirs = statistics.median(samples[("redis", label)])
        ratio = ours / theirs
        mark = "" if target is None else f"{'>=' if ratio >= target else '< '}{target:.2f}"
        print(f"  {label:26}{ours:10,.0f}{theirs:10,.0f}{ratio:7.2f}{mark:>8}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--requests", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    run(args.requests, args.rounds)


if __name__ == "__main__":
    main()
