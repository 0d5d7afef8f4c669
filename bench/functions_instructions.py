"""Instructions per FCALL / EVALSHA through ``Node.execute`` (no sockets,
no RESP parsing): what a script call costs on a node core, the figure
issue 26's cuts are judged by (bench/README.md, "Functions").

    python -m bench.functions_instructions [-n 1000] [--rows NOP,FCALL_READ]

A node core (the real cluster hooks, no peers) with bench.functions'
library and scripts loaded, plus a function ``nop`` returning 1, and a
key ``key:1``; each row runs its request 50 times to warm up, then N
times.  Under callgrind, a row's count is the difference between a run of
N calls and a run of none (the same setup and warm-up), divided by N
(fixed hash seed).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time

from trisque.cluster.cluster import Cluster
from trisque.cluster.outbox import Transport
from trisque.core.admin.config import Config
from trisque.core.node import Node
from trisque.core.table import COMMANDS

from .functions import GET_SCRIPT, LIBRARY, SET_SCRIPT
from .instructions import instructions

NOP_LIBRARY = b"""#!lua name=nop
redis.register_function('nop', function(keys, args) return 1 end)
"""
WARM_UP = 50


def _sha(body: str) -> bytes:
    return hashlib.sha1(body.encode()).hexdigest().encode()


ROWS = {"NOP": [b"FCALL", b"nop", b"1", b"key:1"],
        "FCALL_READ": [b"FCALL", b"bench_get", b"1", b"key:1"],
        "FCALL_WRITE": [b"FCALL", b"bench_set", b"1", b"key:1", b"xxx"],
        "EVALSHA_READ": [b"EVALSHA", _sha(GET_SCRIPT), b"1", b"key:1"],
        "EVALSHA_WRITE": [b"EVALSHA", _sha(SET_SCRIPT), b"1", b"key:1", b"xxx"],
        "GET": [b"GET", b"key:1"],
        "SET": [b"SET", b"key:1", b"xxx"]}


def run(row: str, n: int, server_log: bool = False) -> None:
    node = Node(Config(), "a" * 40, time.time, table=COMMANDS)
    Cluster(node, Transport(), "127.0.0.1", 7711, 17711)
    if server_log:  # the server's log, off (appendonly no), not the core's NoLog
        from trisque.server.aof.append_only_log import attach_log
        attach_log(node)
    client = node.add_client()
    execute = node.execute
    for setup in ([b"FUNCTION", b"LOAD", LIBRARY.encode()], [b"FUNCTION", b"LOAD", NOP_LIBRARY],
                  [b"SCRIPT", b"LOAD", GET_SCRIPT.encode()],
                  [b"SCRIPT", b"LOAD", SET_SCRIPT.encode()], [b"SET", b"key:1", b"xxx"]):
        execute(client, setup)
    argv = ROWS[row]
    out = client.out
    out.clear()
    execute(client, list(argv))
    if out[0][:1] == b"-":  # (a broken row would measure an error reply)
        raise SystemExit(f"{row}: {out[0]!r}")
    for _ in range(WARM_UP + n):
        execute(client, list(argv))  # (a copy, as the parser hands each request)
        out.clear()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.functions_instructions")
    parser.add_argument("-n", type=int, default=1000)
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--run", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--server-log", action="store_true",
                        help="the node gets the server's AOF log, off (as a server "
                             "run with --appendonly no), rather than the core's NoLog")
    args = parser.parse_args(argv)
    if args.run is not None:  # one run under callgrind
        run(args.run, args.calls if args.calls is not None else args.n, args.server_log)
        return
    rows = args.rows.split(",")
    unknown = set(rows) - set(ROWS)
    if unknown:
        parser.error(f"unknown rows: {', '.join(sorted(unknown))}")

    def total(row: str, calls: int) -> int:
        return instructions([sys.executable, "-m", "bench.functions_instructions",
                             "--run", row, "--calls", str(calls)]
                            + (["--server-log"] if args.server_log else []))
    print(f"instructions per call through Node.execute, {args.n} of each"
          + (", the server's log (off)" if args.server_log else ""))
    for row in rows:
        print(f"  {row:14} {(total(row, args.n) - total(row, 0)) / args.n:10,.0f}")


if __name__ == "__main__":
    main()
