"""FCALL against redis-server's, in the same run on the same machine: the
same library loaded into both, then the same redis-benchmark command line
(-c 50, -r 1000000, no pipelining) sent to each; EVALSHA of the same
bodies beside it, for scale.

    python -m bench functions [-n REQUESTS] [--rounds N]

Rows (issue 26's target: FCALL unpipelined >= 0.8 of redis-server):
- FCALL read: a no-writes function returning a GET;
- FCALL write: a function doing a SET of its key and argument;
- EVALSHA read / write: the same bodies as scripts.
"""

from __future__ import annotations

import argparse
import os
import statistics

from . import servers
from .throughput import CLIENTS, machine, redis_benchmark

LIBRARY = """#!lua name=benchlib
redis.register_function{function_name='bench_get', flags={'no-writes'},
  callback=function(keys) return redis.call('get', keys[1]) end}
redis.register_function('bench_set', function(keys, args)
  return redis.call('set', keys[1], args[1]) end)
"""
GET_SCRIPT = "return redis.call('get', KEYS[1])"
SET_SCRIPT = "return redis.call('set', KEYS[1], ARGV[1])"
TARGET = 0.8


def rows(sha_get: str, sha_set: str) -> list[tuple[str, list[str], float | None]]:
    return [
        ("FCALL read", ["FCALL", "bench_get", "1", "key:__rand_int__"], TARGET),
        ("FCALL write", ["FCALL", "bench_set", "1", "key:__rand_int__", "xxx"], TARGET),
        ("EVALSHA read", ["EVALSHA", sha_get, "1", "key:__rand_int__"], None),
        ("EVALSHA write", ["EVALSHA", sha_set, "1", "key:__rand_int__", "xxx"], None),
    ]


def run(requests: int, rounds: int = 3) -> None:
    """Each row ``rounds`` times, the two servers one after the other for
    each row and in turn first (so a change of the machine's load between
    them hits both alike); the table shows the median of each."""
    load_before = os.getloadavg()
    samples: dict[tuple[str, str], list[float]] = {}
    with servers.start_redis() as redis_server, servers.start_trisque() as trisque:
        table: list[tuple[str, list[str], float | None]] = []
        both = {"redis": redis_server, "trisque": trisque}
        commands = {}
        for kind, server in both.items():
            client = server.client
            client.execute_command("FUNCTION", "LOAD", "REPLACE", LIBRARY)
            sha_get = client.execute_command("SCRIPT", "LOAD", GET_SCRIPT).decode()
            sha_set = client.execute_command("SCRIPT", "LOAD", SET_SCRIPT).decode()
            table = rows(sha_get, sha_set)
            commands[kind] = {label: command for label, command, _ in table}
        for r in range(rounds):
            order = ("redis", "trisque") if r % 2 == 0 else ("trisque", "redis")
            for label, _, _ in table:
                print(f"round {r + 1}/{rounds}: {label} ...", flush=True)
                for kind in order:
                    samples.setdefault((kind, label), []).append(redis_benchmark(
                        both[kind].port, requests, 1, *commands[kind][label]))
    print()
    print(machine(load_before, rounds))
    print(f"requests/s, redis-benchmark -c {CLIENTS} -n {requests} -P 1 (-r 1000000), same run")
    print(f"{'':18}{'trisque':>10}{'redis':>10}{'ratio':>7}{'target':>8}  ratio by round")
    for label, _, target in table:
        ours_all, theirs_all = samples[("trisque", label)], samples[("redis", label)]
        ours, theirs = statistics.median(ours_all), statistics.median(theirs_all)
        ratio = ours / theirs
        mark = "" if target is None else f"{'>=' if ratio >= target else '< '}{target:.2f}"
        by_round = " ".join(f"{a / b:.2f}" for a, b in zip(ours_all, theirs_all))
        print(f"  {label:16}{ours:10,.0f}{theirs:10,.0f}{ratio:7.2f}{mark:>8}  {by_round}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench functions", description=__doc__)
    parser.add_argument("-n", "--requests", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=3,
                        help="each row this many times, servers alternating (median)")
    args = parser.parse_args(argv)
    run(args.requests, args.rounds)
