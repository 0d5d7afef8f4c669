"""Throughput of the keyspace's commands against redis-server's own, in the
same run on the same machine: the same redis-benchmark command line
(-c 50, -r 1000000) sent to both, without pipelining and with -P 16:
LPUSH, RPOP, RPUSH, LPOP, SET, GET, INCR, HSET (the key names and values of
redis-benchmark's own -t tests).

``ROWS`` is the table: a label, the command, and the target ratios
(issue 14: unpipelined >= 0.6, pipelined LPUSH/RPOP >= 0.25).  Rows run in
order against each server, so a pop row finds what the push row before it
pushed (each RPOP returns an element, never a null).

Then the wake-up path (a blocked BRPOP served by another client's LPUSH):
``CONSUMERS`` clients loop on ``BRPOP q 0`` while one producer pipelines
LPUSHes, one per consumer, and waits for every consumer to be served
before the next batch; items per second through the whole cycle.
"""

from __future__ import annotations

import os
import socket
import statistics
import threading
import time

from . import servers
from .throughput import CLIENTS, PIPELINE, machine, redis_benchmark

# (label, command, target unpipelined, target pipelined)
ROWS: list[tuple[str, list[str], float | None, float | None]] = [
    ("LPUSH", ["LPUSH", "q", "__rand_int__"], 0.6, 0.25),
    ("RPOP", ["RPOP", "q"], 0.6, 0.25),
    ("RPUSH", ["RPUSH", "q", "__rand_int__"], 0.6, 0.25),
    ("LPOP", ["LPOP", "q"], 0.6, 0.25),
    ("SET", ["SET", "key:__rand_int__", "xxx"], 0.6, None),
    ("GET", ["GET", "key:__rand_int__"], 0.6, None),
    ("INCR", ["INCR", "counter:__rand_int__"], 0.6, None),
    ("HSET", ["HSET", "myhash", "element:__rand_int__", "xxx"], 0.6, None),
]
CONSUMERS = 10


def commands_round(port: int, requests: int, pipeline: int) -> dict[str, float]:
    return {label: redis_benchmark(port, requests, pipeline, *command)
            for label, command, _, _ in ROWS}


def _encode(*argv: bytes) -> bytes:
    return b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)


def _read_reply(sock: socket.socket, buf: bytearray) -> None:
    """Read until one ``*2`` BRPOP reply (or an integer) is in ``buf``; consume it."""
    while True:
        if buf[:1] == b":" and b"\r\n" in buf:
            del buf[:buf.index(b"\r\n") + 2]
            return
        if buf[:1] == b"*" and buf.count(b"\r\n") >= 5:
            end = 0
            for _ in range(5):
                end = buf.index(b"\r\n", end) + 2
            del buf[:end]
            return
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed")
        buf += chunk


def wake_round(port: int, items: int) -> float:
    """Items per second from LPUSH to the BRPOP it wakes (see the module)."""
    batches = max(1, items // CONSUMERS)
    served = threading.Semaphore(0)
    stop = threading.Event()

    def consume() -> None:
        sock = socket.create_connection(("127.0.0.1", port))
        buf = bytearray()
        request = _encode(b"BRPOP", b"wake", b"0")
        try:
            while not stop.is_set():
                sock.sendall(request)
                _read_reply(sock, buf)
                served.release()
        except OSError:
            pass
        finally:
            sock.close()

    threads = [threading.Thread(target=consume, daemon=True) for _ in range(CONSUMERS)]
    for thread in threads:
        thread.start()
    time.sleep(0.3)  # every consumer blocked
    producer = socket.create_connection(("127.0.0.1", port))
    buf = bytearray()
    push = _encode(b"LPUSH", b"wake", b"x" * 12) * CONSUMERS
    start = time.perf_counter()
    for _ in range(batches):
        producer.sendall(push)
        for _ in range(CONSUMERS):
            _read_reply(producer, buf)
        for _ in range(CONSUMERS):
            served.acquire()
    elapsed = time.perf_counter() - start
    stop.set()
    # Wake the consumers blocked once more, so their threads end.
    producer.sendall(_encode(b"LPUSH", b"wake", *[b"end"] * CONSUMERS))
    producer.close()
    for thread in threads:
        thread.join(5)
    return batches * CONSUMERS / elapsed


def run(requests: int = 200000, rounds: int = 1, wake_items: int = 20000) -> None:
    """Every figure ``rounds`` times, servers alternating; medians shown."""
    load_before = os.getloadavg()
    samples: dict[tuple[object, str, str], list[float]] = {}
    with servers.start_redis() as redis_server, servers.start_trisque() as trisque:
        for r in range(rounds):
            for pipeline in (1, PIPELINE):
                print(f"round {r + 1}/{rounds}: -P {pipeline} ...", flush=True)
                for kind, server in (("redis", redis_server), ("trisque", trisque)):
                    for label, value in commands_round(server.port, requests, pipeline).items():
                        samples.setdefault((pipeline, kind, label), []).append(value)
            print(f"round {r + 1}/{rounds}: BRPOP woken by LPUSH ...", flush=True)
            for kind, server in (("redis", redis_server), ("trisque", trisque)):
                samples.setdefault(("wake", kind, "wake"), []).append(
                    wake_round(server.port, wake_items))
    median = {key: statistics.median(values) for key, values in samples.items()}
    print()
    print(machine(load_before, rounds))
    print(table(median, requests, wake_items))


def table(median: dict[tuple[object, str, str], float], requests: int,
          wake_items: int) -> str:
    lines = [f"requests/s, redis-benchmark -c {CLIENTS} -n {requests} (-r 1000000), same run",
             f"{'':28}{'trisque':>10}{'redis':>10}{'ratio':>7}{'target':>8}"]
    for pipeline in (1, PIPELINE):
        lines.append(f"-P {pipeline}")
        for label, _, target1, target16 in ROWS:
            ours = median[(pipeline, "trisque", label)]
            theirs = median[(pipeline, "redis", label)]
            ratio = ours / theirs
            target = target1 if pipeline == 1 else target16
            mark = "" if target is None else f"{'>=' if ratio >= target else '< '}{target:.2f}"
            lines.append(f"  {label:26}{ours:10,.0f}{theirs:10,.0f}{ratio:7.2f}{mark:>8}")
    ours, theirs = median[("wake", "trisque", "wake")], median[("wake", "redis", "wake")]
    lines.append(f"BRPOP woken by LPUSH, {CONSUMERS} consumers, {wake_items} items (items/s)")
    lines.append(f"  {'LPUSH -> blocked BRPOP':26}{ours:10,.0f}{theirs:10,.0f}{ours / theirs:7.2f}")
    return "\n".join(lines)
