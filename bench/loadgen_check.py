"""Cross-check of bench/loadgen.c against redis-benchmark: the same command
sent by both, -c 50, -P 1 and -P 16, on the same server in the same run.

    python -m bench.loadgen_check [-n REQUESTS] [--rounds R] [--disque PATH]

For each server and pipeline depth, every round runs redis-benchmark and
loadgen back to back (which goes first alternates between rounds, so the
machine's load hits both alike) and the table shows each one's median
rate and the median of the per-round ratios loadgen / redis-benchmark,
for loadgen's lean loop (each batch written at once) and its
like-redis-benchmark loop (redis-benchmark's event-loop shape: the batch
written on the next writable event, epoll interests swapped around it;
what the benchmarks use).
Commands: PING on redis-server, trisque and Disque; ACKJOB of well-formed
IDs no node knows and GETJOB NOHANG FROM an empty queue on trisque and
Disque.  The Python loader's figure is shown beside them for reference.
"""

import argparse
import os
import statistics
from collections.abc import Callable

from . import client, servers
from .throughput import CLIENTS, machine, redis_benchmark

UNKNOWN_ID = "D-00000000-000000000000__rand_int__-0001"


def commands(kind: str, requests: int) -> list[tuple[str, list[str], list[bytes]]]:
    """(label, redis-benchmark's arguments, loadgen's requests) for ``kind``."""
    rows = [("PING", ["PING"], [client.encode("PING")] * requests)]
    if kind != "redis":
        unknown = [client.encode("ACKJOB", "D-00000000-%024d-0001" % i)
                   for i in range(requests)]
        rows.append(("ACKJOB unknown id", ["ACKJOB", UNKNOWN_ID], unknown))
        empty = ["GETJOB", "NOHANG", "FROM", "nothing"]
        rows.append(("GETJOB NOHANG, empty", empty, [client.encode(*empty)] * requests))
    return rows


def measure(port: int, kind: str, requests: int, pipeline: int, first_c: bool,
            samples: dict[tuple[str, str, int, str], list[float]]) -> None:
    for label, argv, reqs in commands(kind, requests):
        def by(loader: str) -> Callable[[], float]:
            return lambda: client.replay(port, reqs, CLIENTS, pipeline, loader).rate

        def by_redis_benchmark() -> float:
            return float(redis_benchmark(port, requests, pipeline, *argv))
        order = [("lean", by(client.C_LEAN)),
                 ("like-rb", by(client.C_LIKE_REDIS_BENCHMARK)),
                 ("redis-benchmark", by_redis_benchmark)]
        if not first_c:
            order.reverse()
        rates = {name: run() for name, run in order}
        rates["python"] = by(client.PYTHON_LOADER)()
        rates["ratio"] = rates["lean"] / rates["redis-benchmark"]
        rates["ratio like-rb"] = rates["like-rb"] / rates["redis-benchmark"]
        for name, value in rates.items():
            samples.setdefault((kind, label, pipeline, name), []).append(value)


def run(requests: int, rounds: int, disque: str | None) -> None:
    if client.choose_loader("auto") == client.PYTHON_LOADER:
        raise SystemExit("no C compiler: loadgen cannot be built")
    load_before = os.getloadavg()
    samples: dict[tuple[str, str, int, str], list[float]] = {}
    started = {"redis": servers.start_redis(), "trisque": servers.start_trisque()}
    if disque:
        started["disque"] = servers.start_disque(disque)
    try:
        for r in range(rounds):
            print(f"round {r + 1}/{rounds} ...", flush=True)
            for pipeline in (1, 16):
                for kind, server in started.items():
                    measure(server.port, kind, requests, pipeline, r % 2 == 0, samples)
    finally:
        for server in started.values():
            server.stop()
    print()
    print(machine(load_before, rounds))
    print(f"requests/s, -c {CLIENTS} -n {requests}; ratio = median of the rounds' "
          f"loadgen / redis-benchmark (min-max)")
    print(f"{'':34}{'redis-bench':>12}{'lean':>10}{'ratio':>7}{'range':>11}"
          f"{'like-rb':>10}{'ratio':>7}{'range':>11}{'python':>10}")
    keys = sorted({key[:3] for key in samples}, key=lambda k: (k[2], k[0], k[1]))
    for kind, label, pipeline in keys:
        def med(name: str) -> float:
            return statistics.median(samples[(kind, label, pipeline, name)])
        def spread(name: str) -> str:
            ratios = samples[(kind, label, pipeline, name)]
            return f"{min(ratios):.2f}-{max(ratios):.2f}"
        print(f"-P {pipeline:<2} {kind:8} {label:20}{med('redis-benchmark'):12,.0f}"
              f"{med('lean'):10,.0f}{med('ratio'):7.2f}{spread('ratio'):>11}"
              f"{med('like-rb'):10,.0f}{med('ratio like-rb'):7.2f}"
              f"{spread('ratio like-rb'):>11}{med('python'):10,.0f}")
    if disque:
        print("trisque / Disque C, the same command and loader (medians)")
        for label in ("ACKJOB unknown id", "GETJOB NOHANG, empty", "PING"):
            for pipeline in (1, 16):
                line = f"-P {pipeline:<2} {label:22}"
                for name in ("redis-benchmark", "lean", "like-rb", "python"):
                    ours = statistics.median(samples[("trisque", label, pipeline, name)])
                    theirs = statistics.median(samples[("disque", label, pipeline, name)])
                    line += f"  {name} {ours / theirs:.2f}"
                print(line)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.loadgen_check",
                                     description=__doc__)
    parser.add_argument("-n", "--requests", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--disque", metavar="PATH")
    args = parser.parse_args()
    run(args.requests, args.rounds, args.disque)


if __name__ == "__main__":
    main()
