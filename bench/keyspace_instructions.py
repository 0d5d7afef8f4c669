"""CPU per keyspace command on one node core, without sockets: parse +
execute, as bench.instructions does for jobs.

    python -m bench.keyspace_instructions [-n N]         # microseconds per command
    python -m bench.keyspace_instructions --callgrind    # instructions per command
    python -m bench.keyspace_instructions --callgrind --rows XADD,XREADGROUP,XACK

``PHASES`` run in order on one node core, 16 requests at a time (as
redis-benchmark -P 16 sends them), with redis-benchmark's arguments (-r
1000000: random 12-digit key suffixes); each pop phase pops what the push
phase before it pushed.  With ``--callgrind`` each count is the difference
between a run up to that phase and a run up to the one before, divided by
N (fixed hash seed, so runs repeat exactly).  ``--rows`` runs only the
phases from the first row named (callgrind's runs of all phases take long
on a loaded machine).

The stream rows are bench.streams's: ``XADD s * f v``, then on a stream
``r`` filled beforehand (in every run, so the differences drop it) with
IDs ``<n>-1`` and a group ``g`` at 0: ``XREADGROUP GROUP g c COUNT 1
STREAMS r >`` and the ``XACK r g <n>-1`` of each entry read.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from trisque.cluster.cluster import Cluster
from trisque.cluster.outbox import Transport
from trisque.core.admin.config import Config
from trisque.core.node import Node
from trisque.core.table import COMMANDS

from .client import encode
from .instructions import instructions, report, run

PHASES = ("PING", "LPUSH", "RPOP", "RPUSH", "LPOP", "SET", "GET", "INCR", "HSET",
          "SETBIT", "GETBIT", "BITCOUNT", "XADD", "XREADGROUP", "XACK")


def requests_of(phase: str, n: int) -> list[bytes]:
    rng = random.Random(phase)
    rand = [b"%012d" % rng.randrange(1000000) for _ in range(n)]
    if phase == "PING":
        return [encode("PING")] * n
    if phase in ("LPUSH", "RPUSH"):
        return [encode(phase, "q", r) for r in rand]
    if phase in ("RPOP", "LPOP"):
        return [encode(phase, "q")] * n
    if phase == "SET":
        return [encode("SET", b"key:" + r, "xxx") for r in rand]
    if phase == "GET":
        return [encode("GET", b"key:" + r) for r in rand]
    if phase == "INCR":
        return [encode("INCR", b"counter:" + r) for r in rand]
    if phase in ("SETBIT", "GETBIT", "BITCOUNT"):  # (bench.bits's rows)
        tail = {"SETBIT": ["100", "1"], "GETBIT": ["100"], "BITCOUNT": []}[phase]
        return [encode(phase, b"bits:" + r, *tail) for r in rand]
    if phase == "XADD":
        return [encode("XADD", "s", "*", "f", "v")] * n
    if phase == "XREADGROUP":
        return [encode("XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", "r", ">")] * n
    if phase == "XACK":
        return [encode("XACK", "r", "g", b"%d-1" % i) for i in range(1, n + 1)]
    assert phase == "HSET"
    return [encode("HSET", "myhash", b"element:" + r, "xxx") for r in rand]


def measure(n: int, upto: int, start: int = 0) -> dict[str, float]:
    """Microseconds per command of the phases from ``start`` to ``upto``."""
    node = Node(Config(), "a" * 40, time.time, table=COMMANDS)
    Cluster(node, Transport(), "127.0.0.1", 7711, 17711)
    client = node.add_client()
    fill = [encode("XADD", "r", b"%d-1" % i, "field", "value") for i in range(1, n + 1)]
    run(node, client, fill + [encode("XGROUP", "CREATE", "r", "g", "0")])
    requests = {phase: requests_of(phase, n) for phase in PHASES}  # (every run builds all)
    return {phase: run(node, client, requests[phase]) / n * 1e6
            for phase in PHASES[start:upto]}


def callgrind(n: int, rows: tuple[str, ...]) -> dict[str, float]:
    start = min(PHASES.index(row) for row in rows)
    end = max(PHASES.index(row) for row in rows) + 1
    totals = {k: instructions([sys.executable, "-m", "bench.keyspace_instructions",
                               "-n", str(n), "--upto", str(k), "--start", str(start)])
              for k in range(start, end + 1)}
    return {PHASES[k]: (totals[k + 1] - totals[k]) / n for k in range(start, end)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.keyspace_instructions")
    parser.add_argument("-n", type=int, default=None)
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--rows", default=",".join(PHASES),
                        help="comma-separated phases to report (default: all)")
    parser.add_argument("--upto", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.upto is not None:  # one run under callgrind
        measure(args.n, args.upto, args.start)
        return
    rows = tuple(args.rows.split(","))
    unknown = set(rows) - set(PHASES)
    if unknown:
        parser.error(f"unknown rows: {', '.join(sorted(unknown))}")
    if args.callgrind:
        n = args.n or 10000
        per = callgrind(n, rows)
    else:
        n = args.n or 100000
        per = measure(n, len(PHASES), min(PHASES.index(row) for row in rows))
    print(report(per, n, rows, args.callgrind))

if __name__ == "__main__":
    main()
