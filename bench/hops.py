"""Where a lone job's time goes, hop by hop (issue 29, point 2).

    python -m bench.hops [--rate 2493] [--seconds 2] [--disque PATH]

bench/latency.py's ``e2e-local`` schedule on a 3-node cluster, at a rate
where jobs seldom overlap, under ``perf record -a`` on the writes begun
and the epoll_waits returned (perf's own left out: recording them would
record its own writes).  Each job's path to its
consumer is cut where one process hands it to the next:

  generator's ADDJOB write -> the origin wakes -> its first write (the copies)
  -> the replica that answers last wakes -> its write (GOTJOB) -> the origin
  wakes -> its first write (the job, to its consumer) -> the generator wakes

so the hops add up to the job's time from its ADDJOB's send to the
generator holding it.  "work" hops are a process running, "hand-off" hops a
wake-up: a write waking a process that then waits for a core.  With
``--disque`` Disque C's cluster runs the same schedule after trisque's.
Needs perf with tracepoints (run as root); x86-64 system call numbers.
"""

import argparse
import os
import re
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import latency
from .client import encode
from .cluster import start_cluster
from .servers import start_disque, start_trisque

WRITE, EPOLL_WAIT = 1, 232  # x86-64
PERF_EVENTS = ("-e", "raw_syscalls:sys_enter", "--filter", f"id == {WRITE}", "--exclude-perf",
               "-e", "raw_syscalls:sys_exit", "--filter", f"id == {EPOLL_WAIT}",
               "--exclude-perf")
# The generator's ADDJOB in e2e-local: one per write at these rates.
ADDJOB_SIZE = len(encode("ADDJOB", "latency", "0" * 16, "0"))

HOPS = ("generator -> origin", "origin: ADDJOB", "origin -> replica", "replica: REPLJOB",
        "replica -> origin", "origin: GOTJOB", "origin -> generator")
WORK = (1, 3, 5)  # HOPS' indexes of a process running; the rest are hand-offs


@dataclass(frozen=True)
class Event:
    t_us: float
    pid: int
    kind: str  # "woke": its epoll_wait returned; "write": a write began
    size: int  # a write's byte count


_LINE = re.compile(r"\s*(\S+)\s+(\d+)\s+\[\d+\]\s+([\d.]+):\s+(\S+):\s*(.*)")
_ENTER = re.compile(r"NR (\d+) \(\w+, \w+, (\w+)")


def parse(lines: Iterable[str]) -> tuple[list[Event], dict[int, str]]:
    """``perf script -F comm,pid,cpu,time,event,trace``'s lines: the
    events in time order, and each pid's command name."""
    events = []
    comms = {}
    for line in lines:
        m = _LINE.match(line)
        if m is None:
            continue
        comm, pid_s, t_s, name, rest = m.groups()
        pid = int(pid_s)
        comms[pid] = comm
        t_us = float(t_s) * 1e6
        if name == "raw_syscalls:sys_enter":
            call = _ENTER.match(rest)
            if call is not None and int(call.group(1)) == WRITE:
                events.append(Event(t_us, pid, "write", int(call.group(2), 16)))
        elif name == "raw_syscalls:sys_exit" and rest.startswith(f"NR {EPOLL_WAIT} "):
            events.append(Event(t_us, pid, "woke", 0))
    events.sort(key=lambda e: e.t_us)
    return events, comms


def _first(events: Sequence[Event], pid: int, kind: str, start: int, stop: int) -> int | None:
    """The index of ``pid``'s first ``kind`` event in events[start:stop]."""
    for j in range(start, stop):
        if events[j].pid == pid and events[j].kind == kind:
            return j
    return None


def hops(events: Sequence[Event], origin: int, replicas: Sequence[int], generator: int,
         addjob_size: int = ADDJOB_SIZE) -> list[list[float]]:
    """Per job whose whole path lies before the next job's ADDJOB: the
    HOPS' durations in µs (they add up to its time to the generator)."""
    starts = [i for i, e in enumerate(events)
              if e.pid == generator and e.kind == "write" and e.size == addjob_size]
    jobs = []
    for a, b in zip(starts, starts[1:]):
        woke = _first(events, origin, "woke", a, b)
        if woke is None:
            continue
        copies = _first(events, origin, "write", woke, b)
        if copies is None:
            continue
        answers = []
        for replica in replicas:
            r_woke = _first(events, replica, "woke", copies, b)
            r_wrote = _first(events, replica, "write", r_woke, b) if r_woke is not None else None
            if r_woke is None or r_wrote is None:
                break
            answers.append((r_wrote, r_woke))
        if len(answers) != len(replicas):
            continue
        last_wrote, last_woke = max(answers)
        got = _first(events, generator, "woke", last_wrote, b)
        if got is None:
            continue
        # (the origin may be running already when the last GOTJOB comes)
        back = _first(events, origin, "woke", last_wrote, b)
        if back is None or back > got:
            back = last_wrote
        # Both servers write the job to its consumer first, then the
        # ADDJOB's reply: the first write wakes the generator (its cost,
        # an IPI on a VM, is the hand-off's).
        delivered = _first(events, origin, "write", back, b)
        if delivered is None or delivered > got:
            continue
        marks = [a, woke, copies, last_woke, last_wrote, back, delivered, got]
        jobs.append([events[y].t_us - events[x].t_us for x, y in zip(marks, marks[1:])])
    return jobs


def record(server: str, rate: float, seconds: float, disque: str | None) -> list[list[float]]:
    """A cluster of ``server`` under perf on e2e-local at ``rate``: hops()."""
    nodes = start_cluster(3, (lambda: start_disque(disque)) if server == "disque"
                          else start_trisque)
    with tempfile.TemporaryDirectory(prefix="trisque-hops-") as tmp:
        data = os.path.join(tmp, "perf.data")
        try:
            scenario = latency.SCENARIOS["e2e-local"]
            port = nodes[0].port
            latency.open_loop(port, rate, 1.0, scenario.kind, port)  # warm-up
            latency.flush(nodes)
            perf = subprocess.Popen(["perf", "record", "-q", "-a", "-o", data, *PERF_EVENTS],
                                    stdout=subprocess.DEVNULL)
            time.sleep(1.0)  # (perf attaches)
            latency.open_loop(port, rate, seconds, scenario.kind, port)
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=60)
            pids = [n.proc.pid for n in nodes]
        finally:
            for n in nodes:
                n.stop()
        script = subprocess.run(["perf", "script", "-i", data,
                                 "-F", "comm,pid,cpu,time,event,trace"],
                                capture_output=True, text=True, check=True)
    events, comms = parse(script.stdout.splitlines())
    generators = [p for p, c in comms.items() if c.startswith("loadgen")]
    if len(generators) != 1:
        raise RuntimeError(f"expected one load generator in the trace, found {generators}")
    return hops(events, pids[0], pids[1:], generators[0])


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(runs: dict[str, list[list[float]]]) -> str:
    """Median µs a hop for each server, and the sums of work and hand-offs."""
    names = list(runs)
    lines = [f"{'hop (median µs)':22}" + "".join(f"{n:>12}" for n in names)]
    for i, hop in enumerate(HOPS):
        kind = "work" if i in WORK else "hand-off"
        lines.append(f"{hop:22}" + "".join(f"{median([j[i] for j in runs[n]]):12.0f}"
                                           for n in names) + f"   ({kind})")
    for label, picked in (("work", WORK), ("hand-offs", tuple(set(range(len(HOPS))) - set(WORK)))):
        lines.append(f"{label:22}" + "".join(
            f"{median([sum(j[i] for i in picked) for j in runs[n]]):12.0f}" for n in names))
    lines.append(f"{'to the generator':22}" + "".join(
        f"{median([sum(j) for j in runs[n]]):12.0f}" for n in names))
    lines.append(f"{'jobs':22}" + "".join(f"{len(runs[n]):12d}" for n in names))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=2493.0, help="jobs/s (default 2493)")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--disque", help="disque-server: the same schedule on Disque C after")
    args = parser.parse_args(argv)
    runs = {"trisque": record("trisque", args.rate, args.seconds, None)}
    if args.disque:
        runs["Disque C"] = record("disque", args.rate, args.seconds, args.disque)
    print(f"e2e-local at {args.rate:.0f} jobs/s for {args.seconds:g} s, 3 nodes, per job:")
    print(table(runs))


if __name__ == "__main__":
    main()
