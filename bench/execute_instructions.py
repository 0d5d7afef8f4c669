"""Instructions per command through ``Node.execute`` alone (no RESP parsing,
no pipeline batching): what a command's own work costs, beside the floor
every request pays.

    python -m bench.execute_instructions [-n 3000] [--rows PING,LPUSH,XADD]

Each row runs N times the same request on one node core (with the real
cluster hooks, no peers): ``PING``, ``LPUSH q 000000123456``, ``XADD s *
f v``.  Under callgrind, its count is the difference between a run of the
row and a run of none, divided by N (fixed hash seed).
"""

from __future__ import annotations

import argparse
import sys
import time

from trisque.cluster.cluster import Cluster
from trisque.cluster.outbox import Transport
from trisque.core.admin.config import Config
from trisque.core.node import Node
from trisque.core.table import COMMANDS

from .instructions import instructions

ROWS = {"PING": [b"PING"],
        "LPUSH": [b"LPUSH", b"q", b"000000123456"],
        "XADD": [b"XADD", b"s", b"*", b"f", b"v"]}


def run(row: str, n: int) -> None:
    node = Node(Config(), "a" * 40, time.time, table=COMMANDS)
    Cluster(node, Transport(), "127.0.0.1", 7711, 17711)
    client = node.add_client()
    if row == "NONE":
        return
    argv = ROWS[row]
    execute = node.execute
    out = client.out
    for _ in range(n):
        execute(client, argv)
        if len(out) > 16:
            out.clear()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.execute_instructions")
    parser.add_argument("-n", type=int, default=3000)
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--run", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run is not None:  # one run under callgrind
        run(args.run, args.n)
        return
    rows = args.rows.split(",")
    unknown = set(rows) - set(ROWS)
    if unknown:
        parser.error(f"unknown rows: {', '.join(sorted(unknown))}")

    def total(row: str) -> int:
        return instructions([sys.executable, "-m", "bench.execute_instructions",
                             "-n", str(args.n), "--run", row])
    base = total("NONE")
    print(f"instructions per command through Node.execute, {args.n} of each")
    for row in rows:
        print(f"  {row:8} {(total(row) - base) / args.n:10,.0f}")


if __name__ == "__main__":
    main()
