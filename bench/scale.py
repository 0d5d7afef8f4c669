"""Scale on one machine (issue 29, item 3), and the bus beyond it.

    python -m bench scale [--part all|connections|queues|nodes|bus-model]
                          [--connections N] [--queues N] [--sizes 3,5,7]

- connections: a node with N idle clients (10,000 by default) beside 50
  active ones: memory per connection (RSS and INFO used_memory) and the
  active clients' ADDJOB rate with the idle ones against the mean of the
  runs just before and after (a ratio); redis-server measured the same way
  in the same run.  The bench raises its own open-files limit (soft, up
  to the hard one) to hold the idle sockets.
- queues: 100,000 queues of one job each against 100,000 jobs in one
  queue on a fresh node: the memory a queue costs beyond its job.
- nodes: clusters of 3, 5 and 7 real nodes on this machine: the bus's idle
  cost per node (messages, bytes sent and CPU a second, from CLUSTER
  INFO, ss and /proc) and the CPU each node spends per ADDJOB REPLICATE 3 sent
  to the first node.

Each part prints the load average: memory and CPU per job move little
with it, rates do.
- bus-model: the simulator (tests/sim, the same membership code on a
  virtual network) with the default cluster-node-timeout, idle, at 3 to
  100 nodes: bus messages and bytes a second per node.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import resource
import socket
import subprocess
import time
from typing import Sequence

from . import client
from .cluster import start_cluster
from .servers import Server, start_redis, start_trisque
from .throughput import redis_benchmark


def _load() -> str:
    return "load average %.1f %.1f %.1f" % os.getloadavg()


def _memory(server: Server) -> tuple[int, int]:
    return server.rss_bytes(), int(server.info()["used_memory"])


def _open_idle(port: int, count: int) -> list[socket.socket]:
    """``count`` connections, each having had a PING answered (accepted and
    registered by the server, not just queued in its backlog)."""
    conns = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"PING\r\n")
        conns.append(s)
    for s in conns:
        if s.recv(16) != b"+PONG\r\n":
            raise RuntimeError("an idle client got no PONG")
    return conns


def connections(count: int, requests: int) -> dict[str, tuple[float, float, float]]:
    """server -> (RSS bytes a connection, used_memory a connection, rate ratio)"""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = count * 2 + 1000
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    extra = ["--maxclients", str(count + 1000)]
    print(f"{count} idle connections beside redis-benchmark -c 50 ADDJOB / LPUSH; "
          f"open files limit {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}; {_load()}")
    print(f"{'server':<8} {'RSS/conn':>9} {'used/conn':>10} {'rate idle=0':>12} "
          f"{'rate idle=N':>12} {'after':>12} {'ratio':>6}")
    figures = {}
    for kind, start, command in (
            ("trisque", start_trisque, ("ADDJOB", "q", "__rand_int__", "0")),
            ("redis", start_redis, ("LPUSH", "q", "__rand_int__"))):
        server = start(extra)
        try:
            before = redis_benchmark(server.port, requests, 1, *command)
            rss0, used0 = _memory(server)
            idle = _open_idle(server.port, count)
            rss1, used1 = _memory(server)
            with_idle = redis_benchmark(server.port, requests, 1, *command)
            for s in idle:
                s.close()
            _wait_clients(server, 1)
            after = redis_benchmark(server.port, requests, 1, *command)
        finally:
            server.stop()
        ratio = with_idle / ((before + after) / 2)
        print(f"{kind:<8} {(rss1 - rss0) / count:9.0f} {(used1 - used0) / count:10.0f} "
              f"{before:12.0f} {with_idle:12.0f} {after:12.0f} {ratio:6.2f}", flush=True)
        figures[kind] = ((rss1 - rss0) / count, (used1 - used0) / count, ratio)
    print(_load())
    return figures


def _wait_clients(server: Server, count: int) -> None:
    """Until the server has seen the idle clients go (the bench's own
    connection left)."""
    deadline = time.monotonic() + 60
    while int(server.info()["connected_clients"]) > count and time.monotonic() < deadline:
        time.sleep(0.1)


def queues(count: int) -> tuple[float, float]:
    """``count`` jobs in one queue against ``count`` queues of one job: the
    bytes a queue costs, by RSS and by used_memory (the node's estimate,
    which maxmemory reads)."""
    figures = {}
    print(_load())
    for layout in ("one queue", "a queue each"):
        server = start_trisque()
        try:
            rss0, used0 = _memory(server)
            requests = [client.encode("ADDJOB", "q" if layout == "one queue" else f"q{i}",
                                      b"x" * 16, 0) for i in range(count)]
            result = client.replay(server.port, requests, clients=4, pipeline=64,
                                   loader="c-lean")
            if result.errors:
                raise RuntimeError(f"{result.errors} ADDJOBs failed")
            rss1, used1 = _memory(server)
            figures[layout] = ((rss1 - rss0) / count, (used1 - used0) / count)
        finally:
            server.stop()
    (rss_one, used_one), (rss_each, used_each) = figures["one queue"], figures["a queue each"]
    print(f"{count} jobs (16-byte bodies), bytes per job: RSS {rss_one:.0f} in one queue, "
          f"{rss_each:.0f} with a queue each (used_memory {used_one:.0f} and {used_each:.0f}): "
          f"a queue costs {rss_each - rss_one:.0f} B of RSS ({used_each - used_one:.0f} B "
          "counted)")
    return rss_each - rss_one, used_each - used_one


def _bytes_sent(cluster: Sequence[Server]) -> list[int]:
    """Bytes each node's TCP sockets have sent and had acknowledged (ss's
    bytes_acked; /proc's wchar misses send()): idle, only its bus sends."""
    out = subprocess.run(["ss", "-tinpH"], capture_output=True, text=True, check=True).stdout
    sent = dict.fromkeys((n.proc.pid for n in cluster), 0)
    owner = None
    for line in out.splitlines():
        if not line.startswith(("\t", " ")):  # a socket; its figures follow
            found = re.search(r"pid=(\d+),", line)
            owner = int(found.group(1)) if found else None
        elif owner in sent:
            acked = re.search(r"bytes_acked:(\d+)", line)
            if acked:
                sent[owner] += int(acked.group(1))
    return [sent[n.proc.pid] for n in cluster]


def _messages_sent(node: Server) -> int:
    info = node.client.execute_command("CLUSTER", "INFO").decode()
    return int(info.split("cluster_stats_messages_sent:")[1].split()[0])


def nodes(sizes: Sequence[int], idle_seconds: float,
          requests: int) -> dict[int, tuple[float, float, float, float, float]]:
    """size -> (idle messages/s a node, idle bytes/s a node, origin, replica
    copy, all nodes' CPU us per ADDJOB REPLICATE 3)"""
    figures = {}
    print(f"{'nodes':>5} {'idle msg/s/node':>16} {'bytes/s/node':>13} {'cpu ms/s/node':>14} "
          f"{'R3 cpu us/job: origin':>22} {'replica (copy)':>15} {'all nodes':>10}  load")
    for size in sizes:
        cluster = start_cluster(size, start_trisque)
        try:
            time.sleep(2)  # let the handshakes' burst pass
            sent0 = [_messages_sent(n) for n in cluster]
            wrote0 = _bytes_sent(cluster)
            cpu0 = [n.cpu_seconds() for n in cluster]
            time.sleep(idle_seconds)
            cpu = [n.cpu_seconds() - c for n, c in zip(cluster, cpu0)]
            wrote = [w1 - w0 for w1, w0 in zip(_bytes_sent(cluster), wrote0)]
            sent = [_messages_sent(n) - s
                    for n, s in zip(cluster, sent0)]
            msgs = sum(sent) / size / idle_seconds
            idle_bytes = sum(wrote) / size / idle_seconds
            idle_cpu = sum(cpu) / size / idle_seconds * 1000
            cpu0 = [n.cpu_seconds() for n in cluster]
            start = time.monotonic()
            redis_benchmark(cluster[0].port, requests, 1, "ADDJOB", "q", "__rand_int__", "0",
                            "REPLICATE", "3")
            elapsed = time.monotonic() - start
            used = [(n.cpu_seconds() - c) * 1e6 / requests for n, c in zip(cluster, cpu0)]
            # what each node spends anyway (housekeeping, the bus), per job
            # of the run: nodes without a copy of a job spend it too
            idle_per_job = idle_cpu / 1000 * elapsed * 1e6 / requests
        finally:
            for n in cluster:
                n.stop()
        per_copy = sum(used[1:]) / 2  # each job has two copies beyond the origin's
        print(f"{size:5d} {msgs:16.1f} {idle_bytes:13.0f} {idle_cpu:14.2f} {used[0]:22.1f} "
              f"{per_copy:15.1f} {sum(used):10.1f}  {os.getloadavg()[0]:.1f}", flush=True)
        print(f"{'':5} less the idle cost ({idle_per_job:.1f} us a node a job): origin "
              f"{used[0] - idle_per_job:.1f}, a copy "
              f"{(sum(used[1:]) - idle_per_job * (size - 1)) / 2:.1f}, all nodes "
              f"{sum(used) - idle_per_job * size:.1f}", flush=True)
        figures[size] = (msgs, idle_bytes, used[0], per_copy, sum(used))
    return figures


def bus_model(sizes: Sequence[int], seconds: int,
              node_timeout_ms: int) -> dict[int, tuple[float, float]]:
    """Idle bus traffic per node in the simulator (seed 1): size ->
    (messages, bytes) a second a node."""
    figures = {}
    from tests.sim.world import World
    print(f"simulated, idle, cluster-node-timeout {node_timeout_ms} ms")
    print(f"{'nodes':>5} {'msg/s/node':>11} {'bytes/s/node':>13} {'bytes/msg':>10}")
    for size in sizes:
        world = World(1, nodes=size, node_timeout_ms=node_timeout_ms)
        world.start_cluster()
        world.run_until(120000, stop=world.cluster_formed)
        if not world.cluster_formed():
            print(f"{size:5d} did not form a full mesh in 120 s")
            continue
        world.run_until(world.now_ms + node_timeout_ms)  # past the forming burst
        frames: collections.Counter[str] = collections.Counter()

        def count(now: int, src: int, dst: int, frame: bytes, lost: bool) -> None:
            frames["frames"] += 1
            frames["bytes"] += len(frame)
        world.network.trace = count
        world.run_until(world.now_ms + seconds * 1000)
        per_node = frames["frames"] / size / seconds
        bytes_per_node = frames["bytes"] / size / seconds
        print(f"{size:5d} {per_node:11.1f} {bytes_per_node:13.0f} "
              f"{frames['bytes'] / max(1, frames['frames']):10.0f}", flush=True)
        figures[size] = (per_node, bytes_per_node)
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", default="all",
                        choices=["all", "connections", "queues", "nodes", "bus-model"])
    parser.add_argument("--connections", type=int, default=10000)
    parser.add_argument("--queues", type=int, default=100000)
    parser.add_argument("--sizes", default="3,5,7", help="nodes part: cluster sizes")
    parser.add_argument("--model-sizes", default="3,5,7,15,30,50,100",
                        help="bus-model part: simulated cluster sizes")
    parser.add_argument("--seconds", type=float, default=10, help="idle time measured")
    parser.add_argument("-n", "--requests", type=int, default=50000)
    parser.add_argument("--node-timeout", type=int, default=15000,
                        help="bus-model: cluster-node-timeout (default: the node's default)")
    args = parser.parse_args(argv)
    parts = ["connections", "queues", "nodes", "bus-model"] if args.part == "all" else [args.part]
    if "connections" in parts:
        connections(args.connections, args.requests)
    if "queues" in parts:
        queues(args.queues)
    if "nodes" in parts:
        nodes([int(x) for x in args.sizes.split(",")], args.seconds, args.requests)
    if "bus-model" in parts:
        bus_model([int(x) for x in args.model_sizes.split(",")], int(args.seconds * 3),
                  args.node_timeout)


if __name__ == "__main__":
    main()
