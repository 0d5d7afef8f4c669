"""python -m bench.federation [--nodes 5] [--jobs 20000] [--rate 200] [--repeat 3] [--disque PATH]

Federation benchmark on a local cluster (every node on 127.0.0.1):

- throughput: a producer pipelines ADDJOB (100 per round trip) on node A
  while a consumer loops GETJOB COUNT 100 + ACKJOB, on node A itself
  ("same node") or on node B ("A -> B": every job crosses the bus in a
  YOURJOBS).  jobs/s from the first ADDJOB to the last job consumed, and
  the end-to-end latency (ADDJOB sent -> job in the consumer's hands) of
  every job, which under saturation is mostly the backlog.
- paced: the producer sends one ADDJOB every 1/rate s to a consumer blocked
  in GETJOB; latency p50/p99/max: what one job costs when nothing queues.
- storm: 1000 consumers block on 100 queues spread over all nodes; NEEDJOBS
  messages per second per queue while idle, then while a producer on
  node A adds jobs to the 100 queues.

Producer and consumer run in separate processes (no shared GIL).  With
--disque the same is measured on a cluster of disque-server processes.
"""

import argparse
import multiprocessing
import os
import selectors
import statistics
import sys
import time

import hiredis

from .client import Connection, connect, encode
from .servers import start_disque, start_trisque


# ----------------------------------------------------------------- cluster

class LocalCluster:
    def __init__(self, kind, n, exe=None):
        self.kind = kind
        self.servers = []
        try:
            for _ in range(n):
                if kind == "trisque":
                    self.servers.append(start_trisque(["--cluster-node-timeout", "3000"]))
                else:
                    self.servers.append(start_disque(exe))
            for a, b in zip(self.servers, self.servers[1:]):
                a.client.execute_command("CLUSTER", "MEET", "127.0.0.1", b.port)
            self._wait_mesh()
        except BaseException:
            self.stop()
            raise

    def _wait_mesh(self, timeout=30):
        n = len(self.servers)
        deadline = time.monotonic() + timeout
        while True:
            ok = True
            for s in self.servers:
                nodes = s.client.execute_command("HELLO")[2:]
                if len(nodes) != n or any(int(node[3]) != 1 for node in nodes):
                    ok = False
                    break
            if ok:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.kind} cluster of {n} did not form")
            time.sleep(0.1)

    def port(self, i):
        return self.servers[i].port

    def needjobs_sent(self):
        """Sum of NEEDJOBS sent by every node (trisque's CLUSTER INFO)."""
        total = 0
        for s in self.servers:
            text = s.client.execute_command("CLUSTER", "INFO").decode()
            for line in text.split("\r\n"):
                if line.startswith("cluster_stats_needjobs_sent:"):
                    total += int(line.split(":")[1])
        return total

    def stop(self):
        for s in self.servers:
            s.stop()


# ------------------------------------------------------- producer/consumer

def _producer(port, queue, jobs, rate, replicate, start_at):
    conn = Connection(port)
    while time.time() < start_at:
        time.sleep(0.001)
    if rate:
        interval = 1.0 / rate
        t0 = time.time()
        for k in range(jobs):
            conn.call(encode("ADDJOB", queue, "%.6f" % time.time(), 5000,
                             "REPLICATE", replicate), 1)
            delay = t0 + (k + 1) * interval - time.time()
            if delay > 0:
                time.sleep(delay)
    else:
        for start in range(0, jobs, 100):
            n = min(100, jobs - start)
            body = "%.6f" % time.time()
            request = encode("ADDJOB", queue, body, 5000, "REPLICATE", replicate)
            conn.call(request * n, n)
    conn.close()


def _consumer(port, queue, jobs, result):
    conn = Connection(port)
    latencies = []
    first_sent = last = None
    while len(latencies) < jobs:
        reply = conn.call(encode("GETJOB", "TIMEOUT", 10000, "COUNT", 100, "FROM", queue), 1)[0]
        now = time.time()
        if reply is None:
            break
        ids = []
        for _queue, job_id, body in reply:
            sent = float(body)
            latencies.append(now - sent)
            ids.append(job_id)
            if first_sent is None or sent < first_sent:
                first_sent = sent
        last = now
        conn.call(encode("ACKJOB", *ids), 1)
    conn.close()
    result.put((latencies, first_sent, last))


def run_flow(cluster, producer_node, consumer_node, jobs, rate, replicate):
    queue = "bench-%d-%d-%d" % (os.getpid(), time.monotonic_ns(), consumer_node)
    result = multiprocessing.Queue()
    start_at = time.time() + 0.5
    consumer = multiprocessing.Process(target=_consumer, args=(
        cluster.port(consumer_node), queue, jobs, result))
    producer = multiprocessing.Process(target=_producer, args=(
        cluster.port(producer_node), queue, jobs, rate, replicate, start_at))
    consumer.start()
    time.sleep(0.2)  # the consumer blocks first (its node asks around)
    producer.start()
    latencies, first_sent, last = result.get(timeout=300)
    producer.join()
    consumer.join()
    lat_ms = sorted(x * 1000 for x in latencies)
    return {
        "jobs": len(lat_ms),
        # from the first ADDJOB sent to the last job consumed
        "jobs_per_s": len(lat_ms) / (last - first_sent) if last else 0,
        "p50": _pct(lat_ms, 0.50), "p99": _pct(lat_ms, 0.99),
        "max": lat_ms[-1] if lat_ms else float("nan"),
        "mean": statistics.fmean(lat_ms) if lat_ms else float("nan"),
    }


def _pct(values, p):
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(len(values) * p))]


# -------------------------------------------------------------------- storm

class Consumers:
    """Many consumers on raw sockets: each blocks in GETJOB, acks what it
    gets and blocks again."""

    def __init__(self, cluster, count, queues):
        self.sel = selectors.DefaultSelector()
        self.received = 0
        n = len(cluster.servers)
        for k in range(count):
            sock = connect(cluster.port(k % n))
            sock.setblocking(False)
            queue = queues[(k // n) % len(queues)]
            state = {"sock": sock, "reader": hiredis.Reader(),
                     "getjob": encode("GETJOB", "TIMEOUT", 0, "FROM", queue)}
            sock.sendall(state["getjob"])
            self.sel.register(sock, selectors.EVENT_READ, state)

    def pump(self, seconds):
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            for key, _ in self.sel.select(left):
                state = key.data
                data = state["sock"].recv(65536)
                if not data:
                    self.sel.unregister(state["sock"])
                    continue
                state["reader"].feed(data)
                while True:
                    reply = state["reader"].gets()
                    if reply is False:
                        break
                    if isinstance(reply, list) and reply:  # a job
                        self.received += 1
                        state["sock"].sendall(encode("ACKJOB", reply[0][1]) + state["getjob"])

    def close(self):
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()
        self.sel.close()


def _storm_producer(port, queues, rate, seconds):
    conn = Connection(port)
    t0 = time.time()
    k = 0
    while time.time() - t0 < seconds:
        batch = [encode("ADDJOB", queues[(k + i) % len(queues)], "x", 5000)
                 for i in range(10)]
        conn.call(b"".join(batch), len(batch))
        k += 10
        delay = t0 + k / rate - time.time()
        if delay > 0:
            time.sleep(delay)
    conn.close()


def run_storm(cluster, consumers=1000, nqueues=100, idle_s=6.0, busy_s=6.0, rate=500):
    prefix = "storm-%d" % time.monotonic_ns()
    queues = ["%s-%d" % (prefix, k) for k in range(nqueues)]
    before = cluster.needjobs_sent()
    group = Consumers(cluster, consumers, queues)
    t0 = time.monotonic()
    group.pump(idle_s)
    idle = cluster.needjobs_sent() - before
    idle_elapsed = time.monotonic() - t0
    producer = multiprocessing.Process(target=_storm_producer, args=(
        cluster.port(0), queues, rate, busy_s))
    before = cluster.needjobs_sent()
    t1 = time.monotonic()
    producer.start()
    group.pump(busy_s)
    producer.join()
    group.pump(0.5)
    busy = cluster.needjobs_sent() - before
    busy_elapsed = time.monotonic() - t1
    received = group.received
    group.close()
    return {
        "idle_needjobs_per_s_per_queue": idle / idle_elapsed / nqueues,
        "busy_needjobs_per_s_per_queue": busy / busy_elapsed / nqueues,
        "busy_jobs_per_s": received / busy_elapsed,
        "busy_needjobs_per_job": busy / received if received else float("nan"),
    }


# --------------------------------------------------------------------- main

def measure(kind, args, exe=None):
    print(f"\n{kind}: {args.nodes}-node cluster on 127.0.0.1, REPLICATE {args.replicate}")
    cluster = LocalCluster(kind, args.nodes, exe)
    try:
        rows = []
        for label, rate, jobs in (("throughput", 0, args.jobs),
                                  ("paced %d/s" % args.rate, args.rate, args.paced_jobs)):
            for where, (a, b) in (("same node", (0, 0)), ("A -> B", (0, 1))):
                runs = [run_flow(cluster, a, b, jobs, rate, args.replicate)
                        for _ in range(args.repeat)]
                r = {k: statistics.median(run[k] for run in runs) for k in runs[0]}
                rows.append((label, where, r))
                spread = ""
                if len(runs) > 1:
                    spread = "  (runs: %s jobs/s, p50 %s ms)" % (
                        "/".join("%.0f" % run["jobs_per_s"] for run in runs),
                        "/".join("%.1f" % run["p50"] for run in runs))
                print(f"  {label:<14} {where:<10} {r['jobs']:>6.0f} jobs  "
                      f"{r['jobs_per_s']:>8.0f} jobs/s  latency p50 {r['p50']:8.2f} ms  "
                      f"p99 {r['p99']:8.2f} ms  max {r['max']:8.2f} ms{spread}", flush=True)
        if kind == "trisque" and not args.no_storm:
            s = run_storm(cluster, rate=args.storm_rate)
            print(f"  storm: 1000 consumers / 100 queues / {args.nodes} nodes: "
                  f"idle {s['idle_needjobs_per_s_per_queue']:.2f} NEEDJOBS/s per queue; "
                  f"with {args.storm_rate} jobs/s produced on node A: "
                  f"{s['busy_needjobs_per_s_per_queue']:.2f} NEEDJOBS/s per queue, "
                  f"{s['busy_jobs_per_s']:.0f} jobs/s delivered, "
                  f"{s['busy_needjobs_per_job']:.2f} NEEDJOBS per job", flush=True)
        return rows
    finally:
        cluster.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.federation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=20000, help="throughput runs")
    parser.add_argument("--rate", type=int, default=200, help="paced runs: jobs/s")
    parser.add_argument("--paced-jobs", type=int, default=1000)
    parser.add_argument("--replicate", type=int, default=3)
    parser.add_argument("--storm-rate", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per flow scenario; medians are printed")
    parser.add_argument("--no-storm", action="store_true")
    parser.add_argument("--disque", metavar="PATH", help="also measure disque-server")
    args = parser.parse_args(argv)
    args.replicate = min(args.replicate, args.nodes)
    measure("trisque", args)
    if args.disque:
        measure("disque", args, args.disque)
    return 0


if __name__ == "__main__":
    sys.exit(main())
