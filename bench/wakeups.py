"""What one unpipelined replicated job costs each node (issue 29, item 2).

    python -m bench.wakeups [-n N] [--replicate R] [--e2e] [--disque PATH]
    python -m bench.wakeups --rate JOBS_PER_S [--seconds S] [--disque PATH]

A 3-node cluster (trisque, or Disque C with ``--disque``); one client sends
``ADDJOB q <body> 0 REPLICATE R`` to the first node and waits for each
reply before the next, so every job is a wake-up of the origin and of each
replica, nothing batched: the cost per wake-up that decides the latency of
a lone job (bench/README.md, "Latency, open loop").  Per node: CPU per
job (/proc/<pid>/schedstat's ns), its user and system parts
(/proc/<pid>/stat's 10 ms ticks: coarse over a short run) and context
switches per job (/proc/<pid>/status: voluntary ones are the sleeps).
With ``--e2e`` a second client waits in ``GETJOB`` on the first node
before each ADDJOB, and the time from the ADDJOB's send to the GETJOB's
reply is reported (p50/p90/p99, closed loop: one job at a time).

With ``--rate`` the jobs come instead on bench/latency.py's open-loop
schedule, end to end on the first node (its ``e2e-local`` scenario: 16
producers, 8 consumers in GETJOB, each job acked) at a fixed rate for
``--seconds``: CPU and sleeps per job at a rate where several jobs may
share a turn, with the latency of ``got`` (bench/README.md, "Fewer
wake-ups a job").

Run it under ``chrt -f 10`` on a shared machine: the figures are CPU per
job, but a node preempted between its wake-ups finds its caches cold.
"""

import argparse
import os
import time

import hiredis

from . import client, latency
from .cluster import start_cluster
from .servers import start_disque, start_trisque

WARMUP = 200


def _stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])  # utime, stime (clock ticks)


def _switches(pid):
    voluntary = involuntary = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches"):
                voluntary = int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches"):
                involuntary = int(line.split()[1])
    return voluntary, involuntary


class _Conn:
    def __init__(self, port):
        self.sock = client.connect(port)
        self.reader = hiredis.Reader()

    def reply(self):
        while True:
            got = self.reader.gets()
            if got is not False:
                return got
            self.reader.feed(self.sock.recv(65536))

    def call(self, request):
        self.sock.sendall(request)
        return self.reply()

    def close(self):
        self.sock.close()


def _counters(nodes):
    return [(n.cpu_seconds(), _stat(n.proc.pid), _switches(n.proc.pid)) for n in nodes]


def _per_node(nodes, jobs, before):
    """Per node per job: CPU us, user us, system us, voluntary and
    involuntary switches, since ``before`` (``_counters``)."""
    ticks = os.sysconf("SC_CLK_TCK")
    per_node = []
    for (cpu0, (u0, s0), (v0, i0)), (cpu1, (u1, s1), (v1, i1)) in zip(before, _counters(nodes)):
        per_node.append(((cpu1 - cpu0) * 1e6 / jobs,
                         (u1 - u0) / ticks * 1e6 / jobs, (s1 - s0) / ticks * 1e6 / jobs,
                         (v1 - v0) / jobs, (i1 - i0) / jobs))
    return per_node


def measure_at_rate(nodes, rate, seconds):
    """Per node (as ``measure``) per job of an open-loop end-to-end run at
    ``rate`` jobs/s, and the run (bench.latency.Run: its histograms)."""
    port = nodes[0].port
    latency.open_loop(port, rate, 1.0, "jobs", port)  # warm-up
    latency.flush(nodes)
    before = _counters(nodes)
    run = latency.open_loop(port, rate, seconds, "jobs", port)
    if not run.produced:
        raise RuntimeError("the open-loop run produced no job")
    return _per_node(nodes, run.produced, before), run


def measure(nodes, jobs, replicate, e2e=False):
    """Per node per job (``_per_node``), the wall time per job, and
    (``e2e``) the sorted latencies (s)."""
    adder = _Conn(nodes[0].port)
    getter = _Conn(nodes[0].port) if e2e else None
    request = client.encode("ADDJOB", "q", b"x" * 12, 0, "REPLICATE", replicate)
    for _ in range(WARMUP):
        adder.call(request)
    latencies = []
    before = _counters(nodes)
    started = time.perf_counter()
    if e2e:
        add = client.encode("ADDJOB", "e2e", b"x" * 12, 0, "REPLICATE", replicate)
        get = client.encode("GETJOB", "TIMEOUT", 5000, "FROM", "e2e")
        for _ in range(jobs):
            getter.sock.sendall(get)
            time.sleep(0.0002)  # (the GETJOB blocks before the job comes)
            sent = time.perf_counter()
            adder.sock.sendall(add)
            getter.reply()
            latencies.append(time.perf_counter() - sent)
            adder.reply()
    else:
        for _ in range(jobs):
            adder.call(request)
    wall = (time.perf_counter() - started) / jobs
    per_node = _per_node(nodes, jobs, before)
    adder.close()
    if getter is not None:
        getter.close()
    latencies.sort()
    return per_node, wall, latencies


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--jobs", type=int, default=5000)
    parser.add_argument("--replicate", type=int, default=3)
    parser.add_argument("--e2e", action="store_true",
                        help="time ADDJOB -> a GETJOB waiting on the same node")
    parser.add_argument("--disque", help="disque-server: measure Disque C instead")
    parser.add_argument("--rate", type=float,
                        help="jobs/s: end to end on an open-loop schedule instead")
    parser.add_argument("--seconds", type=float, default=4.0,
                        help="the --rate run's length (default 4)")
    args = parser.parse_args(argv)
    start = (lambda: start_disque(args.disque)) if args.disque else start_trisque
    nodes = start_cluster(3, start)
    latencies = []
    try:
        if args.rate:
            per_node, run = measure_at_rate(nodes, args.rate, args.seconds)
        else:
            per_node, wall, latencies = measure(nodes, args.jobs, args.replicate, args.e2e)
    finally:
        for n in nodes:
            n.stop()
    server = "Disque C" if args.disque else "trisque"
    if args.rate:
        print(f"{server}, 3 nodes, end to end (ADDJOB, GETJOB, ACKJOB) at "
              f"{args.rate:.0f} jobs/s for {args.seconds:.0f} s: {run.produced} jobs "
              f"(load {os.getloadavg()[0]:.1f})")
    else:
        print(f"{server}, 3 nodes, ADDJOB REPLICATE {args.replicate}, {args.jobs} jobs one "
              f"at a time: {wall * 1e6:.0f} us a job (load {os.getloadavg()[0]:.1f})")
    for i, (cpu, user, system, voluntary, involuntary) in enumerate(per_node):
        role = "origin " if i == 0 else "replica"
        print(f"  {role} cpu {cpu:6.1f} us (user {user:6.1f}, system {system:6.1f})  "
              f"sleeps {voluntary:4.2f}  preempted {involuntary:4.2f}  a job")
    if args.rate and "got" in run.histograms:
        got = run.histograms["got"]
        print("  ADDJOB -> a waiting GETJOB has it: " + "  ".join(
            f"p{q:g} {got.get_value_at_percentile(q) / 1000:.0f} us"
            for q in latency.PERCENTILES))
    if latencies:
        def at(q):
            return latencies[min(len(latencies) - 1, int(len(latencies) * q))] * 1e6
        print(f"  ADDJOB -> waiting GETJOB on the origin: p50 {at(0.5):.0f} us  "
              f"p90 {at(0.9):.0f}  p99 {at(0.99):.0f}")


if __name__ == "__main__":
    main()
