"""python -m tests.sim [--seeds N | --seed S] [--nodes K] [--faults P|all] [--jobs J]
                     [--policies] [--schedules]

Runs simulated clusters and prints failing seeds with a one-line replay
command; with --trace JOBID, what happened to that job.  --jobs runs seeds
in that many processes at once (results still printed in seed order).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator

from .faults import PROFILES
from .run import replay_command, run_seed

Task = tuple  # (seed, nodes, profile, work_ms, trace job or None, policies, schedules)


def _run_task(task: Task) -> dict:
    seed, nodes, profile, work_ms, trace, policies, schedules = task
    return run_seed(seed, nodes=nodes, profile=profile, work_ms=work_ms, trace_job=trace,
                    policies=policies, schedules=schedules)


def results(tasks: list[Task], jobs: int) -> Iterator[dict]:
    """Each task's result, in task order, computed by ``jobs`` processes."""
    if jobs <= 1:
        yield from map(_run_task, tasks)
        return
    # fork: the workers inherit this process's PYTHONHASHSEED=0 str hashing
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        yield from pool.imap(_run_task, tasks, chunksize=1)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.sim", description=__doc__)
    parser.add_argument("--seeds", type=int, default=10, help="how many seeds to run")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--seed", type=int, help="run just this seed")
    parser.add_argument("--nodes", type=int, default=5)
    parser.add_argument("--faults", default="all",
                        help="fault profile, or 'all' to cycle: " + ", ".join(PROFILES))
    parser.add_argument("--work-ms", type=int, default=15000)
    parser.add_argument("--trace", help="job ID whose bus messages to print")
    parser.add_argument("--jobs", type=int, default=1, help="processes running seeds at once")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--policies", action="store_true",
                        help="delivery limits, dead letters, backoff, NACK DELAY in use "
                             "(docs/lifecycle.md)")
    parser.add_argument("--schedules", action="store_true",
                        help="a periodic job firing every second (docs/schedules.md)")
    args = parser.parse_args(argv)
    if os.environ.get("PYTHONHASHSEED") != "0":
        # str hashing is randomised per process; fix it so a seed replays exactly.
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, "-m", "tests.sim"] + sys.argv[1:])
    seeds = [args.seed] if args.seed is not None else list(
        range(args.first_seed, args.first_seed + args.seeds))
    tasks = [(seed, args.nodes,
              PROFILES[seed % len(PROFILES)] if args.faults == "all" else args.faults,
              args.work_ms, args.trace, args.policies, args.schedules) for seed in seeds]
    started = time.monotonic()
    failures = 0
    totals: dict[str, list[int]] = {}
    cpu_s = 0.0
    for result in results(tasks, args.jobs):
        seed, profile = result["seed"], result["profile"]
        cpu_s += result["cpu_s"]
        stats = totals.setdefault(profile, [0] * 6)
        for i, key in enumerate(("deliveries", "duplicates", "starved", "lost")):
            stats[i + 1] += result[key]
        stats[0] += 1
        stats[5] += len(result["violations"])
        if not args.quiet or result["violations"]:
            print(f"seed {seed} {profile:<13} accepted={result['accepted']} "
                  f"deliveries={result['deliveries']} duplicates={result['duplicates']} "
                  f"max_dummy_acks={result['max_dummy_acks']} events={result['events']} "
                  f"virtual={result['virtual_s']:.0f}s cpu={result['cpu_s']}s "
                  f"starved={result['starved']} lost={result['lost']} "
                  f"violations={len(result['violations'])}", flush=True)
        if result["violations"]:
            failures += 1
            for violation in result["violations"][:10]:
                print("   ", violation)
            match = re.search(r"D-[0-9a-f]{8}-\S{24}-[0-9a-f]{4}", " ".join(result["violations"]))
            print("    replay:", replay_command(seed, args.nodes, profile,
                                                match.group(0) if match else None,
                                                args.policies, args.schedules))
        for line in result["trace"]:
            print("   ", line)
    print("\nprofile        runs deliveries duplicates dup-rate starved  lost violations")
    for profile, (runs, deliveries, duplicates, starved, lost, violations) in totals.items():
        rate = duplicates / deliveries if deliveries else 0
        print(f"{profile:<14} {runs:>4} {deliveries:>10} {duplicates:>10} {rate:>8.4f} "
              f"{starved:>7} {lost:>5} {violations:>10}")
    wall_s = time.monotonic() - started
    print(f"\n{failures} failing seed(s) of {len(seeds)}; "
          f"{cpu_s / max(1, len(seeds)):.2f} s CPU a seed, {wall_s:.0f} s wall "
          f"with {args.jobs} process(es)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
