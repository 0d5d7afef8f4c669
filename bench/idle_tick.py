"""An idle node's tick in instructions (issue 29, p99.9 tails).

    python -m bench.idle_tick [--seconds 10] [--keep DIR]

A 3-node cluster with no clients; node 1 runs under callgrind (as
bench/job_costs.py's ``--callgrind``) for ``--seconds`` of idle time: its
instructions every 100 ms (the cron's period) and the tick's functions,
inclusive, a tick (Node.cron's calls counted in the dump).  With
``--keep`` the dump stays for callgrind_annotate.
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import tempfile
import time

from .cluster import start_cluster
from .job_costs import _callgrind_control, _dumped_total, start_callgrind
from .servers import start_trisque

FUNCTIONS = ("Timers___run", "Node___cron", "Cluster___cron", "Membership___cron")


def per_tick(path):
    """{function: inclusive instructions a call} for FUNCTIONS."""
    tree = subprocess.run(["callgrind_annotate", "--tree=calling", "--inclusive=yes",
                           "--threshold=100", path], capture_output=True, text=True,
                          check=True).stdout
    found = {}
    for line in tree.splitlines():
        m = re.match(r"\s*([\d,]+) .*> .*CPyDef_\w+?___(\w+___\w+) \((\d+)x\)", line)
        if m and m.group(2) in FUNCTIONS and m.group(2) not in found:
            found[m.group(2)] = int(m.group(1).replace(",", "")) // int(m.group(3))
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--keep", metavar="DIR", help="keep callgrind's dump in DIR")
    args = parser.parse_args(argv)
    out_dir = args.keep or tempfile.mkdtemp(prefix="trisque-callgrind-")
    os.makedirs(out_dir, exist_ok=True)
    os.environ["PYTHONHASHSEED"] = "0"
    started = []

    def start():
        started.append(None)
        return start_callgrind(out_dir) if len(started) == 2 else start_trisque()
    nodes = start_cluster(3, start)
    try:
        pid = nodes[1].proc.pid
        _callgrind_control(pid, "-i", "on")
        time.sleep(5)  # (the code is translated again once on)
        _callgrind_control(pid, "-z")
        time.sleep(args.seconds)
        before = set(glob.glob(f"{out_dir}/callgrind.out*"))
        _callgrind_control(pid, "-d")
        path, total = _dumped_total(out_dir, before)
    finally:
        for n in nodes:
            n.stop()
    print(f"idle node, {args.seconds:.0f} s: {total * 0.1 / args.seconds:,.0f} "
          f"instructions every 100 ms")
    for name, count in per_tick(path).items():
        print(f"  {name.replace('___', '.')}: {count:,} a call")
    if args.keep:
        print(f"  callgrind's dump: {path}")
    else:
        shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
