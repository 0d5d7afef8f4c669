"""Hostile clients beside a well-behaved producer/consumer pair (issue 17).

A real node; the pair (ADDJOB, then GETJOB + ACKJOB, redis-py) measures its
rate alone, then again while 1,000 idle connections are open, a client sends
100 MB of pipelined garbage (valid but huge pipelines, each connection
ending in malformed RESP) and a client pipelines GETs of a large value and
never reads a reply.  The pair must keep at least half its alone rate (a
ratio of two measurements in this test, the issue's requirement), every
garbage connection must end with a protocol error, the non-reader must be
closed by client-output-buffer-limit, and the node's memory must stay
bounded.  The same load with redis-server as a baseline: python -m bench
hostile (bench/README.md).
"""

import json
import subprocess
import sys

import pytest

from tests.harness import ROOT, Server, wait_for
from tests.server import hostile_load

IDLE = 1000
OUTPUT_HARD_MB = 32
# The hard output limit, one turn's worth of one client's replies past it,
# the garbage's 1 MB arguments and 1,000 connections' state, with room.
RSS_GROWTH_BOUND_MB = 200

# The pair's rate beside the hostile load is compared with its rate alone:
# another test beside it would take the CPU from one measurement and not
# the other (CI read 0.49 so, 0.77-0.80 alone on the same loaded machine).
pytestmark = pytest.mark.solo


def info_field(client, section, name):
    return client.info(section)[name]


def rss_kb(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def test_pair_keeps_half_its_rate_beside_hostile_clients():
    hostile_load.raise_open_files(IDLE + 256)
    srv = Server(config=f"client-output-buffer-limit normal {OUTPUT_HARD_MB}mb 8mb 10\n"
                        f"maxclients {IDLE + 100}\n").start()
    hostile = None
    try:
        admin = srv.client()
        alone_before = hostile_load.pair_rate(srv.port, hostile_load.for_seconds(2))
        hostile = subprocess.Popen(
            [sys.executable, "-m", "tests.server.hostile_load", str(srv.port),
             "--idle", str(IDLE), "--garbage-mb", "100"],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert hostile.stdout.readline().strip() == "ready"
        assert info_field(admin, "clients", "connected_clients") == IDLE + 1  # admin + idle
        rss_before_kb = rss_kb(srv.proc.pid)
        hostile.stdin.write("go\n")
        hostile.stdin.flush()
        lines = []
        reader = _read_line_in_background(hostile, lines)
        beside = hostile_load.pair_rate(srv.port, lambda: bool(lines))
        reader.join(60)
        result = json.loads(lines[0])
        peak_kb = rss_kb(srv.proc.pid, "VmHWM")
        hostile.wait(10)
        # alone again: the machine's other work may have changed meanwhile
        alone_after = hostile_load.pair_rate(srv.port, hostile_load.for_seconds(2))
        alone = (alone_before.per_second + alone_after.per_second) / 2
        ratio = beside.per_second / alone
        print(f"pair alone {alone_before.per_second:.0f} and {alone_after.per_second:.0f} "
              f"cycles/s, beside hostile clients {beside.per_second:.0f} cycles/s "
              f"({beside.seconds:.1f} s): ratio {ratio:.2f}; RSS {rss_before_kb // 1024} MB, "
              f"peak {peak_kb // 1024} MB; {json.dumps(result)}")

        garbage = result["garbage"]
        assert garbage["bytes_sent"] >= 100 * hostile_load.MB
        assert garbage["other_endings"] == []
        assert garbage["protocol_errors"] == garbage["connections"] > 20
        assert result["idle_open"] == IDLE
        kills = info_field(admin, "stats", "client_output_buffer_limit_disconnections")
        non_reader = result["non_reader"]["connections"]
        assert non_reader >= 1 and non_reader <= kills <= non_reader + 1
        assert "closed for overcoming of output buffer limits" in srv.log()
        assert (peak_kb - rss_before_kb) // 1024 < RSS_GROWTH_BOUND_MB
        assert ratio >= 0.5
        # and the node is fine: the pair worked after, nothing leaked
        assert alone_after.cycles > 0
        wait_for(lambda: info_field(admin, "clients", "connected_clients") == 1)
        assert admin.execute_command("QLEN", "pair") == 0
    finally:
        if hostile is not None and hostile.poll() is None:
            hostile.kill()
            hostile.wait()
        srv.cleanup()


def _read_line_in_background(proc, lines):
    import threading

    def read():
        lines.append(proc.stdout.readline())
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread
