"""Replicated ADDJOB on a 3-node cluster, beside redis-server in the same run.

    python -m bench.cluster [--requests N] [--nodes 3] [--rounds R] [--disque PATH]

Runs redis-benchmark (50 clients) with and without -P 16 for ADDJOB
REPLICATE 3 and REPLICATE 2 against one node of a local cluster, and an
add -> get -> ack cycle in batches of 100 (replicated, acks garbage
collected on every holder), and prints ratios to redis-server LPUSH in the
same run.  Issue 3's target: pipelined REPLICATE 3 ADDJOB >= 0.10 of
pipelined LPUSH (Disque measured here: about 0.05).

With ``--rounds R`` the LPUSH and ADDJOB rows are run R times (medians
shown).  With ``--disque PATH`` a cluster of as many disque-server nodes
(Disque C: each in a temporary directory with its own cluster-config-file,
joined by CLUSTER MEET, waited for until every node reaches the others) is
measured in the same rounds on the same load, right after trisque's row,
and the last table gives trisque / Disque per row (the median of the
per-round ratios).  Every client (redis-benchmark -c 50) talks to the
first node of its cluster: that node is the origin of every job.  The ``cpu us/job`` columns are the CPU time (user + system, from
/proc) the origin node and each replica (mean of the others) spent per
ADDJOB during its run: steadier than the rates on a shared machine.
"""

import argparse
import os
import statistics
import time

from . import client
from .servers import start_disque, start_redis, start_trisque
from .throughput import redis_benchmark


def form_cluster(nodes):
    for a, b in zip(nodes, nodes[1:]):
        a.client.execute_command("CLUSTER", "MEET", "127.0.0.1", b.port)
    deadline = time.monotonic() + 30
    want = len(nodes) - 1
    while time.monotonic() < deadline:
        if all(n.client.execute_command("CLUSTER", "INFO").decode().count(
                f"cluster_reachable_nodes:{want}\r\n") for n in nodes):
            return
        time.sleep(0.1)
    raise RuntimeError("the cluster did not form")


def cycle(port, jobs, batch, replicate):
    """Jobs/s through ADDJOB (replicated) -> GETJOB -> ACKJOB, by batches."""
    conn = client.Connection(port)
    push = b"".join(client.encode("ADDJOB", "cycle", b"x" * 12, 0, "REPLICATE", replicate)
                    for _ in range(batch))
    get = client.encode("GETJOB", "NOHANG", "COUNT", batch, "FROM", "cycle")
    rounds = max(1, jobs // batch)
    start = time.perf_counter()
    for _ in range(rounds):
        conn.call(push, batch)
        got = conn.call(get, 1)[0]
        assert len(got) == batch, len(got)
        acked = conn.call(client.encode("ACKJOB", *[job[1] for job in got]), 1)[0]
        assert acked == batch
    elapsed = time.perf_counter() - start
    conn.close()
    return rounds * batch / elapsed


def wait_drained(nodes, timeout=60):
    """Acked jobs are gone from every holder (GC completed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(n.info()["registered_jobs"] == 0 for n in nodes):
            return True
        time.sleep(0.2)
    return False


def start_cluster(size, start):
    nodes = []
    try:
        for _ in range(size):
            nodes.append(start())
        form_cluster(nodes)
    except BaseException:
        for n in nodes:
            n.stop()
        raise
    return nodes


def addjob_row(nodes, requests, pipeline, replicate):
    """(rate, origin cpu us/job, replica cpu us/job) of redis-benchmark's
    ADDJOB REPLICATE ``replicate`` sent to the first node."""
    before = [n.cpu_seconds() for n in nodes]
    rate = redis_benchmark(nodes[0].port, requests, pipeline, "ADDJOB", "q",
                           "__rand_int__", "0", "REPLICATE", str(replicate))
    used = [(n.cpu_seconds() - b) * 1e6 / requests for n, b in zip(nodes, before)]
    return rate, used[0], statistics.mean(used[1:])


def run(requests, size, rounds=1, disque=None):
    load_before = os.getloadavg()
    nodes = start_cluster(size, start_trisque)
    redis_server = start_redis()
    disque_nodes = []
    try:
        if disque:
            disque_nodes = start_cluster(size, lambda: start_disque(disque))
        port = nodes[0].port
        figures = {}  # row name -> [(rate, ratio, origin cpu, replica cpu)] per round
        names = []
        versus = {}  # row name -> [trisque / disque] per round
        for r in range(rounds):
            for pipeline in (1, 16):
                print(f"round {r + 1}/{rounds}: -P {pipeline} ...", flush=True)
                lpush = redis_benchmark(redis_server.port, requests, pipeline,
                                        "LPUSH", "q", "__rand_int__")
                _add(figures, names, f"LPUSH (redis) -P {pipeline}", (lpush, 1.0, None, None))
                for replicate in (3, 2):
                    name = f"ADDJOB REPLICATE {replicate} -P {pipeline}"
                    rate, origin, replica = addjob_row(nodes, requests, pipeline, replicate)
                    _add(figures, names, name, (rate, rate / lpush, origin, replica))
                    if disque_nodes:
                        d_rate, d_origin, d_replica = addjob_row(disque_nodes, requests,
                                                                 pipeline, replicate)
                        _add(figures, names, f"  Disque C {name}",
                             (d_rate, d_rate / lpush, d_origin, d_replica))
                        versus.setdefault(name, []).append(rate / d_rate)
                redis_server.client.delete("q")
                for n in nodes + disque_nodes:
                    n.client.execute_command("DEBUG", "FLUSHALL")
        rows = [(name, *_medians(figures[name])) for name in names]
        cycle_jobs = max(1000, requests // 10)
        for replicate in (3, 1):
            rate = cycle(port, cycle_jobs, 100, replicate)
            drained = wait_drained(nodes)
            rows.append((f"cycle add/get/ack x100, REPLICATE {replicate}", rate, None, None, None))
            if not drained:
                raise RuntimeError("acked jobs were not garbage-collected everywhere")
        single = start_trisque()
        try:
            rate = cycle(single.port, cycle_jobs, 100, 1)
            rows.append(("cycle add/get/ack x100, single node", rate, None, None, None))
        finally:
            single.stop()
    finally:
        for n in nodes + disque_nodes:
            n.stop()
        redis_server.stop()
    load_after = os.getloadavg()
    shown_rounds = f", median of {rounds} rounds" if rounds > 1 else ""
    print(f"\n{size}-node trisque cluster on loopback, redis-benchmark -c 50 -n {requests}"
          f"{shown_rounds}, every client on the first node; load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print(f"{'benchmark':<44} {'ops/s':>10} {'ratio':>7}   cpu us/job: origin  replica")
    for name, rate, ratio, origin, replica in rows:
        shown = f"{ratio:7.3f}" if ratio is not None else "       "
        cpu = f"{origin:18.1f} {replica:8.1f}" if origin is not None else ""
        print(f"{name:<44} {rate:>10.0f} {shown}{cpu}")
    if versus:
        print(f"\ntrisque / Disque C ({size} nodes each, same rounds, interleaved)")
        for name, ratios in versus.items():
            each = " ".join(f"{x:.2f}" for x in ratios)
            print(f"{name:<44} {statistics.median(ratios):7.2f}   rounds: {each}")
    return rows


def _add(figures, names, name, values):
    if name not in figures:
        figures[name] = []
        names.append(name)
    figures[name].append(values)


def _medians(samples):
    return tuple(None if column[0] is None else statistics.median(column)
                 for column in zip(*samples))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.cluster", description=__doc__)
    parser.add_argument("--requests", "-n", type=int, default=200000)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--disque", metavar="PATH",
                        help="also measure a cluster of this disque-server binary")
    args = parser.parse_args(argv)
    run(args.requests, args.nodes, args.rounds, args.disque)


if __name__ == "__main__":
    main()
