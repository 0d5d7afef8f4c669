"""Throughput of ADDJOB, GETJOB NOHANG and ACKJOB against redis-server's
LPUSH and RPOP, measured in the same run on the same machine.

Every figure comes from a closed loop of 50 clients (redis-benchmark -c 50),
without pipelining and with -P 16:

ADDJOB q <12-digit body> 0      vs  LPUSH q <12-digit body>
GETJOB NOHANG FROM q            vs  RPOP q
    (each run pops exactly the items the ADD/LPUSH run before it pushed,
    so every GETJOB returns a job and every RPOP an element)
ACKJOB <id>                     vs  RPOP q
    redis-benchmark cannot name real job IDs, so the real acks come from
    our loader (bench.client.replay: bench/loadgen.c when there is a C
    compiler, else the Python loop; --loader picks): the IDs of exactly
    the jobs the GETJOB run fetched (listed with JSCAN STATE active), one
    per request, replayed over 50 connections with the same pipelining as
    redis-benchmark.  Every reply is checked to be 1.  As a cross-check,
    redis-benchmark and each loader also send ACKJOB for well-formed IDs no
    node knows, so the loaders can be compared on the same command.

Then a batch cycle with one client (bench.client.cycle, by each loader),
100 jobs at a time: trisque pipelined ADDJOB x100, GETJOB COUNT 100,
ACKJOB of the 100 IDs; Redis pipelined LPUSH x100, RPOP q 100 (Redis has
nothing to ack, so this ratio is conservative for trisque).
"""

import csv
import io
import os
import platform
import statistics
import subprocess

from . import client, servers

CLIENTS = 50
PIPELINE = 16
UNKNOWN_ID = "D-00000000-000000000000__rand_int__-0001"

# (row, trisque figure, redis figure, target ratio unpipelined, pipelined)
ROWS = [
    ("ADDJOB vs LPUSH", "ADDJOB", "LPUSH", 0.5, 0.28),
    ("GETJOB NOHANG vs RPOP", "GETJOB", "RPOP", 0.5, 0.20),
    ("ACKJOB real jobs vs RPOP", "ACKJOB", "RPOP", 0.5, 0.30),
    ("ACKJOB unknown id vs RPOP", "ACKJOB?", "RPOP", None, None),
    ("  same, loadgen (C)", "ACKJOB?C", "RPOP", None, None),
    ("  same, loadgen lean loop", "ACKJOB?L", "RPOP", None, None),
    ("  same, Python loader", "ACKJOB?P", "RPOP", None, None),
]
# The loaders' figure suffixes, for the cross-check and cycle rows.
SUFFIX = {client.C_LIKE_REDIS_BENCHMARK: "C", client.C_LEAN: "L",
          client.PYTHON_LOADER: "P"}


def loaders_to_compare(cycle=False):
    """Every loader this machine can run (the C ones need a compiler); for
    the one-connection cycle both C loops are the same."""
    if not client.loadgen_binary():
        return [client.PYTHON_LOADER]
    if cycle:
        return [client.C_LIKE_REDIS_BENCHMARK, client.PYTHON_LOADER]
    return [client.C_LIKE_REDIS_BENCHMARK, client.C_LEAN, client.PYTHON_LOADER]


def redis_benchmark(port, requests, pipeline, *command):
    """Requests per second that redis-benchmark measured."""
    argv = ["redis-benchmark", "-p", str(port), "-c", str(CLIENTS),
            "-n", str(requests), "-P", str(pipeline), "-r", "1000000", "--csv",
            *command]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    rows = list(csv.reader(io.StringIO(out)))
    return float(rows[-1][1])


def active_job_ids(server):
    ids = []
    cursor = 0
    while True:
        cursor, batch = server.client.execute_command(
            "JSCAN", cursor, "COUNT", 10000, "STATE", "active")
        ids.extend(batch)
        if int(cursor) == 0:
            return ids


def jobs_round(trisque, requests, pipeline, loader):
    """ADDJOB, GETJOB NOHANG, ACKJOB (real IDs by ``loader``, unknown IDs
    by redis-benchmark and every loader) on trisque."""
    port = trisque.port
    figures = {}
    figures["ADDJOB"] = redis_benchmark(port, requests, pipeline,
                                        "ADDJOB", "q", "__rand_int__", "0")
    # redis-benchmark sends whole pipelines, so a little more than -n when
    # it does not divide evenly; the GETJOB run sends as many as this one.
    added = trisque.client.execute_command("QLEN", "q")
    figures["GETJOB"] = redis_benchmark(port, requests, pipeline,
                                        "GETJOB", "NOHANG", "FROM", "q")
    left = trisque.client.execute_command("QLEN", "q")
    ids = active_job_ids(trisque)
    if left or len(ids) != added:
        raise RuntimeError(f"GETJOB run left {left} queued, {len(ids)} active "
                           f"jobs (expected 0 and {added})")
    reqs = [client.encode("ACKJOB", job_id) for job_id in ids]
    cpu_before = trisque.cpu_seconds()
    acked = client.replay(port, reqs, CLIENTS, pipeline, loader)
    figures["ACKJOB"] = acked.rate
    # the server's CPU per ack (Server.cpu_seconds): steadier than the rate on a
    # loaded machine, and the loader's cost is not in it
    figures["ACKJOB cpu_us"] = (trisque.cpu_seconds() - cpu_before) / len(ids) * 1e6
    if (acked.int_sum != len(ids) or acked.replies != len(ids) or acked.errors
            or trisque.info()["registered_jobs"] != 0):
        raise RuntimeError(f"ACKJOB run did not ack every job exactly once: {acked}")
    figures["ACKJOB?"] = redis_benchmark(port, requests, pipeline,
                                         "ACKJOB", UNKNOWN_ID)
    unknown = [client.encode("ACKJOB", "D-00000000-%024d-0001" % i)
               for i in range(requests)]
    for name in loaders_to_compare():
        result = client.replay(port, unknown, CLIENTS, pipeline, name)
        if result.int_sum or result.errors or result.replies != requests:
            raise RuntimeError(f"{name}: an unknown job ID was acked: {result}")
        figures["ACKJOB?" + SUFFIX[name]] = result.rate
    return figures


def lists_round(redis_server, requests, pipeline):
    port = redis_server.port
    figures = {}
    figures["LPUSH"] = redis_benchmark(port, requests, pipeline,
                                       "LPUSH", "q", "__rand_int__")
    figures["RPOP"] = redis_benchmark(port, requests, pipeline, "RPOP", "q")
    left = redis_server.client.llen("q")
    if left:
        raise RuntimeError(f"RPOP run left {left} elements")
    return figures


def run(requests=200000, disque=None, cycle_jobs=None, rounds=1, floor=False,
        loader="auto"):
    """Every figure ``rounds`` times (servers alternating, so machine load
    hits both alike); the table shows the median of each.  ``loader``
    ("auto", "c", "python") replays the real ACKJOBs."""
    cycle_jobs = cycle_jobs or requests
    loader = client.choose_loader(loader)
    load_before = os.getloadavg()
    samples = {}  # (pipeline, kind, figure) -> [requests/s per round]
    with servers.start_redis() as redis_server, servers.start_trisque() as trisque:
        others = {}
        if disque:
            others["disque"] = servers.start_disque(disque)
        if floor:
            others["floor"] = servers.start_floor()
        try:
            for r in range(rounds):
                for pipeline in (1, PIPELINE):
                    print(f"round {r + 1}/{rounds}: -P {pipeline} ...", flush=True)
                    measured = {"redis": lists_round(redis_server, requests, pipeline),
                                "trisque": jobs_round(trisque, requests, pipeline, loader)}
                    for kind, server in others.items():
                        measured[kind] = jobs_round(server, requests, pipeline, loader)
                    for kind, figures in measured.items():
                        for name, value in figures.items():
                            samples.setdefault((pipeline, kind, name), []).append(value)
                print(f"round {r + 1}/{rounds}: batch cycle ...", flush=True)
                ports = {"redis": redis_server.port, "trisque": trisque.port}
                ports.update((kind, server.port) for kind, server in others.items())
                for name in loaders_to_compare(cycle=True):
                    for kind, port in ports.items():
                        samples.setdefault(("cycle", kind, SUFFIX[name]), []).append(
                            client.cycle(port, cycle_jobs, 100, kind, name))
        finally:
            for server in others.values():
                server.stop()
    median = {key: statistics.median(values) for key, values in samples.items()}
    results = {}
    for (pipeline, kind, name), value in median.items():
        if pipeline != "cycle":
            results.setdefault(pipeline, {}).setdefault(kind, {})[name] = value
    cycles = {}  # loader suffix -> kind -> jobs/s
    for (pipeline, kind, name), value in median.items():
        if pipeline == "cycle":
            cycles.setdefault(name, {})[kind] = value
    print()
    print(machine(load_before, rounds))
    print(table(results, cycles, requests, cycle_jobs, list(others), loader))


def machine(load_before, rounds):
    version = subprocess.run(["redis-server", "--version"], capture_output=True,
                             text=True).stdout.split()
    redis_version = next((w[2:] for w in version if w.startswith("v=")), "?")
    load_after = os.getloadavg()
    return (f"{os.cpu_count()} CPUs, Python {platform.python_version()}, "
            f"redis-server {redis_version}; load average {load_before[0]:.2f} "
            f"before, {load_after[0]:.2f} after; median of {rounds} round(s)")


def table(results, cycles, requests, cycle_jobs, others, loader):
    head = f"{'':28}{'trisque':>10}{'redis':>10}{'ratio':>7}{'target':>8}"
    for kind in others:
        head += f"{kind:>10}{'ratio':>7}"
    lines = [f"requests/s, redis-benchmark -c {CLIENTS} -n {requests}"
             f" (-r 1000000), same run", head]
    for pipeline in results:
        lines.append(f"-P {pipeline}")
        figures = results[pipeline]
        for label, ours, theirs, target1, target16 in ROWS:
            if ours not in figures["trisque"]:
                continue  # a loader this machine cannot run
            target = target1 if pipeline == 1 else target16
            base = figures["redis"][theirs]
            value = figures["trisque"][ours]
            ratio = value / base
            mark = "" if target is None else (
                f"{'>=' if ratio >= target else '< '}{target:.2f}")
            line = (f"  {label:26}{value:10,.0f}{base:10,.0f}{ratio:7.2f}"
                    f"{mark:>8}")
            for kind in others:
                other = figures[kind][ours]
                line += f"{other:10,.0f}{other / base:7.2f}"
            lines.append(line)
        # the servers' own CPU per real ack; its ratio column is the
        # other server's over trisque's (> 1: trisque is cheaper)
        cpu = {kind: figures[kind]["ACKJOB cpu_us"] for kind in ["trisque", *others]}
        line = f"  {'server CPU us/real ACKJOB':26}{cpu['trisque']:10.1f}{'':25}"
        for kind in others:
            ratio = f"{cpu[kind] / cpu['trisque']:7.2f}" if cpu["trisque"] else f"{'-':>7}"
            line += f"{cpu[kind]:10.1f}{ratio}"
        lines.append(line)
    lines.append(f"cycle, 1 client, batches of 100, {cycle_jobs} jobs (jobs/s)")
    for name, suffix in SUFFIX.items():
        if suffix not in cycles:
            continue
        by_kind = cycles[suffix]
        label = f"add->get->ack, {'C' if suffix == 'C' else 'Python'}"
        line = (f"  {label:26}{by_kind['trisque']:10,.0f}"
                f"{by_kind['redis']:10,.0f}{by_kind['trisque'] / by_kind['redis']:7.2f}"
                f"{'':8}")
        for kind in others:
            line += f"{by_kind[kind]:10,.0f}{by_kind[kind] / by_kind['redis']:7.2f}"
        lines.append(line)
    lines.append(f"loaders: redis-benchmark for ADDJOB, GETJOB, RPOP, LPUSH and the first "
                 f"unknown-id row; {loader} for ACKJOB real jobs; the cross-check and "
                 f"cycle rows name theirs (redis: push->pop); server CPU from /proc "
                 f"(schedstat's ns, else 10 ms ticks)")
    return "\n".join(lines)
