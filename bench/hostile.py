"""python -m bench hostile [--rounds R] [--garbage-mb M] [--idle N]

A producer/consumer pair's rate alone and beside hostile clients (issue
17), for trisque and for redis-server in the same run.  The load is
tests/server/test_hostile_clients.py's (tests/server/hostile_load.py): N
idle connections, M MB of pipelined garbage ending in malformed RESP, and a
client that pipelines GETs of a 256 KB value without reading (a new one
every 0.5 s).  The pair is ADDJOB, GETJOB, ACKJOB on trisque and Redis's
reliable-queue pattern LPUSH, LMOVE, LREM on redis-server: three round
trips each.  Both servers run with client-output-buffer-limit normal 32mb
8mb 10 (Redis ships no limit for normal clients).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
from dataclasses import dataclass

from tests.harness import ROOT
from tests.server import hostile_load

from .servers import Server, start_redis, start_trisque

OUTPUT_LIMIT = ["normal", "32mb", "8mb", "10"]
ALONE_S = 3.0


@dataclass
class Round:
    alone: float  # cycles/s: the mean of the runs before and after
    beside: float  # cycles/s while the hostile clients run
    hostile_s: float
    garbage_mb: float
    garbage_closed: int  # garbage connections ended with a protocol error
    garbage_connections: int
    non_readers_closed: int
    output_limit_kills: int | None  # (None: the server's INFO has no such counter)
    rss_growth_mb: float  # peak (VmHWM) minus RSS before

    @property
    def ratio(self) -> float:
        return self.beside / self.alone


def _peak_rss_kb(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def one_round(server: Server, kind: str, garbage_mb: int, idle: int) -> Round:
    before = hostile_load.pair_rate(server.port, hostile_load.for_seconds(ALONE_S), kind)
    kills_before = server.info().get("client_output_buffer_limit_disconnections")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.server.hostile_load", str(server.port),
         "--idle", str(idle), "--garbage-mb", str(garbage_mb)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the hostile clients did not start")
        rss_before_kb = _peak_rss_kb(server.proc.pid, "VmRSS")
        proc.stdin.write("go\n")
        proc.stdin.flush()
        lines: list[str] = []
        stdout = proc.stdout
        reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
        reader.start()
        beside = hostile_load.pair_rate(server.port, lambda: bool(lines), kind)
        reader.join()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    result = json.loads(lines[0])
    peak_kb = _peak_rss_kb(server.proc.pid, "VmHWM")
    after = hostile_load.pair_rate(server.port, hostile_load.for_seconds(ALONE_S), kind)
    kills = server.info().get("client_output_buffer_limit_disconnections")
    garbage = result["garbage"]
    return Round(
        alone=(before.per_second + after.per_second) / 2, beside=beside.per_second,
        hostile_s=result["seconds"], garbage_mb=garbage["bytes_sent"] / hostile_load.MB,
        garbage_closed=garbage["protocol_errors"], garbage_connections=garbage["connections"],
        non_readers_closed=result["non_reader"]["connections"],
        output_limit_kills=None if kills is None else int(kills) - int(kills_before or 0),
        rss_growth_mb=(peak_kb - rss_before_kb) / 1024)


def run(rounds: int = 1, garbage_mb: int = 100, idle: int = 1000) -> None:
    hostile_load.raise_open_files(idle + 256)
    limit = " ".join(OUTPUT_LIMIT)
    results: dict[str, list[Round]] = {"trisque": [], "redis": []}
    load = os.getloadavg()[0]
    for _ in range(rounds):  # the servers alternate, as in bench throughput
        with start_trisque(["--client-output-buffer-limit", limit]) as trisque:
            results["trisque"].append(one_round(trisque, "disque", garbage_mb, idle))
        with start_redis(["--client-output-buffer-limit", limit]) as redis_server:
            results["redis"].append(one_round(redis_server, "redis", garbage_mb, idle))
    print(f"{os.cpu_count()} CPUs; load average {load:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after; median of {rounds} round(s)")
    print(f"pair cycles/s alone and beside {idle} idle connections, {garbage_mb} MB of "
          f"pipelined garbage and GETs never read (client-output-buffer-limit {limit})")
    print(f"{'':9}{'alone':>8}{'beside':>8}{'ratio':>7}{'hostile s':>10}{'garbage MB/s':>13}"
          f"{'closed':>10}{'non-readers':>12}{'RSS +MB':>8}")
    for name, got in results.items():
        def med(values: list[float]) -> float:
            return statistics.median(values)
        print(f"{name:9}{med([r.alone for r in got]):8,.0f}{med([r.beside for r in got]):8,.0f}"
              f"{med([r.ratio for r in got]):7.2f}{med([r.hostile_s for r in got]):10.1f}"
              f"{med([r.garbage_mb / r.hostile_s for r in got]):13.1f}"
              f"{got[-1].garbage_closed:>5}/{got[-1].garbage_connections:<4}"
              f"{got[-1].non_readers_closed:>5}/{_or_dash(got[-1].output_limit_kills):<6}"
              f"{med([r.rss_growth_mb for r in got]):8.0f}")
    for name, got in results.items():
        print(f"{name} ratio by round: " + " ".join(f"{r.ratio:.2f}" for r in got))
    print("ratio: beside / alone (alone: mean of the runs before and after); closed: "
          "garbage connections ended with a protocol error / all;\nnon-readers: "
          "closed as seen by the client / the server's "
          "client_output_buffer_limit_disconnections (- : not in its INFO);\nRSS +MB: "
          "peak minus before (VmHWM - VmRSS)")


def _or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)
