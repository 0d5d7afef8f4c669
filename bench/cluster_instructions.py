"""CPU per replicated ADDJOB on each node of a 3-node cluster, without sockets.

    python -m bench.cluster_instructions [-n N]            # us per job
    python -m bench.cluster_instructions --callgrind       # instructions per job

Three node cores with their cluster rules in one process, joined by an
in-memory bus: tests/federation/inproc.py's, recording frames instead of
logging them.  The origin runs N ``ADDJOB q <body> 0 REPLICATE 3``
requests, 16 a chunk as redis-benchmark -P 16 sends them, ``--turn`` of
them per event-loop turn;
the bus sends every 128 queued messages (as the real one) and at the end
of the turn; the replicas then handle their frames and answer GOTJOB, and
the origin handles those and answers the clients.  The fake clock moves
``--rate`` jobs per millisecond and every node runs its due timers each
turn.  Requeue deadlines are jittered as in a real cluster.

Per node: the frames each replica received (and when) are recorded in a
first run without valgrind; under callgrind, runs that replay only those
frames to the replicas give the replicas' count, and a full run minus
that gives the origin's.  Each count is the difference from a run that
builds the same objects and does nothing, divided by N (for a replica:
per copy, the mean of the two).
"""

import argparse
import os
import pickle
import random
import sys
import tempfile
import time

from trisque.protocol.resp import RequestParser
from trisque.core.admin.config import Config
from trisque.core.node import Node
from trisque.core.table import COMMANDS

from tests.federation.inproc import Net as InprocNet  # (benchmarks run from the root)

from .client import encode
from .instructions import instructions

NODES = 3


class Net(InprocNet):
    """tests/federation/inproc.py's net of NODES nodes, with job IDs from
    each node's seeded RNG (so runs repeat exactly) and the frames each
    node receives recorded (when ``record`` is a dict) instead of logged."""

    def __init__(self, seed=1):
        super().__init__(NODES, seed)
        self.record = None  # index -> [(now, frame)] when recording
        self.client = self.clients[0]

    def make_node(self, i, node_id, seed):
        rng = random.Random(seed + i)
        return Node(Config(), node_id, clock=lambda: self.now, rng=rng, table=COMMANDS,
                    random_bytes=rng.randbytes)

    def carried(self, src, dst, frame):
        if self.record is not None:
            self.record[dst].append((self.now, frame))

    def timers(self):
        for node in self.nodes:
            node.run_timers()


def requests(n):
    return [encode("ADDJOB", "q", b"%012d" % i, 0, "REPLICATE", 3) for i in range(n)]


def run_full(net, reqs, turn, rate):
    """The origin runs ``reqs``; the bus and timers run between turns."""
    parser = RequestParser()
    node = net.nodes[0]
    execute = node.execute
    client = net.client
    out = client.out
    done = replies = 0
    start = net.now
    for t in range(0, len(reqs), turn):
        batch = reqs[t:t + turn]
        for i in range(0, len(batch), 16):
            for argv in parser.feed(b"".join(batch[i:i + 16])):
                execute(client, argv)
        net.deliver()
        done += len(batch)
        net.now = start + done / rate / 1000
        net.timers()
        net.deliver()
        replies += _answered(out)
        out.clear()
    net.now += 1
    net.timers()
    net.deliver()
    replies += _answered(out)
    out.clear()
    assert replies == len(reqs), replies


def _answered(out):
    return sum(1 for line in b"".join(out).split(b"\r\n") if line[:3] == b"+D-")


def run_replay(net, record):
    """The replicas handle the frames they received in the full run, at
    the same times; what they send is dropped."""
    clusters = net.clusters
    events = sorted((now, seq, dst, frame) for dst, frames in record.items()
                    for seq, (now, frame) in enumerate(frames) if dst != 0)
    last = None
    for now, _seq, dst, frame in events:
        if now != last:
            net.now = now
            for node in net.nodes[1:]:
                node.run_timers()
            last = now
        clusters[dst].receive(frame, None)
        for i in sorted(net.flush_needed):
            if i != 0:
                clusters[i].flush()
        net.flush_needed.clear()
        net.wire.clear()


def check(net, n):
    origin, *replicas = net.nodes
    assert len(origin.jobs) == n, len(origin.jobs)
    for replica in replicas:
        assert len(replica.jobs) == n, len(replica.jobs)


def one_run(mode, n, turn, rate, record_path):
    net = Net()
    reqs = requests(n)
    record = None
    if mode != "record":  # every measured run loads it (same base)
        with open(record_path, "rb") as f:
            record = pickle.load(f)
    if mode == "full":
        run_full(net, reqs, turn, rate)
        check(net, n)
    elif mode == "replay":
        run_replay(net, record)
        for replica in net.nodes[1:]:
            assert len(replica.jobs) == n, len(replica.jobs)
    elif mode == "record":
        net.record = {i: [] for i in range(NODES)}
        run_full(net, reqs, turn, rate)
        check(net, n)
        with open(record_path, "wb") as f:
            pickle.dump(net.record, f)


def timed(n, turn, rate):
    """Microseconds per job: the whole cluster, and the replicas replayed."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "frames.pickle")
        start = time.process_time()
        one_run("record", n, turn, rate, path)
        total = time.process_time() - start
        with open(path, "rb") as f:
            record = pickle.load(f)
        net = Net()
        start = time.process_time()
        run_replay(net, record)
        replicas = time.process_time() - start
    return (total - replicas) / n * 1e6, replicas / n / 2 * 1e6


def callgrind(n, turn, rate):
    def total(mode, path):
        return instructions([sys.executable, "-m", "bench.cluster_instructions", "-n", str(n),
                             "--turn", str(turn), "--rate", str(rate), "--mode", mode,
                             "--record", path])
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "frames.pickle")
        one_run("record", n, turn, rate, path)
        base = total("base", path)
        full = total("full", path)
        replay = total("replay", path)
    replicas = replay - base
    return (full - base - replicas) / n, replicas / n / 2


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.cluster_instructions")
    parser.add_argument("-n", type=int, default=None)
    parser.add_argument("--turn", type=int, default=64,
                        help="ADDJOBs the origin runs per event-loop turn (64)")
    parser.add_argument("--rate", type=float, default=40,
                        help="jobs per millisecond of the fake clock (40)")
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--mode", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--record", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.mode is not None:  # one run under callgrind
        one_run(args.mode, args.n, args.turn, args.rate, args.record)
        return
    if args.callgrind:
        n = args.n or 4000
        origin, replica = callgrind(n, args.turn, args.rate)
        unit = "instructions"
        fmt = "{:12,.0f}"
    else:
        n = args.n or 40000
        origin, replica = timed(n, args.turn, args.rate)
        unit = "us"
        fmt = "{:12.2f}"
    print(f"per ADDJOB REPLICATE 3, {n} jobs, {args.turn} a turn, "
          f"{args.rate:g} jobs/ms ({unit})")
    print("  origin       " + fmt.format(origin))
    print("  each replica " + fmt.format(replica))


if __name__ == "__main__":
    main()
