"""Throughput of a node holding a million queued jobs, against the same
server empty, in the same run (issue 18: "within 10% of an empty node's").

    python -m bench loaded [-n REQUESTS] [--rounds R] [--jobs N] [--disque PATH]

Two servers of each kind run side by side: one empty, one loaded with N
queued jobs (100-byte bodies, queue ``bulk``, pipelined ADDJOB as
``python -m bench memory`` adds them).  Every round measures, on each
server in turn (so the machine's load hits both alike), with 50 clients
and -P 16 (``--pipeline``):

ADDJOB q <body> 0             redis-benchmark, into a queue of its own
GETJOB NOHANG FROM q          redis-benchmark, taking exactly those jobs
ACKJOB <id>                   bench.client.replay (bench/loadgen.c, or the
                              Python loader without a C compiler), the IDs
                              of those jobs
GETJOB NOHANG FROM bulk       loaded server only: from the million, as a
                              user would (the empty server's figure to
                              compare with is its GETJOB from q); those
                              jobs are acked and as many added back to
                              ``bulk`` untimed, so it stays at N

The table shows each figure's median over the rounds and loaded/empty.

    python -m bench.loaded --core [-n REQUESTS] [--rounds R] [--jobs N]

does the same on two node cores in this process (no sockets: parse and
execute, 16 requests at a time, as bench.instructions), timed in CPU
seconds of this process and alternating between the cores every phase: on
a shared machine the socket figures move by 2x from round to round, this
one far less.
"""

import argparse
import os
import statistics
import time

from . import client, memory, servers
from .throughput import CLIENTS, active_job_ids, machine, redis_benchmark

BULK = "bulk"


def _ack_all(server, ids, pipeline):
    """ACKJOB each of ``ids``; requests per second.  Every reply must be 1."""
    reqs = [client.encode("ACKJOB", job_id) for job_id in ids]
    acked = client.replay(server.port, reqs, CLIENTS, pipeline)
    if acked.int_sum != len(ids) or acked.errors:
        raise RuntimeError(f"{server.kind}: ACKJOB acked {acked.int_sum} of {len(ids)}"
                           f" ({acked.errors} errors)")
    return acked.rate


def _qlen(server, queue):
    return server.client.execute_command("QLEN", queue)


def measure_round(server, requests, pipeline, bulk_jobs):
    """The figures of one round on ``server`` (requests per second)."""
    port = server.port
    figures = {}
    figures["ADDJOB"] = redis_benchmark(port, requests, pipeline,
                                        "ADDJOB", "q", "__rand_int__", "0")
    added = _qlen(server, "q")
    figures["GETJOB"] = redis_benchmark(port, requests, pipeline,
                                        "GETJOB", "NOHANG", "FROM", "q")
    ids = active_job_ids(server)
    if _qlen(server, "q") or len(ids) != added:
        raise RuntimeError(f"{server.kind}: GETJOB left {_qlen(server, 'q')} queued, "
                           f"{len(ids)} active (expected 0 and {added})")
    figures["ACKJOB"] = _ack_all(server, ids, pipeline)
    if bulk_jobs:
        figures["GETJOB bulk"] = redis_benchmark(port, requests, pipeline,
                                                 "GETJOB", "NOHANG", "FROM", BULK)
        ids = active_job_ids(server)
        taken = bulk_jobs - _qlen(server, BULK)
        if len(ids) != taken:
            raise RuntimeError(f"{server.kind}: {len(ids)} active, {taken} taken from {BULK}")
        _ack_all(server, ids, pipeline)
        memory.fill(server, taken, 100, lambda b: ("ADDJOB", BULK, b, 0))
        if _qlen(server, BULK) != bulk_jobs:
            raise RuntimeError(f"{server.kind}: {BULK} holds {_qlen(server, BULK)} jobs")
    return figures


def run(requests=100000, rounds=3, jobs=1000000, disque=None, pipeline=16):
    load_before = os.getloadavg()
    kinds = {"trisque": servers.start_trisque}
    if disque:
        kinds["disque"] = lambda: servers.start_disque(disque)
    pairs = {}
    samples = {}  # (kind, loaded?, figure) -> [requests/s per round]
    try:
        for kind, start in kinds.items():
            empty, loaded = start(), start()
            pairs[kind] = (empty, loaded)
            print(f"{kind}: loading {jobs} jobs ...", flush=True)
            memory.fill(loaded, jobs, 100, lambda b: ("ADDJOB", BULK, b, 0))
            if _qlen(loaded, BULK) != jobs:
                raise RuntimeError(f"{kind}: {BULK} holds {_qlen(loaded, BULK)} jobs")
        for r in range(rounds):
            print(f"round {r + 1}/{rounds} ...", flush=True)
            for kind, (empty, loaded) in pairs.items():
                for is_loaded, server in ((False, empty), (True, loaded)):
                    figures = measure_round(server, requests, pipeline,
                                            jobs if is_loaded else 0)
                    for name, value in figures.items():
                        samples.setdefault((kind, is_loaded, name), []).append(value)
        rss = {kind: (empty.rss_bytes(), loaded.rss_bytes())
               for kind, (empty, loaded) in pairs.items()}
    finally:
        for empty, loaded in pairs.values():
            empty.stop()
            loaded.stop()
    median = {key: statistics.median(values) for key, values in samples.items()}
    print()
    print(machine(load_before, rounds))
    print(table(median, samples, list(pairs), requests, jobs, pipeline, rss))


def table(median, samples, kinds, requests, jobs, pipeline, rss):
    lines = [f"requests/s, -c {CLIENTS} -P {pipeline} -n {requests}; loaded = "
             f"{jobs:,} queued 100-byte jobs in '{BULK}' (kept at that); ACKJOB "
             f"by {client.choose_loader()}, the rest by redis-benchmark"]
    head = f"{'':28}"
    for kind in kinds:
        head += f"{kind + ' empty':>15}{'loaded':>10}{'ratio':>7}"
    lines.append(head)
    rows = [("ADDJOB q", "ADDJOB", "ADDJOB"), ("GETJOB NOHANG FROM q", "GETJOB", "GETJOB"),
            ("ACKJOB (those jobs)", "ACKJOB", "ACKJOB"),
            ("GETJOB FROM the loaded queue", "GETJOB", "GETJOB bulk")]
    for label, empty_name, loaded_name in rows:
        line = f"{label:28}"
        for kind in kinds:
            e = median.get((kind, False, empty_name))
            v = median.get((kind, True, loaded_name))
            line += f"{e:15,.0f}{v:10,.0f}{v / e:7.2f}"
        lines.append(line)
    lines.append("per round, loaded/empty: " + "; ".join(
        f"{kind} {name} " + " ".join(
            f"{lv / ev:.2f}" for ev, lv in zip(samples[(kind, False, name)],
                                               samples[(kind, True, name)]))
        for kind in kinds for name in ("ADDJOB", "GETJOB", "ACKJOB")))
    lines.append("RSS MB, empty / loaded: " + ", ".join(
        f"{kind} {e / 1e6:.0f} / {v / 1e6:.0f}" for kind, (e, v) in rss.items()))
    return "\n".join(lines)


def _core(jobs):
    """A node core as bench.instructions builds it, with ``jobs`` queued
    100-byte jobs in ``bulk``."""
    from trisque.cluster.cluster import Cluster
    from trisque.cluster.outbox import Transport
    from trisque.core.admin.config import Config
    from trisque.core.node import Node
    from trisque.core.table import COMMANDS
    node = Node(Config(), "a" * 40, time.time, table=COMMANDS)
    Cluster(node, Transport(), "127.0.0.1", 7711, 17711)
    conn = node.add_client()
    body = b"x" * 100
    for i in range(0, jobs, 1000):
        _execute(node, conn, [client.encode("ADDJOB", BULK, b"%09d" % (i + k) + body[9:], 0)
                              for k in range(min(1000, jobs - i))])
    return node, conn


def _execute(node, conn, requests, pipeline=16):
    """CPU seconds to parse and run ``requests``, and their replies."""
    from trisque.protocol.resp import RequestParser
    parser = RequestParser()
    execute = node.execute
    out = conn.out
    replies = []
    start = time.process_time()
    for i in range(0, len(requests), pipeline):
        for argv in parser.feed(b"".join(requests[i:i + pipeline])):
            execute(conn, argv)
        replies.append(b"".join(out))
        out.clear()
    return time.process_time() - start, replies


def _ids(replies):
    """Job IDs in GETJOB replies (RESP2 arrays of [queue, id, body])."""
    import hiredis
    reader = hiredis.Reader()
    ids = []
    for chunk in replies:
        reader.feed(chunk)
        reply = reader.gets()
        while reply is not False:
            ids.extend(job[1] for job in reply)
            reply = reader.gets()
    return ids


def core_round(node, conn, n, bulk):
    """Microseconds per command of each figure on one core."""
    figures = {}
    body = b"%012d"
    seconds, _ = _execute(node, conn, [client.encode("ADDJOB", "q", body % i, 0)
                                       for i in range(n)])
    figures["ADDJOB"] = seconds / n * 1e6
    seconds, replies = _execute(node, conn, [client.encode("GETJOB", "NOHANG", "FROM", "q")] * n)
    figures["GETJOB"] = seconds / n * 1e6
    ids = _ids(replies)
    if len(ids) != n:
        raise RuntimeError(f"GETJOB fetched {len(ids)} of {n} jobs")
    seconds, _ = _execute(node, conn, [client.encode("ACKJOB", i) for i in ids])
    figures["ACKJOB"] = seconds / n * 1e6
    if bulk:
        seconds, replies = _execute(node, conn,
                                    [client.encode("GETJOB", "NOHANG", "FROM", BULK)] * n)
        figures["GETJOB bulk"] = seconds / n * 1e6
        ids = _ids(replies)
        if len(ids) != n:
            raise RuntimeError(f"GETJOB fetched {len(ids)} of {n} jobs from {BULK}")
        _execute(node, conn, [client.encode("ACKJOB", i) for i in ids])
        _execute(node, conn, [client.encode("ADDJOB", BULK, b"r%011d" % i + b"x" * 88, 0)
                              for i in range(n)])
    if len(node.jobs) != bulk:
        raise RuntimeError(f"{len(node.jobs)} jobs left, expected {bulk}")
    return figures


def core_run(requests=20000, rounds=5, jobs=1000000):
    import gc
    load_before = os.getloadavg()
    empty, loaded = _core(0), _core(jobs)
    samples = {}
    for r in range(rounds):
        for is_loaded, (node, conn) in ((False, empty), (True, loaded)):
            for name, value in core_round(node, conn, requests, jobs if is_loaded else 0).items():
                samples.setdefault((is_loaded, name), []).append(value)
    median = {key: statistics.median(values) for key, values in samples.items()}
    load_after = os.getloadavg()
    lines = [f"node cores in one process, -P 16, {requests} requests a phase, {rounds} rounds "
             f"alternating; loaded = {jobs:,} queued 100-byte jobs in '{BULK}'; load average "
             f"{load_before[0]:.2f} before, {load_after[0]:.2f} after; gc tracked objects "
             f"{len(gc.get_objects())}",
             f"{'us per command (CPU)':28}{'empty':>8}{'loaded':>8}{'ratio':>7}  rounds"]
    for label, e_name, l_name in (("ADDJOB q", "ADDJOB", "ADDJOB"),
                                  ("GETJOB NOHANG FROM q", "GETJOB", "GETJOB"),
                                  ("ACKJOB (those jobs)", "ACKJOB", "ACKJOB"),
                                  ("GETJOB FROM the loaded queue", "GETJOB", "GETJOB bulk")):
        e, v = median[(False, e_name)], median[(True, l_name)]
        per = " ".join(f"{b / a:.2f}" for a, b in zip(samples[(False, e_name)],
                                                       samples[(True, l_name)]))
        lines.append(f"{label:28}{e:8.2f}{v:8.2f}{v / e:7.2f}  {per}")
    print("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.loaded")
    parser.add_argument("--core", action="store_true", help="in-process node cores")
    parser.add_argument("-n", "--requests", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=1000000)
    parser.add_argument("--disque", metavar="PATH")
    args = parser.parse_args(argv)
    if args.core:
        core_run(args.requests or 20000, args.rounds or 5, args.jobs)
    else:
        run(args.requests or 100000, args.rounds or 3, args.jobs, args.disque)


if __name__ == "__main__":
    main()
