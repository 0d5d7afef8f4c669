"""What a job waits, measured open-loop (issue 29).

    python -m bench latency [--seconds S] [--rates 0.1,0.5,0.8] [--disque PATH]
                            [--scenarios NAME,...] [--nodes N] [--plot FILE]

bench/loadgen.c's open mode sends requests on a fixed schedule whatever the
server does and times each from when it was due, so a stalled server shows
in the figures instead of slowing the load down (closed-loop benchmarks
hide tails that way: coordinated omission).  Each latency goes into an HDR
histogram; the table shows p50, p90, p99, p99.9 and max in microseconds.

Scenarios (``--scenarios``, all by default), each on a cluster of
``--nodes`` trisque nodes, the same of Disque C with ``--disque``, and
redis-server as the floor (LPUSH, and LPUSH -> BRPOP end to end):
- addjob-r1, addjob-r3, addjob-r3-async: ADDJOB REPLICATE 1 / 3 / 3 ASYNC
  on the first node, the reply timed;
- e2e-local: ADDJOB on the first node until a consumer blocked in GETJOB on
  that node has the job ("got"), and until its ACKJOB replied ("acked");
- e2e-local-r1: the same with ADDJOB REPLICATE 1: the single-node path (a
  GETJOB waiter getting a job added on its node), no replica involved;
- e2e-federated: the same with the consumers on the second node (the job
  reaches them by federation: NEEDJOBS / YOURJOBS).

Offered rates are fractions (``--rates``) of a measured maximum: Disque C's
when it is measured (the issue's goal compares at its rates), else
trisque's; every server gets the same schedule.  ``--at`` gives rates in
jobs/s instead, and no maximum is measured.  A scenario's maximum is a
closed-loop run of its ADDJOB over the same connections; end to end, the
acked jobs a second under an open-loop overload, until the last was acked.  ``--backlog N`` keeps N
jobs queued on the first node through the run, so the tails include what
a large heap costs (the cyclic collector's full passes walk every job).
``--repeat N`` runs each rate N times, the servers in turn each time: near
the machine's cap one run's tail is chance, and the spread is the figure.

Each row also says how busy the machine was: ``cpu%``, the CPU the
scenario's servers and the generator used over the run, as a share of all
the machine's cores, and ``waitms``, how long the servers' processes were
runnable but waiting for a core (/proc/PID/schedstat); ``us/job`` and
``runs/job``, the servers' CPU and the times one of them was put on a core
(a wake-up, mostly), per job sent.  Under ``chrt -f
10`` the real-time class may use 95% of the machine (sched_rt_runtime_us):
near that, every process of the bench is stopped for ~50 ms once a second,
and a tail there is the machine's (bench/README.md, "Tails below
saturation, twenty-third session").
"""

from __future__ import annotations

import array
import dataclasses
import os
import resource
import statistics
import tempfile
import time
from typing import Sequence

from hdrh.histogram import HdrHistogram

from . import client
from .cluster import start_cluster
from .servers import Server, start_disque, start_redis, start_trisque

PRODUCERS = 16   # connections sending the schedule
CONSUMERS = 8    # connections blocked in GETJOB / BRPOP, end to end
PERCENTILES = (50.0, 90.0, 99.0, 99.9)
MAX_NS = 60 * 10**9  # the histograms' range: 1 ns .. 60 s, 3 significant digits


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    kind: str            # loadgen's KIND for the job servers
    end_to_end: bool     # consumers read (and ack) what the producers add
    consumer_node: int   # which node of the cluster the consumers talk to


SCENARIOS = {s.name: s for s in (
    Scenario("addjob-r1", "jobs:1", False, 0),
    Scenario("addjob-r3", "jobs:3", False, 0),
    Scenario("addjob-r3-async", "jobs:3:async", False, 0),
    Scenario("e2e-local", "jobs", True, 0),
    Scenario("e2e-local-r1", "jobs:1", True, 0),
    Scenario("e2e-federated", "jobs", True, 1),
)}


@dataclasses.dataclass
class Run:
    """One open-loop run: counts, and a histogram per measured point."""
    produced: int
    errors: int
    lost: int
    histograms: dict[str, HdrHistogram]  # "sent" / "got" / "acked"
    elapsed: float  # s, from the first due time until the last reply
    cpu_share: float = float("nan")  # servers' and generator's CPU / (wall x cores)
    waited_ms: float = float("nan")  # servers' time runnable without a core
    # Per job sent, over all the scenario's servers: the CPU they used
    # (us), and how often one of them was put on a core (a wake-up each,
    # mostly): what a job costs the machine, beside what it waits.
    cpu_us_per_job: float = float("nan")
    runs_per_job: float = float("nan")


def _cpu_and_wait(pids: Sequence[int]) -> tuple[float, float, int]:
    """CPU seconds used, seconds spent waiting for a core, and times put on
    a core, summed over ``pids`` (Linux's /proc/PID/schedstat: run ns,
    run-queue wait ns, timeslices)."""
    used = waited = 0.0
    runs = 0
    for pid in pids:
        with open(f"/proc/{pid}/schedstat") as f:
            run_ns, wait_ns, slices = f.read().split()[:3]
        used += int(run_ns) / 1e9
        waited += int(wait_ns) / 1e9
        runs += int(slices)
    return used, waited, runs


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def open_loop(port: int, rate: float, seconds: float, kind: str,
              consume_port: int | None = None, servers: Sequence[Server] = ()) -> Run:
    binary = client.loadgen_binary()
    if binary is None:
        raise RuntimeError("no C compiler to build bench/loadgen.c")
    pids = [s.proc.pid for s in servers]
    with tempfile.TemporaryDirectory(prefix="trisque-latency-") as tmp:
        out = os.path.join(tmp, "lat")
        args = [port, PRODUCERS, rate, seconds, kind, out]
        if consume_port is not None:
            args += [consume_port, CONSUMERS]
        try:
            before = _cpu_and_wait(pids)
        except (OSError, ValueError):  # (no /proc/PID/schedstat here)
            pids = []
        started, children = time.monotonic(), _children_cpu()
        got = client.run_loadgen("open", *args)
        wall, generator = time.monotonic() - started, _children_cpu() - children
        cpu_share = waited_ms = cpu_us_per_job = runs_per_job = float("nan")
        if pids:
            after = _cpu_and_wait(pids)
            cpu_share = (after[0] - before[0] + generator) / (wall * (os.cpu_count() or 1))
            waited_ms = (after[1] - before[1]) * 1000
            jobs = max(1, int(got["produced"]))
            cpu_us_per_job = (after[0] - before[0]) * 1e6 / jobs
            runs_per_job = (after[2] - before[2]) / jobs
        histograms = {}
        for point in ("sent", "got", "acked"):
            values = array.array("q")
            with open(f"{out}.{point}", "rb") as f:
                values.frombytes(f.read())
            if values:
                h = HdrHistogram(1, MAX_NS, 3)
                for ns in values:
                    h.record_value(min(max(ns, 1), MAX_NS))
                histograms[point] = h
    return Run(int(got["produced"]), int(got["errors"]), int(got["lost"]), histograms,
               got["elapsed"], cpu_share, waited_ms, cpu_us_per_job, runs_per_job)


def flush(servers: Sequence[Server], backlog: int = 0) -> None:
    """Empty the scenarios' queue; a backlog (``fill_backlog``) stays."""
    if servers[0].kind == "redis":
        servers[0].client.delete("latency")
        return
    if not backlog:
        for s in servers:
            s.client.execute_command("DEBUG", "FLUSHALL")
        return
    origin = servers[0].client
    while True:
        jobs = origin.execute_command("GETJOB", "NOHANG", "COUNT", 10000, "FROM", "latency")
        if not jobs:
            break
        origin.execute_command("FASTACK", *[job[1] for job in jobs])
    deadline = time.monotonic() + 60
    while sum(int(s.info()["registered_jobs"]) for s in servers) > backlog:
        if time.monotonic() > deadline:
            raise RuntimeError("the scenarios' jobs were not all deleted")
        time.sleep(0.1)


def fill_backlog(servers: Sequence[Server], jobs: int) -> None:
    """``jobs`` jobs (list items on redis-server) queued on the first node
    for the whole run: a heap of the size a loaded node holds, which the
    collector walks and the allocator serves around."""
    if not jobs:
        return
    if servers[0].kind == "redis":
        one = client.encode("LPUSH", "backlog", b"x" * 100)
    else:
        one = client.encode("ADDJOB", "backlog", b"x" * 100, 0, "REPLICATE", 1)
    result = client.replay(servers[0].port, [one] * jobs, clients=4, pipeline=64,
                           loader="c-lean")
    if result.errors:
        raise RuntimeError(f"{result.errors} backlog writes failed")


def addjob_maximum(node: Server, kind: str, requests: int) -> float:
    """Closed loop: ADDJOBs a second over PRODUCERS connections, pipeline 1."""
    fields = kind.split(":")
    options: list[object] = []
    if len(fields) > 1:
        options += ["REPLICATE", fields[1]]
    if fields[2:] == ["async"]:
        options.append("ASYNC")
    one = client.encode("ADDJOB", "latency", b"x" * 16, 0, *options)
    return client.replay(node.port, [one] * requests, clients=PRODUCERS, pipeline=1,
                         loader="c-lean").rate


def end_to_end_maximum(servers: Sequence[Server], scenario: Scenario, rate: float,
                       seconds: float) -> float:
    """Acked jobs a second under an open-loop overload of ``rate``: over
    the whole run, its drain included (over the schedule's ``seconds``
    alone, a server that finishes every job late still counts the
    offered rate, as if it had kept up)."""
    run = open_loop(servers[0].port, rate, seconds, scenario.kind,
                    servers[scenario.consumer_node].port)
    acked = run.histograms.get("acked")
    return (acked.get_total_count() if acked else 0) / max(run.elapsed, seconds)


@dataclasses.dataclass
class Row:
    scenario: str
    server: str
    rate: float
    point: str
    percentiles: tuple[float, ...]  # us, PERCENTILES then max
    lost: int
    errors: int
    cpu_share: float = float("nan")  # see Run
    waited_ms: float = float("nan")
    cpu_us_per_job: float = float("nan")
    runs_per_job: float = float("nan")


def rows_of(scenario: Scenario, server: str, rate: float, run: Run) -> list[Row]:
    points = ("got", "acked") if scenario.end_to_end else ("sent",)
    rows = []
    for point in points:
        h = run.histograms.get(point)
        if h is None:
            continue
        values = tuple(h.get_value_at_percentile(p) / 1000 for p in PERCENTILES)
        rows.append(Row(scenario.name, server, rate, point, values + (h.get_max_value() / 1000,),
                        run.lost, run.errors, run.cpu_share, run.waited_ms,
                        run.cpu_us_per_job, run.runs_per_job))
    return rows


def run(seconds: float, fractions: Sequence[float], scenarios: Sequence[Scenario],
        nodes: int, disque: str | None, max_requests: int,
        plot: str | None, backlog: int = 0, at: Sequence[float] = (),
        repeat: int = 1) -> list[Row]:
    """Each scenario at each fraction of its maximum, or at each rate of
    ``at`` (jobs/s; then no maximum is measured), ``repeat`` times in turn
    (near the machine's cap one run's tail is chance: see bench/README.md)."""
    clusters: dict[str, list[Server]] = {}
    try:
        clusters["trisque"] = start_cluster(nodes, start_trisque)
        if disque:
            clusters["disque"] = start_cluster(nodes, lambda: start_disque(disque))
        clusters["redis"] = [start_redis()]
        for servers in clusters.values():
            fill_backlog(servers, backlog)
        rows: list[Row] = []
        for scenario in scenarios:
            rates = list(at)
            if not rates:
                reference = maximum(clusters, scenario, seconds, max_requests, backlog)
                rates = [max(1.0, f * reference) for f in fractions]
            for rate in [r for r in rates for _ in range(repeat)]:
                for name, servers in clusters.items():
                    flush(servers, backlog)
                    if name == "redis":
                        got = open_loop(servers[0].port, rate, seconds, "lists",
                                        servers[0].port if scenario.end_to_end else None,
                                        servers)
                    else:
                        got = open_loop(servers[0].port, rate, seconds, scenario.kind,
                                        servers[scenario.consumer_node].port
                                        if scenario.end_to_end else None, servers)
                    these = rows_of(scenario, name, rate, got)
                    print_rows(these, header=False)
                    rows += these
        print()
        print_rows(rows, header=True)
        if plot:
            draw(rows, plot)
        return rows
    finally:
        for servers in clusters.values():
            for s in servers:
                s.stop()


def maximum(clusters: dict[str, list[Server]], scenario: Scenario, seconds: float,
            max_requests: int, backlog: int) -> float:
    """The scenario's maximum the rates are fractions of: Disque C's when
    it runs, else trisque's (each measured, and printed)."""
    maxima = {}
    for name in ("trisque", "disque"):
        servers = clusters.get(name)
        if servers is None:
            continue
        flush(servers, backlog)
        maxima[name] = addjob_maximum(servers[0], scenario.kind, max_requests)
        if scenario.end_to_end:
            flush(servers, backlog)
            maxima[name] = end_to_end_maximum(servers, scenario, maxima[name],
                                              min(seconds, 2.0))
        flush(servers, backlog)
    shown = ", ".join(f"{k} {v:,.0f}/s" for k, v in maxima.items())
    print(f"{scenario.name}: maximum {shown}", flush=True)
    return maxima.get("disque", maxima["trisque"])


def print_rows(rows: Sequence[Row], header: bool) -> None:
    if header:
        names = " ".join(f"{'p' + format(p, 'g'):>9}" for p in PERCENTILES)
        print(f"{'scenario':<16} {'server':<8} {'rate/s':>8} {'point':<6} {names} "
              f"{'max':>9}  lost errors  cpu% waitms us/job runs/job   (us)")
    for r in rows:
        figures = " ".join(f"{v:9.0f}" for v in r.percentiles)
        print(f"{r.scenario:<16} {r.server:<8} {r.rate:8.0f} {r.point:<6} {figures} "
              f"{r.lost:5d} {r.errors:6d} {r.cpu_share * 100:5.0f} {r.waited_ms:6.0f} "
              f"{r.cpu_us_per_job:6.1f} {r.runs_per_job:8.2f}",
              flush=True)


def draw(rows: Sequence[Row], path: str) -> None:
    """p99 (solid) and p99.9 (dashed) against the offered rate, one line
    per server, one panel per scenario and point."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = sorted({(r.scenario, r.point) for r in rows},
                    key=lambda sp: (list(SCENARIOS).index(sp[0]), sp[1] != "got"))
    columns = min(4, len(panels))
    rows_n = (len(panels) + columns - 1) // columns
    fig, axes = plt.subplots(rows_n, columns, figsize=(4 * columns, 3.4 * rows_n),
                             squeeze=False)
    for ax, (scenario, point) in zip(axes.flat, panels):
        for server in ("trisque", "disque", "redis"):
            runs: dict[float, list[Row]] = {}
            for r in rows:
                if (r.scenario, r.point, r.server) == (scenario, point, server):
                    runs.setdefault(r.rate, []).append(r)
            if not runs:
                continue
            rates = sorted(runs)  # (a repeated rate drawn at its runs' median)
            p99 = [statistics.median(r.percentiles[2] for r in runs[x]) for x in rates]
            p999 = [statistics.median(r.percentiles[3] for r in runs[x]) for x in rates]
            line = ax.plot(rates, p99, marker="o", label=f"{server} p99")[0]
            ax.plot(rates, p999, linestyle="--", color=line.get_color(),
                    label=f"{server} p99.9")
        ax.set_title(f"{scenario} ({point})", fontsize=9)
        ax.set_xlabel("offered rate (per s)")
        ax.set_ylabel("latency (us)")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    print(f"plot: {path}")


def main(argv: Sequence[str] | None = None) -> None:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m bench latency", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0,
                        help="length of each open-loop run (default 5)")
    parser.add_argument("--rates", default="0.1,0.5,0.8",
                        help="offered rates as fractions of the maximum")
    parser.add_argument("--at", metavar="RATES", default="",
                        help="offered rates in jobs/s (comma-separated) instead of "
                             "fractions: no maximum is measured")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help="comma-separated: " + ", ".join(SCENARIOS))
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--disque", metavar="PATH", help="also run a cluster of this disque-server")
    parser.add_argument("--max-requests", type=int, default=100000,
                        help="ADDJOBs of each closed-loop maximum run")
    parser.add_argument("--plot", metavar="FILE", help="draw the p99/p99.9 curves (PNG/SVG)")
    parser.add_argument("--backlog", type=int, default=0,
                        help="jobs kept queued on the first node through the run "
                             "(list items on redis-server): the heap of a loaded node")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each rate, the servers in turn each time (default 1)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be 1 or more")
    chosen = [SCENARIOS[name] for name in args.scenarios.split(",")]
    if any(s.consumer_node >= args.nodes for s in chosen):
        parser.error("e2e-federated needs --nodes 2 or more")
    run(args.seconds, [float(x) for x in args.rates.split(",")], chosen, args.nodes,
        args.disque, args.max_requests, args.plot, args.backlog,
        [float(x) for x in args.at.split(",") if x], args.repeat)


if __name__ == "__main__":
    main()
