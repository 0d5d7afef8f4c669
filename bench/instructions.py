"""CPU per command on one node core, without sockets: parse + execute.

    python -m bench.instructions [-n N]            # microseconds per command
    python -m bench.instructions --callgrind       # instructions per command
    python -m bench.instructions --callgrind --policies  # per job cycle, by kind

A node core with the real cluster hooks (no peers) runs N pipelined
requests of each kind, 16 at a time as redis-benchmark -P 16 sends them:
PING, ADDJOB, GETJOB NOHANG (taking those jobs), ACKJOB (acking them, in
the order they were fetched, or ``--shuffle`` in blocks of 100 as 50
clients' acks arrive).  Timings move with the machine's load; instruction
counts (valgrind's callgrind, Debian package ``valgrind``) do not, so the
changes in bench/README.md are measured with ``--callgrind``: each count
is the difference between runs with and without that phase, divided by N.

``--waiter`` runs the single-node path of ``bench latency``'s
e2e-local-r1 instead: consumers blocked in GETJOB TIMEOUT 100, an ADDJOB
REPLICATE 1 served to the oldest at once, its ACKJOB and the consumer's
next GETJOB (blocking again), on a node that counts 3 nodes in its
cluster (as the bench's first node: requeue times jittered); its figure
is one such job's cycle.

``--policies`` compares the cost of one job's ADDJOB + GETJOB + ACKJOB by
kind (issue 28's budget: a job with a delivery limit and a priority costs at
most 10% more than a plain one): plain, with ``MAXDELIVERIES 5 PRIORITY 7``
on ADDJOB, and plain ADDJOBs in a queue whose QCONFIG sets the same.
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
# The kinds of job --policies compares: ADDJOB's extra options, and the
# QCONFIG SET options of the queue (set before any phase, in every run).
KINDS = {"plain": ((), ()),
         "options": (("MAXDELIVERIES", 5, "PRIORITY", 7), ()),
         "qconfig": ((), ("MAXDELIVERIES", 5, "PRIORITY", 7))}


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


def setup(n, kind="plain"):
    """A node core with the cluster hooks, a client, and the requests of
    each phase (ADDJOB's for jobs of ``kind``, see ``KINDS``)."""
    node = Node(Config(), "a" * 40, time.time, table=COMMANDS)
    Cluster(node, Transport(), "127.0.0.1", 7711, 17711)
    client = node.add_client()
    options, queue_options = KINDS[kind]
    if queue_options:
        node.execute(client, [b"QCONFIG", b"q", b"SET"] + [str(o).encode()
                                                         for o in queue_options])
        client.out.clear()
    requests = {"PING": [encode("PING")] * n,
                "ADDJOB": [encode("ADDJOB", "q", b"%012d" % i, 0, *options)
                           for i in range(n)],
                "GETJOB": [encode("GETJOB", "NOHANG", "FROM", "q")] * n}
    return node, client, requests


def acks_in_added_order(node):
    """The node's job IDs in the order the jobs were added, as a consumer
    acks what it fetched in FIFO order (the registry iterates shard by
    shard, core/jobs/registry.py: its order is the IDs' random part)."""
    return [job.id for job in sorted(node.jobs.values(), key=lambda job: job.ctime)]


def measure(n, phases, shuffle, kind="plain"):
    """Microseconds per command of each phase run (up to the last of
    ``phases``; the requests of every phase are built either way)."""
    collector.tune()  # as trisque-server runs
    node, client, requests = setup(n, kind)
    result = {}
    for phase in PHASES:
        if phase == "ACKJOB" and ("ACKJOB" in phases or "ACKREQ" in phases
                                  or "NOJOBS" in phases):
            ids = acks_in_added_order(node)
            if "NOJOBS" in phases:  # a cycle's base: as many requests, no jobs
                ids = [b"D-00000000-%024d-0000" % i for i in range(n)]
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


WAITERS = 8  # consumers blocked in GETJOB, as bench latency's CONSUMERS


def waiter_cycles(n):
    """Seconds for ``n`` jobs of e2e-local-r1's single-node path: each
    ADDJOB REPLICATE 1 wakes the oldest consumer blocked in GETJOB, which
    acks the job and blocks again."""
    collector.tune()
    node = Node(Config(), "a" * 40, time.time, table=COMMANDS)
    Cluster(node, Transport(), "127.0.0.1", 7711, 17711)
    node.cluster_size = 3  # (a cluster's node: its requeue times are jittered)
    producer = node.add_client()
    consumers = [node.add_client() for _ in range(WAITERS)]
    getjob = [b"GETJOB", b"TIMEOUT", b"100", b"COUNT", b"1", b"FROM", b"latency"]
    for c in consumers:
        node.execute(c, getjob)
    served = dict.fromkeys(consumers)  # oldest blocked first
    parser = RequestParser()
    adds = [encode("ADDJOB", "latency", b"%016x" % i, 0, "REPLICATE", 1) for i in range(n)]
    execute = node.execute
    start = time.perf_counter()
    for request in adds:
        for argv in parser.feed(request):
            execute(producer, argv)
        producer.out.clear()
        consumer = next(iter(served))
        del served[consumer]
        reply = b"".join(consumer.out)
        consumer.out.clear()
        job_id = reply.split(b"\r\n")[5]  # *1 *3 $7 latency $40 <id> ...
        for argv in parser.feed(encode("ACKJOB", job_id) + encode(*getjob)):
            execute(consumer, argv)
        consumer.out.clear()
        served[consumer] = None
    elapsed = time.perf_counter() - start
    if node.jobs or any(c.blocked is None for c in consumers):
        raise RuntimeError("a job was not acked, or a consumer not blocked again")
    return elapsed


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


def callgrind(n, shuffle, kind="plain"):
    """Instructions per command of each phase."""
    def total(upto):
        argv = [sys.executable, "-m", "bench.instructions", "-n", str(n),
                "--phases", ",".join(upto), "--kind", kind]
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


def cycle_costs(n, shuffle, callgrind_on):
    """ADDJOB + GETJOB + ACKJOB of one job, by kind (``KINDS``):
    instructions (callgrind: a run of the three phases less a run that
    only builds the same requests, two runs a kind) or microseconds."""
    costs = {}
    for kind in KINDS:
        if callgrind_on:
            def total(upto):
                return instructions([sys.executable, "-m", "bench.instructions", "-n", str(n),
                                     "--phases", ",".join(upto), "--kind", kind]
                                    + (["--shuffle"] if shuffle else []))
            costs[kind] = (total(("ADDJOB", "GETJOB", "ACKJOB")) - total(("NOJOBS",))) / n
        else:
            per = measure(n, PHASES[1:], shuffle, kind)
            costs[kind] = per["ADDJOB"] + per["GETJOB"] + per["ACKJOB"]
    return costs


def cycle_report(costs, n, callgrind_on):
    unit = "instructions" if callgrind_on else "us"
    plain = costs["plain"]
    lines = [f"ADDJOB + GETJOB + ACKJOB of one job, {n} jobs of each kind, "
             f"pipelined 16 at a time ({unit})",
             f"  {'kind':8} {'cycle':>10}  vs plain"]
    for kind, cycle in costs.items():
        lines.append(f"  {kind:8} {cycle:10,.{0 if callgrind_on else 2}f}  {cycle / plain:8.3f}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.instructions")
    parser.add_argument("-n", type=int, default=None)
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--shuffle", action="store_true",
                        help="ack in a shuffled order (blocks of 100)")
    parser.add_argument("--policies", action="store_true",
                        help="a job cycle's cost: plain, with MAXDELIVERIES 5 PRIORITY 7, "
                             "in a queue with that QCONFIG")
    parser.add_argument("--waiter", action="store_true",
                        help="a job's cycle in e2e-local-r1's single-node path: ADDJOB "
                             "REPLICATE 1 served to a blocked GETJOB, ACKJOB, GETJOB again")
    parser.add_argument("--phases", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--kind", default="plain", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--waiter-run", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.waiter:
        n = args.n or (10000 if args.callgrind else 100000)
        if args.waiter_run:  # one run under callgrind
            waiter_cycles(n)
            return
        if args.callgrind:
            def total(cycles):
                return instructions([sys.executable, "-m", "bench.instructions", "--waiter",
                                     "--waiter-run", "-n", str(cycles)])
            per = (total(2 * n) - total(n)) / n
            print(f"e2e-local-r1's single-node cycle, {n} jobs: {per:,.0f} instructions a job")
        else:
            print(f"e2e-local-r1's single-node cycle, {n} jobs: "
                  f"{waiter_cycles(n) / n * 1e6:.2f} us a job")
        return
    if args.phases is not None:  # one run under callgrind
        measure(args.n, args.phases.split(",") if args.phases else (), args.shuffle,
                args.kind)
        return
    if args.policies:
        n = args.n or (10000 if args.callgrind else 100000)
        print(cycle_report(cycle_costs(n, args.shuffle, args.callgrind), n, args.callgrind))
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
