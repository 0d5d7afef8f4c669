"""python -m tests.chaos: chaos runs, each summary as JSON (see run.py).

``--scenario restart-empty`` is issue 13's: nodes without an AOF, every job
on every node (REPLICATE = nodes), one node kill -9ed at 8 s and restarted
empty (same node ID) at 12 s, producers stopping at 16 s, consumers polling
random nodes with short GETJOBs for up to 60 s more. ``--busy N`` runs N
busy loops beside (a loaded machine: late timers, slow bus turns), and
``--runs N`` repeats with seeds seed, seed+1, ...
"""

import argparse
import contextlib
import json
import random
import subprocess
import sys

from .run import Plan, node_config, resume, run, start_cluster
from tests.cluster.conftest import build_cluster


def faults(text):
    kinds = tuple(text.split(","))
    if not kinds or not set(kinds) <= {"kill", "stop"}:
        raise argparse.ArgumentTypeError("a comma-separated list of kill, stop")
    return kinds


def restart_empty_plan(seed):
    """Issue 13's scenario, as a new user ran it (see the module docstring)."""
    return Plan(duration=16, schedule="once", kill_at=8, restart_at=12, seed=seed,
                producers=4, consumers=4, rate=250, count=20, acking="batch",
                unacked_batches=0.05, socket_timeout=2, client_retries=3,
                drain_timeout=60)


@contextlib.contextmanager
def busy_loops(n):
    """``n`` processes spinning beside the run: a loaded machine."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def one_run(args, seed):
    if args.scenario == "restart-empty":
        plan = restart_empty_plan(seed)
        plan.replicate = args.nodes
        plan.polling = args.polling
        plan.stalls = (0.05, args.stalls) if args.stalls else None
        # Default settings, as a new user starts nodes: Disque's 15 s node
        # timeout, so the others never flag the restarted node as failed.
        config = node_config(args.fsync) if args.aof else ""
        cluster = build_cluster(args.nodes, config, node_timeout_ms=args.node_timeout)
    else:
        plan = Plan(replicate=args.replicate, duration=args.duration, rate=args.rate,
                    seed=seed, faults=args.faults, drain_timeout=max(60, args.duration))
        cluster = start_cluster(args.nodes, args.fsync)
    summary = None
    try:
        summary = run(cluster, plan)
        summary["fsync"] = args.fsync
        summary["aof"] = args.aof or args.scenario != "restart-empty"
        print(json.dumps(summary, indent=1), flush=True)
    finally:
        resume(cluster)  # nothing stays frozen, whatever happened
        if summary is not None and summary["ok"]:
            cluster.close()
        else:
            for server in cluster.servers:
                server.stop()
            print("node directories kept:", *(s.dir for s in cluster.servers),
                  file=sys.stderr)
    return summary


def main():
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=("random", "restart-empty"), default="random")
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--replicate", type=int, default=2)
    parser.add_argument("--duration", type=float, default=60, help="seconds of chaos")
    parser.add_argument("--fsync", default="everysec", choices=("always", "everysec", "no"))
    parser.add_argument("--aof", action="store_true",
                        help="restart-empty scenario with appendonly yes (restarts keep jobs)")
    parser.add_argument("--rate", type=float, default=300, help="ADDJOBs per second")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--node-timeout", type=int, default=15000,
                        help="cluster-node-timeout (ms) of the restart-empty scenario")
    parser.add_argument("--polling", choices=("random", "sticky"), default="random",
                        help="restart-empty consumers: a random node per GETJOB, or "
                             "one node until it fails")
    parser.add_argument("--stalls", type=float, default=0,
                        help="restart-empty: SIGSTOP a random node every 0.2-1 s for "
                             "0.05 s up to this many seconds")
    parser.add_argument("--busy", type=int, default=0, help="busy loops beside the run")
    parser.add_argument("--faults", type=faults, default=("kill",),
                        help="kill (kill -9, restart), stop (SIGSTOP 0.5-5 s, "
                             "SIGCONT) or both: kill,stop")
    args = parser.parse_args()
    first = random.randrange(1 << 30) if args.seed is None else args.seed
    failed = []
    totals = {"answered_adds": 0, "starved": 0, "lost": 0, "kills": 0}
    with busy_loops(args.busy):
        for seed in range(first, first + args.runs):
            summary = one_run(args, seed)
            for key in totals:
                totals[key] += summary[key]
            if not summary["ok"]:
                failed.append(seed)
    if args.runs > 1:
        print(json.dumps({"runs": args.runs, "failed_seeds": failed, **totals}), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
