"""CPU per command on one node core, without sockets: parse + execute.

    python -m bench.instructions [-n N]            # microseconds per command
    python -m bench.instructions --callgrind       # instructions per command

A node core with the real cluster hooks (no peers) runs N pipelined
requests of each kind, 16 at a time as redis-benchmark -P 16 sends them:
PING, ADDJOB, GETJOB NOHANG (taking those jobs), ACKJOB (acking them, in
the order they were fetched, or ``--shuffle`` in blocks of 100 as 50
clients' acks arrive).  Timings move with the machine's load; instruction
counts (valgrind's callgrind, Debian package ``valgrind``) do not, so the
changes in bench/README.md are measured with ``--callgrind``: each count
is the difference between runs with and without that phase, divided by N.
"""

import argparse
import os
import random
import subprocess
import sys
import time

from trisque.cluster.cluster import Cluster
from trisque.cluster.outbox import Transport
from trisque.protocol.resp import RequestParser
from trisque.core.admin.config import Config
from trisque.core.node import Node
from trisque.core.table import COMMANDS
from trisque.shell import collector

from .client import encode

PHASES = ("PING", "ADDJOB", "GETJOB", "ACKJOB")


def run(node, client, requests, pipeline=16):
    """Seconds to parse and run ``requests``, ``pipeline`` per chunk."""
    parser = RequestParser()
    execute = node.execute
    out = client.out
    start = time.perf_counter()
    for i in range(0, len(requests), pipeline):
        for argv in parser.feed(b"".join(requests[i:i + pipeline])):
            execute(client, argv)
        b"".join(out)
        out.clear()
    return time.perf_counter() - start


def measure(n, phases, shuffle):
    """Microseconds per command of each phase run (up to the last of
    ``phases``; the requests of every phase are built either way)."""
    collector.tune()  # as trisque-server runs
    node = Node(Config(), "a" * 40, time.time, table=COMMANDS)
    Cluster(node, Transport(), "127.0.0.1", 7711, 17711)
    client = node.add_client()
    requests = {"PING": [encode("PING")] * n,
                "ADDJOB": [encode("ADDJOB", "q", b"%012d" % i, 0) for i in range(n)],
                "GETJOB": [encode("GETJOB", "NOHANG", "FROM", "q")] * n}
    result = {}
    for phase in PHASES:
        if phase == "ACKJOB" and ("ACKJOB" in phases or "ACKREQ" in phases):
            ids = [job.id for job in node.jobs.values()]
            if shuffle:
                rng = random.Random(1)
                for i in range(0, len(ids), 100):
                    block = ids[i:i + 100]
                    rng.shuffle(block)
                    ids[i:i + 100] = block
            requests["ACKJOB"] = [encode("ACKJOB", job_id) for job_id in ids]
        if phase in phases:
            result[phase] = run(node, client, requests[phase]) / n * 1e6
    return result


def instructions(argv):
    """Instructions the command ``argv`` executes, counted by callgrind
    (with a fixed hash seed, so runs repeat exactly)."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
                         + argv, capture_output=True, text=True, env=env).stderr
    for line in out.splitlines():
        if "Collected :" in line:
            return int(line.split()[-1])
    raise RuntimeError(out[-3000:])


def callgrind(n, shuffle):
    """Instructions per command of each phase."""
    def total(upto):
        argv = [sys.executable, "-m", "bench.instructions", "-n", str(n),
                "--phases", ",".join(upto)]
        if shuffle:
            argv.append("--shuffle")
        return instructions(argv)
    # PING alone; then ADDJOB, + GETJOB, + building the ACKJOB requests
    # (their IDs are only known then), + running them: the differences.
    runs = [(), ("PING",), ("ADDJOB",), ("ADDJOB", "GETJOB"),
            ("ADDJOB", "GETJOB", "ACKREQ"), ("ADDJOB", "GETJOB", "ACKJOB")]
    base, ping, add, get, ackreq, ack = [total(upto) for upto in runs]
    return {"PING": (ping - base) / n, "ADDJOB": (add - base) / n,
            "GETJOB": (get - add) / n, "ACKJOB": (ack - ackreq) / n}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.instructions")
    parser.add_argument("-n", type=int, default=None)
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--shuffle", action="store_true",
                        help="ack in a shuffled order (blocks of 100)")
    parser.add_argument("--phases", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phases is not None:  # one run under callgrind
        measure(args.n, args.phases.split(",") if args.phases else (), args.shuffle)
        return
    if args.callgrind:
        n = args.n or 10000
        per = callgrind(n, args.shuffle)
    else:
        n = args.n or 100000
        per = measure(n, PHASES, args.shuffle)
    print(report(per, n, PHASES, args.callgrind))


def report(per, n, phases, callgrind):
    """The table of per-command figures (us, or instructions with callgrind)."""
    unit = "instructions" if callgrind else "us"
    lines = [f"per command, {n} of each, pipelined 16 at a time ({unit})"]
    for phase in phases:
        lines.append(f"  {phase:8} {per[phase]:10,.{0 if callgrind else 2}f}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
