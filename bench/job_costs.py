"""What one job costs each node at a fixed low rate, in counts rather than
time (issue 29, item 2).

    python -m bench.job_costs --rate 1000 [--seconds 4] [--scenario e2e-local] [--disque D]
    python -m bench.job_costs --rate 100 --callgrind 0 [--keep DIR]

A 3-node cluster (trisque, or Disque C with ``--disque``) gets
bench/latency.py's open-loop schedule at ``--rate`` jobs/s for
``--seconds`` (a 1 s run first to warm up): ``e2e-local`` (ADDJOB on the
first node, consumers in GETJOB there, each job acked) or ``addjob-r3``.
Per node and per job produced:

- system calls by kind, counted by ``perf stat`` on the syscall
  tracepoints (cheap: no ptrace), and the turns of its loop (the
  ``epoll_wait`` calls): a count that does not depend on how fast the
  machine is at the moment, only on how jobs share a turn;
- user and system CPU (/proc/PID/stat) and sleeps (voluntary switches);
- with ``--callgrind N``: node N runs under valgrind's callgrind,
  instrumented only for the measured run, and its user-space instructions
  in the run (and 2 s after) over the jobs are counted: what a job costs
  the node at that rate, its share of the periodic work included.  The
  same length of idle time right after is counted too and given apart
  (the cron's ticks, gossip; part of it shares the jobs' turns in the run,
  so the difference is not a job's own cost, and it is the noisier
  figure).  Callgrind slows the node some 50 times: use a rate where it
  is still idle most of the time (100 jobs/s or less), where each job is
  a turn of its own: the cost of a lone job.  ``--keep DIR`` keeps the
  dump (callgrind_annotate reads it: where the turn goes).

The VM this was written on has no hardware counters for perf, hence
callgrind for instructions, and syscall counts for the kernel's share.
"""

import argparse
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import latency
from .cluster import start_cluster
from .servers import Server, free_port, start_disque, start_trisque
from .wakeups import _stat, _switches

CALLGRIND_TAIL_S = 2.0  # after the run, before the dump
PERF = shutil.which("perf") or "/usr/bin/perf"
# The calls a node's turn is made of (Python's sockets: recvfrom, sendto;
# Disque C's: read, write).  Everything else is counted in "other".
SYSCALLS = ("epoll_wait", "epoll_pwait", "epoll_ctl", "recvfrom", "sendto", "read", "write",
            "accept4", "getpid", "clock_nanosleep")


def inner_epoll_fd(pid):
    """The epoll set that another epoll set of the process watches (trio's,
    in the client loop's: shell/socket_set.py), or None (Disque C)."""
    epolls, watched = set(), set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:[eventpoll]":
                continue
            epolls.add(int(fd))
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                for line in f:
                    if line.startswith("tfd:"):
                        watched.add(int(line.split()[1]))
        except OSError:
            continue
    inner = epolls & watched
    return min(inner) if inner else None


class _Perf:
    """``perf stat`` of the syscall tracepoints of one process, and of its
    waits in trio's epoll set (``trio``: a pass of trio's scheduler)."""

    def __init__(self, pid):
        self.out = tempfile.NamedTemporaryFile(prefix="trisque-perf-", suffix=".csv",
                                               delete=False).name
        events = ["raw_syscalls:sys_enter"] + [f"syscalls:sys_enter_{s}" for s in SYSCALLS]
        argv = [PERF, "stat", "-x", ",", "-o", self.out, "-e", ",".join(events)]
        trio_fd = inner_epoll_fd(pid)
        if trio_fd is not None:
            argv += ["-e", "syscalls:sys_enter_epoll_wait", "--filter", f"epfd == {trio_fd}"]
        self.proc = subprocess.Popen([*argv, "-p", str(pid)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(10)
        counts = {}
        with open(self.out) as f:
            for line in f:
                fields = line.strip().split(",")
                if len(fields) < 3 or not fields[2]:
                    continue
                try:
                    value = int(fields[0])
                except ValueError:
                    continue
                name = fields[2].split(":")[-1].removeprefix("sys_enter_")
                counts["trio" if name in counts else name] = value  # (the filtered one)
        os.unlink(self.out)
        return counts


# The node under callgrind: ~50 times slower, so the client loop's bound on
# waiting for trio's other tasks (shell/socket_set.py's IDLE_WAIT_S, 1 ms
# of wall time) is scaled as much: at 1 ms every pass through trio would
# time out there, a path a node at full speed takes only when a task runs
# that long.
_SLOWED_NODE = """
import sys
import trisque.shell.socket_set as socket_set
socket_set.IDLE_WAIT_S *= 50
from trisque.server.main import main
sys.argv[0] = "trisque-server"
sys.exit(main())
"""


def start_callgrind(out_dir):
    """trisque-server under callgrind, instrumented only when told."""
    port = free_port()
    directory = tempfile.mkdtemp(prefix="trisque-bench-")
    argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
            f"--callgrind-out-file={out_dir}/callgrind.out",
            sys.executable, "-c", _SLOWED_NODE, "--port", str(port), "--bind", "127.0.0.1",
            "--dir", directory, "--loglevel", "warning", "--appendonly", "no"]
    return Server("trisque", argv, port, directory, timeout=120)


def _callgrind_control(pid, *flags):
    subprocess.run(["callgrind_control", *flags, str(pid)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)


def _dumped_total(out_dir, before):
    """The instructions of the dump made after the files in ``before``."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        new = sorted(set(glob.glob(f"{out_dir}/callgrind.out*")) - before,
                     key=os.path.getmtime)
        for path in new:
            with open(path) as f:
                for line in f:
                    if line.startswith(("summary:", "totals:")):
                        return path, int(line.split()[1])
        time.sleep(0.2)
    raise RuntimeError("callgrind wrote no dump")


def measure(nodes, scenario, rate, seconds, callgrind=None, out_dir=None):
    """Per node: {name: per job}, and the run (bench.latency.Run)."""
    port = nodes[0].port
    consume = nodes[scenario.consumer_node].port if scenario.end_to_end else None
    pids = [n.proc.pid for n in nodes]
    if callgrind is not None:
        # (on before the warm-up: the code is translated again once on)
        _callgrind_control(pids[callgrind], "-i", "on")
    latency.open_loop(port, rate, 1.0, scenario.kind, consume)  # warm-up
    latency.flush(nodes)
    perfs = [_Perf(p) for p in pids]
    time.sleep(0.5)  # (perf attaches)
    cpu_before = [_stat(p) for p in pids]
    switches_before = [_switches(p) for p in pids]
    if callgrind is not None:
        _callgrind_control(pids[callgrind], "-z")
        started = time.monotonic()
    run = latency.open_loop(port, rate, seconds, scenario.kind, consume)
    instructions = idle = None
    if callgrind is not None:
        time.sleep(CALLGRIND_TAIL_S)  # (the slowed node catches up)
        before = set(glob.glob(f"{out_dir}/callgrind.out*"))
        _callgrind_control(pids[callgrind], "-d")
        window = time.monotonic() - started
        _path, instructions = _dumped_total(out_dir, before)
    cpu_after = [_stat(p) for p in pids]
    switches_after = [_switches(p) for p in pids]
    counts = [p.stop() for p in perfs]
    if callgrind is not None:
        # as long idle: the cron, gossip, the loop's timers
        _callgrind_control(pids[callgrind], "-z")
        time.sleep(window)
        before = set(glob.glob(f"{out_dir}/callgrind.out*"))
        _callgrind_control(pids[callgrind], "-d")
        _path, idle = _dumped_total(out_dir, before)
    jobs = run.produced
    if not jobs:
        raise RuntimeError("the open-loop run produced no job")
    ticks = os.sysconf("SC_CLK_TCK")
    per_node = []
    for i in range(len(nodes)):
        c = counts[i]
        row = {"user_us": (cpu_after[i][0] - cpu_before[i][0]) / ticks * 1e6 / jobs,
               "system_us": (cpu_after[i][1] - cpu_before[i][1]) / ticks * 1e6 / jobs,
               "sleeps": (switches_after[i][0] - switches_before[i][0]) / jobs,
               "syscalls": c.get("sys_enter", 0) / jobs,
               "trio": c.get("trio", 0) / jobs}
        named = 0
        for name in SYSCALLS:
            row[name] = c.get(name, 0) / jobs
            named += c.get(name, 0)
        row["other"] = (c.get("sys_enter", 0) - named) / jobs
        if i == callgrind:
            row["instructions"] = instructions / jobs
            row["idle_instructions"] = idle / jobs
        per_node.append(row)
    return per_node, run


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=1000.0, help="jobs/s (default 1000)")
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--scenario", default="e2e-local", choices=sorted(latency.SCENARIOS))
    parser.add_argument("--disque", help="disque-server: measure Disque C instead")
    parser.add_argument("--callgrind", type=int, metavar="NODE",
                        help="count NODE's (0: the origin) user instructions under callgrind")
    parser.add_argument("--keep", metavar="DIR", help="keep callgrind's dumps in DIR")
    args = parser.parse_args(argv)
    scenario = latency.SCENARIOS[args.scenario]
    out_dir = None
    if args.callgrind is not None:
        if args.disque:
            parser.error("--callgrind counts trisque's nodes")
        out_dir = args.keep or tempfile.mkdtemp(prefix="trisque-callgrind-")
        os.makedirs(out_dir, exist_ok=True)
        os.environ["PYTHONHASHSEED"] = "0"  # (runs repeat closer)

    def start():
        if args.disque:
            return start_disque(args.disque)
        if args.callgrind is not None and start.count == args.callgrind:
            start.count += 1
            return start_callgrind(out_dir)
        start.count += 1
        return start_trisque()
    start.count = 0
    nodes = start_cluster(3, start)
    try:
        per_node, run = measure(nodes, scenario, args.rate, args.seconds, args.callgrind,
                                out_dir)
    finally:
        for n in nodes:
            n.stop()
        if out_dir is not None and not args.keep:
            shutil.rmtree(out_dir, ignore_errors=True)
    server = "Disque C" if args.disque else "trisque"
    print(f"{server}, 3 nodes, {scenario.name} at {args.rate:.0f} jobs/s for "
          f"{args.seconds:g} s: {run.produced} jobs (load {os.getloadavg()[0]:.1f}); a job:")
    for i, row in enumerate(per_node):
        role = "origin " if i == 0 else f"node {i} "
        calls = "  ".join(f"{name} {row[name]:.2f}" for name in SYSCALLS + ("other",)
                          if row[name] >= 0.005)
        print(f"  {role} syscalls {row['syscalls']:5.2f} ({calls})")
        print(f"          user {row['user_us']:6.1f} us  system {row['system_us']:6.1f} us  "
              f"sleeps {row['sleeps']:.2f}  waits in trio's epoll {row['trio']:.2f}")
        if "instructions" in row:
            print(f"          user instructions {row['instructions']:,.0f} (as long "
                  f"idle: {row['idle_instructions']:,.0f} a job; its syscalls are "
                  f"valgrind's)")
    for point in ("sent", "got"):
        if point in run.histograms:
            h = run.histograms[point]
            print(f"  {point}: " + "  ".join(
                f"p{q:g} {h.get_value_at_percentile(q) / 1000:.0f} us"
                for q in latency.PERCENTILES))
    if args.keep:
        print(f"  callgrind's dumps: {args.keep}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
