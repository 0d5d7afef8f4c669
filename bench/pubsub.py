"""PUBLISH to one subscriber, against redis-server in the same run.

One subscriber connection (a thread that reads and counts bytes) listens
on a channel; redis-benchmark (-c 50) sends ``PUBLISH`` to it, without
pipelining and with -P 16.  Two figures per server: redis-benchmark's
requests per second (each PUBLISH answered :1), and messages per second
delivered, from the first PUBLISH to the last message's byte read by the
subscriber (every message must arrive, in full; the subscriber keeps up,
so the output limit never cuts it).  Target (issue 25): unpipelined
PUBLISH >= 0.5 of Redis.

    python -m bench pubsub [-n REQUESTS]
"""

from __future__ import annotations

import argparse
import os
import socket
import threading
import time

from . import servers
from .throughput import CLIENTS, PIPELINE, machine, redis_benchmark

CHANNEL = b"bench:channel"
PAYLOAD = b"a-message-of-32-bytes-0123456789"
FRAME = (b"*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
         % (len(CHANNEL), CHANNEL, len(PAYLOAD), PAYLOAD))
TARGET = 0.5


class Subscriber(threading.Thread):
    """Reads ``count`` messages of CHANNEL; ``done_at`` when the last came."""

    def __init__(self, port: int, count: int) -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$%d\r\n%s\r\n" % (len(CHANNEL), CHANNEL))
        confirm = b"*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n" % (len(CHANNEL), CHANNEL)
        got = b""
        while len(got) < len(confirm):
            got += self.sock.recv(len(confirm) - len(got))
        assert got == confirm, got
        self.want = count * len(FRAME)
        self.received = 0
        self.done_at = 0.0

    def run(self) -> None:
        recv = self.sock.recv
        while self.received < self.want:
            data = recv(1 << 20)
            if not data:
                break
            self.received += len(data)
        self.done_at = time.perf_counter()
        self.sock.close()


def one(port: int, requests: int, pipeline: int) -> tuple[float, float]:
    """(redis-benchmark's PUBLISH/s, messages delivered/s)."""
    sub = Subscriber(port, requests)
    sub.start()
    start = time.perf_counter()
    rps = redis_benchmark(port, requests, pipeline, "PUBLISH", CHANNEL.decode(),
                          PAYLOAD.decode())
    sub.join(60)
    if sub.received != sub.want:
        raise RuntimeError(f"the subscriber got {sub.received} of {sub.want} bytes")
    return rps, requests / (sub.done_at - start)


def run(requests: int) -> None:
    load_before = os.getloadavg()
    figures: dict[tuple[int, str], tuple[float, float]] = {}
    with servers.start_redis() as redis_server, servers.start_trisque() as trisque:
        for pipeline in (1, PIPELINE):
            for kind, server in (("redis", redis_server), ("trisque", trisque)):
                print(f"-P {pipeline}: {kind} ...", flush=True)
                figures[(pipeline, kind)] = one(server.port, requests, pipeline)
    print()
    print(machine(load_before, 1))
    print(f"PUBLISH to one subscriber, redis-benchmark -c {CLIENTS} -n {requests}, same run")
    print(f"{'':28}{'trisque':>10}{'redis':>10}{'ratio':>7}{'target':>8}")
    for pipeline in (1, PIPELINE):
        ours, theirs = figures[(pipeline, "trisque")], figures[(pipeline, "redis")]
        for label, at in (("PUBLISH/s", 0), ("delivered/s", 1)):
            ratio = ours[at] / theirs[at]
            mark = ""
            if pipeline == 1 and at == 0:
                mark = f"{'>=' if ratio >= TARGET else '< '}{TARGET:.2f}"
            print(f"  -P {pipeline:<3}{label:21}{ours[at]:10,.0f}{theirs[at]:10,.0f}"
                  f"{ratio:7.2f}{mark:>8}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench pubsub", description=__doc__)
    parser.add_argument("-n", "--requests", type=int, default=200000)
    args = parser.parse_args(argv)
    run(args.requests)
