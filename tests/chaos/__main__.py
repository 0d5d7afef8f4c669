"""python -m tests.chaos: one chaos run, its summary as JSON (see __init__)."""

import argparse
import json
import random
import sys

from .run import Plan, resume, run, start_cluster


def faults(text):
    kinds = tuple(text.split(","))
    if not kinds or not set(kinds) <= {"kill", "stop"}:
        raise argparse.ArgumentTypeError("a comma-separated list of kill, stop")
    return kinds


def main():
    parser = argparse.ArgumentParser(prog="python -m tests.chaos")
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--replicate", type=int, default=2)
    parser.add_argument("--duration", type=float, default=60, help="seconds of chaos")
    parser.add_argument("--fsync", default="everysec", choices=("always", "everysec", "no"))
    parser.add_argument("--rate", type=float, default=300, help="ADDJOBs per second")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--faults", type=faults, default=("kill",),
                        help="kill (kill -9, restart), stop (SIGSTOP 0.5-5 s, "
                             "SIGCONT) or both: kill,stop")
    args = parser.parse_args()
    seed = random.randrange(1 << 30) if args.seed is None else args.seed
    plan = Plan(replicate=args.replicate, duration=args.duration, rate=args.rate,
                seed=seed, faults=args.faults, drain_timeout=max(60, args.duration))
    cluster = start_cluster(args.nodes, args.fsync)
    summary = None
    try:
        summary = run(cluster, plan)
        summary["fsync"] = args.fsync
        print(json.dumps(summary, indent=1))
    finally:
        resume(cluster)  # nothing stays frozen, whatever happened
        if summary is not None and summary["ok"]:
            cluster.close()
        else:
            for server in cluster.servers:
                server.stop()
            print("node directories kept:", *(s.dir for s in cluster.servers),
                  file=sys.stderr)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
