"""What the append-only file costs: ADDJOB throughput with appendonly off,
appendfsync no, everysec and always, as ratios to appendonly off, measured
in the same run on the same machine; then how long a node takes to load an
AOF of many jobs, and a BGREWRITEAOF of them while clients keep adding.

    python -m bench.persistence [-n REQUESTS] [--rounds R] [--load-jobs N]

Throughput: redis-benchmark -c 50 (unpipelined and -P 16), ``ADDJOB q
<12-digit body> 0``; every configuration gets a fresh server, and the
rounds alternate configurations so drift on a shared machine spreads
evenly; the figure is the median of the rounds.  Target: everysec costs
at most 25% of throughput (ratio >= 0.75).

Load: an AOF of N LOADJOB records (100-byte bodies, 3 queues) is written
directly with the server's own codec, then the server is started on it and
timed until it answers PING; the log's progress lines are shown.
"""

import argparse
import os
import statistics
import sys
import time

from . import servers
from .throughput import redis_benchmark

CONFIGS = [
    ("appendonly no", ["--appendonly", "no"]),
    ("appendfsync no", ["--appendonly", "yes", "--appendfsync", "no"]),
    ("appendfsync everysec", ["--appendonly", "yes", "--appendfsync", "everysec"]),
    ("appendfsync always", ["--appendonly", "yes", "--appendfsync", "always"]),
]


def throughput(requests, rounds):
    figures = {(name, p): [] for name, _ in CONFIGS for p in (1, 16)}
    cpu_us = {(name, p): [] for name, _ in CONFIGS for p in (1, 16)}
    for r in range(rounds):
        order = CONFIGS if r % 2 == 0 else CONFIGS[::-1]
        for name, extra in order:
            with servers.start_trisque(extra) as server:
                for pipeline in (1, 16):
                    cpu = server.cpu_seconds()
                    rps = redis_benchmark(server.port, requests, pipeline,
                                          "ADDJOB", "q", "__rand_int__", "0")
                    used = (server.cpu_seconds() - cpu) * 1e6 / requests
                    figures[name, pipeline].append(rps)
                    cpu_us[name, pipeline].append(used)
                    print(f"  round {r + 1}: {name:22} -P {pipeline:<2} {rps:10.0f} req/s"
                          f"  {used:6.1f} us server CPU per request", flush=True)
                if "yes" in extra:
                    info = server.client.info("persistence")
                    assert info["aof_last_write_status"] == "ok"
                    assert info["aof_current_size"] > 0
    print()
    print(f"ADDJOB, median of {rounds} rounds, {requests} requests per run, 50 clients")
    print(f"{'':24}{'unpipelined':>12}{'ratio':>7}{'cpu us':>8}"
          f"{'-P 16':>12}{'ratio':>7}{'cpu us':>8}")
    base = {p: statistics.median(figures["appendonly no", p]) for p in (1, 16)}
    for name, _ in CONFIGS:
        row = f"{name:24}"
        for p in (1, 16):
            value = statistics.median(figures[name, p])
            row += (f"{value:12.0f}{value / base[p]:7.2f}"
                    f"{statistics.median(cpu_us[name, p]):8.1f}")
        print(row)
    ratio = min(statistics.median(figures["appendfsync everysec", p]) / base[p]
                for p in (1, 16))
    cpu_ratio = max(statistics.median(cpu_us["appendfsync everysec", p])
                    / statistics.median(cpu_us["appendonly no", p]) for p in (1, 16))
    print(f"\neverysec: throughput ratio {ratio:.2f} at worst, server CPU per "
          f"request x{cpu_ratio:.2f} at worst (target: costs at most 25%, ratio "
          f">= 0.75) -> {'OK' if ratio >= 0.75 else 'MISSED'}")


def paired(requests, rounds):
    """Each policy against appendonly off at the same time: two servers,
    two redis-benchmarks started together, so whatever else loads the
    machine loads both alike.  Median ratio of the rounds."""
    import concurrent.futures
    print(f"\nPaired runs (policy and appendonly off measured concurrently), "
          f"median of {rounds} rounds, {requests} requests each, 50 clients")
    print(f"{'':24}{'unpipelined':>12}{'-P 16':>8}")
    pool = concurrent.futures.ThreadPoolExecutor(2)
    worst = 1.0
    for name, extra in CONFIGS[1:]:
        row = f"{name:24}"
        for pipeline in (1, 16):
            ratios = []
            for _ in range(rounds):
                with servers.start_trisque(CONFIGS[0][1]) as off, \
                        servers.start_trisque(extra) as on:
                    runs = [pool.submit(redis_benchmark, s.port, requests, pipeline,
                                        "ADDJOB", "q", "__rand_int__", "0")
                            for s in (off, on)]
                    base, value = (r.result() for r in runs)
                ratios.append(value / base)
            ratio = statistics.median(ratios)
            if name == "appendfsync everysec":
                worst = min(worst, ratio)
            row += f"{ratio:{12 if pipeline == 1 else 8}.2f}"
        print(row, flush=True)
    pool.shutdown()
    print(f"everysec / off: {worst:.2f} at worst (target >= 0.75) -> "
          f"{'OK' if worst >= 0.75 else 'MISSED'}")


def core_cost(batches=4000):
    """What logging adds to one ADDJOB inside the node, measured in one
    process: two nodes (AOF off / on, everysec) run 16-request batches
    alternately, so machine load hits both alike; medians per request."""
    import tempfile
    from trisque.core.admin.config import Config
    from trisque.core.node import Node
    from trisque.core.table import COMMANDS
    from trisque.server.aof.append_only_log import AppendOnlyLog, ON

    argv = [b"ADDJOB", b"q", b"123456789012", b"0"]
    directory = tempfile.mkdtemp(prefix="trisque-bench-core-")

    def make(aof):
        config = Config()
        node = Node(config, os.urandom(20).hex(), time.time, table=COMMANDS)
        client = node.add_client("bench")
        log = None
        if aof:
            config.appendfilename = os.path.join(directory, "disque.aof")
            log = AppendOnlyLog(node)
            node.log = log
            log.fd = os.open(config.appendfilename,
                             os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            log.state = ON
            log._refresh()
        return node, client, log

    try:
        nodes = {False: make(False), True: make(True)}
        times = {False: [], True: []}
        for i in range(batches):
            for aof in ((False, True) if i % 2 else (True, False)):
                node, client, log = nodes[aof]
                started = time.perf_counter()
                if log is not None:
                    log.deferring = True
                for _ in range(16):
                    node.execute(client, argv)
                if log is not None:
                    log.end_batch()
                times[aof].append(time.perf_counter() - started)
                client.out.clear()
    finally:
        import shutil
        shutil.rmtree(directory, ignore_errors=True)
    off, on = (statistics.median(times[k]) / 16 * 1e6 for k in (False, True))
    print(f"\nCore cost (in process, alternating batches of 16 ADDJOB): "
          f"{off:.1f} us without the AOF, {on:.1f} us with it: +{on - off:.1f} us "
          f"per ADDJOB; a served request costs the node ~25 us pipelined and "
          f"~60 us unpipelined (see CPU above), so logging costs about "
          f"{100 * (on - off) / 25:.0f}% / {100 * (on - off) / 60:.0f}%")


def write_aof(path, jobs, body_size=100, retry_s=3600):
    """N LOADJOB records written directly, with the server's codec.  RETRY
    is long so the requeue of every loaded job (all due RETRY seconds after
    the restart) does not fall inside the measurements."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from trisque.protocol import aof, jobcodec, jobid
    node_id = os.urandom(20).hex()
    ids = jobid.IdGenerator(node_id)
    now_ms = int(time.time() * 1000)
    body = b"x" * body_size
    queues = [b"q0", b"q1", b"q2"]
    with open(path, "wb") as f:
        chunk = []
        for i in range(jobs):
            record = jobcodec.encode(ids.new(86400, retry_s), 2, 1, 1,
                                     (now_ms * 1000000) + i, now_ms + 86400000,
                                     0, retry_s, 0, 0, queues[i % 3], body, (node_id,))
            chunk.append(aof.loadjob(record))
            if len(chunk) == 10000:
                f.write(b"".join(chunk))
                chunk = []
        f.write(b"".join(chunk))
    return os.path.getsize(path)


def load_time(jobs):
    import tempfile
    import redis
    directory = tempfile.mkdtemp(prefix="trisque-bench-load-")
    path = os.path.join(directory, "disque.aof")
    started = time.monotonic()
    size = write_aof(path, jobs)
    print(f"\nLoad: wrote {jobs} LOADJOB records ({size / 1e6:.0f} MB) in "
          f"{time.monotonic() - started:.1f} s")
    port = servers.free_port()
    argv = servers.trisque_command() + [
        "--port", str(port), "--bind", "127.0.0.1", "--dir", directory,
        "--appendonly", "yes", "--logfile", "log.txt", "--loglevel", "notice"]
    import subprocess
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=directory, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port, protocol=2, socket_timeout=120)
    try:
        while True:
            try:
                if client.ping():
                    break
            except (redis.ConnectionError, redis.TimeoutError):
                pass  # not accepting before the load is done
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}")
            time.sleep(0.05)
        elapsed = time.monotonic() - started
        registered = client.info("jobs")["registered_jobs"]
        print(f"Load: {registered} jobs loaded, server answering after "
              f"{elapsed:.1f} s (target: 1M jobs in under 60 s) -> "
              f"{'OK' if elapsed < 60 * jobs / 1e6 else 'MISSED'}")
        with open(os.path.join(directory, "log.txt")) as f:
            for line in f:
                if "Loading the AOF" in line or "DB loaded" in line:
                    print("   log:", line.rstrip().split(" ", 4)[-1])
        rewrite_under_load(client, port, directory)
    finally:
        client.close()
        proc.terminate()
        proc.wait(30)
        import shutil
        shutil.rmtree(directory, ignore_errors=True)


def rewrite_under_load(client, port, directory):
    """BGREWRITEAOF of everything loaded while redis-benchmark adds jobs."""
    import subprocess
    size_before = client.info("persistence")["aof_current_size"]
    bench = subprocess.Popen(
        ["redis-benchmark", "-p", str(port), "-c", "20", "-n", "10000000",
         "-r", "1000000", "ADDJOB", "r", "__rand_int__", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1)
        started = time.monotonic()
        jobs_before = client.info("jobs")["registered_jobs"]
        client.execute_command("BGREWRITEAOF")
        slowest = 0.0
        while True:
            t = time.monotonic()
            info = client.info("persistence")
            slowest = max(slowest, time.monotonic() - t)
            if not info["aof_rewrite_in_progress"]:
                break
            time.sleep(0.05)
        elapsed = time.monotonic() - started
        jobs_after = client.info("jobs")["registered_jobs"]
    finally:
        bench.terminate()
        bench.wait()
    print(f"Rewrite: {info['aof_last_bgrewrite_status']} in {elapsed:.1f} s while "
          f"20 clients added {jobs_after - jobs_before} jobs; file "
          f"{size_before / 1e6:.0f} MB -> {info['aof_base_size'] / 1e6:.0f} MB; "
          f"slowest INFO reply during it {slowest * 1000:.0f} ms")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.persistence",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--requests", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--load-jobs", type=int, default=1000000,
                        help="jobs in the AOF for the load figure (0: skip)")
    args = parser.parse_args(argv)
    throughput(args.requests, args.rounds)
    paired(args.requests, args.rounds)
    core_cost()
    if args.load_jobs:
        load_time(args.load_jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
