"""ACKJOB of real jobs, trisque vs Disque C, the real-ID loader alternating
between rounds: is the unpipelined ACKJOB row's ratio the loader's?

    python -m bench.ackjob_loaders [-n REQUESTS] [--rounds R] [-P PIPELINE]
        [--disque PATH]

Every round runs bench.throughput's jobs round (ADDJOB and GETJOB by
redis-benchmark, ACKJOB of the fetched jobs by the round's loader, ACKJOB
of unknown IDs by redis-benchmark and every loader) on trisque and on
Disque, which goes first alternating every two rounds; even rounds ack the
real jobs with loadgen (redis-benchmark's loop), odd ones with the Python
loader.  Prints each figure's medians and per-round trisque / Disque.
"""

import argparse
import os
import statistics

from . import client, servers, throughput


def run(requests: int, rounds: int, pipeline: int, disque: str) -> None:
    print(f"load average before {os.getloadavg()[0]:.2f}")
    pair = {"trisque": servers.start_trisque(), "disque": servers.start_disque(disque)}
    samples: dict[tuple[str, str], list[float]] = {}
    try:
        for r in range(rounds):
            loader = client.C_LIKE_REDIS_BENCHMARK if r % 2 == 0 else client.PYTHON_LOADER
            order = ["trisque", "disque"] if r % 4 < 2 else ["disque", "trisque"]
            for kind in order:
                figures = throughput.jobs_round(pair[kind], requests, pipeline, loader)
                suffix = throughput.SUFFIX[loader]
                figures["ACKJOB real " + suffix] = figures.pop("ACKJOB")
                figures[f"ACKJOB {suffix} cpu_us"] = figures.pop("ACKJOB cpu_us")
                for name, value in figures.items():
                    samples.setdefault((kind, name), []).append(value)
            print(f"round {r + 1}/{rounds}", flush=True)
    finally:
        for server in pair.values():
            server.stop()
    print(f"load average after {os.getloadavg()[0]:.2f}; -P {pipeline} -n {requests}; "
          f"real ACKJOB loaders: C = {client.C_LIKE_REDIS_BENCHMARK}, "
          f"P = {client.PYTHON_LOADER}; ACKJOB? = unknown ids by redis-benchmark, "
          f"?C ?L ?P by loadgen, its lean loop, Python")
    print("requests/s, and the server's CPU us per real ACKJOB (ratio Disque / "
          "trisque there, so > 1 means trisque is cheaper, as for the rates)")
    for name in sorted({name for _, name in samples}):
        ours, theirs = samples[("trisque", name)], samples[("disque", name)]
        if name.endswith("cpu_us"):
            ours, theirs = theirs, ours  # cost, not rate: the inverse ratio
        rounds_ratio = " ".join(f"{a / b:.2f}" for a, b in zip(ours, theirs))
        tri, dis = samples[("trisque", name)], samples[("disque", name)]
        print(f"{name:15} trisque {statistics.median(tri):9,.1f}  disque "
              f"{statistics.median(dis):9,.1f}  ratio "
              f"{statistics.median(ours) / statistics.median(theirs):.2f}  "
              f"rounds {rounds_ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.ackjob_loaders",
                                     description=__doc__)
    parser.add_argument("-n", "--requests", type=int, default=50000)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("-P", "--pipeline", type=int, default=1)
    parser.add_argument("--disque", metavar="PATH", default="/tmp/disque/src/disque-server")
    args = parser.parse_args()
    run(args.requests, args.rounds, args.pipeline, args.disque)


if __name__ == "__main__":
    main()
