"""python -m bench [-n REQUESTS] [--rounds R] [--disque PATH] [--floor] [--loader c|python|...]
python -m bench memory [--jobs N] [--body BYTES]
python -m bench loaded [-n REQUESTS] [--rounds R] [--jobs N] [--disque PATH]
python -m bench keyspace [-n REQUESTS] [--rounds R] [--part all|throughput|memory]
python -m bench hostile [--rounds R] [--garbage-mb M] [--idle N]
python -m bench latency [--seconds S] [--rates 0.1,0.5,0.8] [--disque PATH] [--plot FILE]
python -m bench scale [--part all|connections|queues|nodes|bus-model]
python -m bench functions [-n REQUESTS]
python -m bench pubsub [-n REQUESTS]
python -m bench frameworks [--tasks N] [--nodes 3] [--concurrency 4]"""

import argparse
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["latency"]:  # modes with options of their own
        from . import latency
        latency.main(argv[1:])
        return
    if argv[:1] == ["functions"]:
        from . import functions
        functions.main(argv[1:])
        return
    if argv[:1] == ["pubsub"]:
        from . import pubsub
        pubsub.main(argv[1:])
        return
    if argv[:1] == ["scale"]:
        from . import scale
        scale.main(argv[1:])
        return
    if argv[:1] == ["frameworks"]:
        from . import frameworks
        frameworks.main(argv[1:])
        return
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("mode", nargs="?", default="throughput",
                        choices=["throughput", "memory", "loaded", "keyspace", "hostile"])
    parser.add_argument("-n", "--requests", type=int, default=200000,
                        help="requests per redis-benchmark run (default 200000)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure every figure this many times, show medians")
    parser.add_argument("--cycle-jobs", type=int, default=None,
                        help="jobs through the batch cycle (default: -n)")
    parser.add_argument("--disque", metavar="PATH",
                        help="also measure this disque-server binary")
    parser.add_argument("--floor", action="store_true",
                        help="also measure bench.floor, the least a Python "
                             "server can do (an upper bound for trisque)")
    parser.add_argument("--loader", default="auto",
                        choices=["auto", "c", "c-lean", "python"],
                        help="throughput mode: who replays the real ACKJOBs: "
                             "bench/loadgen.c (c: redis-benchmark's loop shape; "
                             "c-lean: each batch written at once), bench.client's "
                             "Python loop, or C when a compiler is found (auto)")
    parser.add_argument("--jobs", type=int, default=1000000,
                        help="memory and loaded modes: jobs to queue (default 1000000)")
    parser.add_argument("--body", type=int, default=100,
                        help="memory mode: body size in bytes (default 100)")
    parser.add_argument("--part", default="all", choices=["all", "throughput", "memory"],
                        help="keyspace mode: commands' throughput, memory per "
                             "key (1M string keys, 1M list items), or both")
    parser.add_argument("--keys", type=int, default=1000000,
                        help="keyspace memory: string keys and list items to load")
    parser.add_argument("--garbage-mb", type=int, default=100,
                        help="hostile mode: MB of pipelined garbage (default 100)")
    parser.add_argument("--idle", type=int, default=1000,
                        help="hostile mode: idle connections (default 1000)")
    args = parser.parse_args(argv)
    if args.mode == "hostile":
        from . import hostile
        hostile.run(args.rounds, garbage_mb=args.garbage_mb, idle=args.idle)
    elif args.mode == "keyspace":
        if args.part in ("all", "throughput"):
            from . import keyspace
            keyspace.run(args.requests, rounds=args.rounds)
        if args.part in ("all", "memory"):
            from . import keyspace_memory
            keyspace_memory.run(args.rounds, strings=args.keys, items=args.keys)
    elif args.mode == "loaded":
        from . import loaded
        loaded.run(args.requests, rounds=args.rounds, jobs=args.jobs, disque=args.disque)
    elif args.mode == "memory":
        from . import memory
        memory.run(args.jobs, args.body, disque=args.disque)
    else:
        from . import throughput
        throughput.run(args.requests, disque=args.disque, cycle_jobs=args.cycle_jobs,
                       rounds=args.rounds, floor=args.floor, loader=args.loader)
    return 0


if __name__ == "__main__":
    sys.exit(main())
