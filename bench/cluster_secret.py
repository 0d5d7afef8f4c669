"""What cluster-secret costs: replicated ADDJOB with and without it.

    python -m bench.cluster_secret [-n REQUESTS] [--rounds R]

Two local 3-node clusters, one with ``cluster-secret`` and one without,
both up for the whole run.  Each round runs redis-benchmark (-c 50)
``ADDJOB q <n> 0 REPLICATE 3`` against one node of each, unpipelined and
with -P 16, the two clusters in turn (which goes first alternates by
round), and reads the CPU time (user + system, /proc) the origin and the
replicas spent per job.  Prints medians and the ratio secret / no secret
of each figure; the CPU per job is the steadier one on a shared machine.
Also times the codec alone in this process: sealing and opening one
envelope holding a REPLJOB frame of one 12-byte job, as on the bus.
"""

import argparse
import os
import statistics
import timeit

from .cluster import form_cluster
from .servers import start_trisque
from .throughput import redis_benchmark

SECRET = "bench secret"


def _round(nodes, requests, pipeline):
    """(jobs/s, origin CPU us/job, mean replica CPU us/job)."""
    before = [n.cpu_seconds() for n in nodes]
    rate = redis_benchmark(nodes[0].port, requests, pipeline,
                           "ADDJOB", "q", "__rand_int__", "0", "REPLICATE", "3")
    used = [(n.cpu_seconds() - b) * 1e6 / requests for n, b in zip(nodes, before)]
    for n in nodes:
        n.client.execute_command("DEBUG", "FLUSHALL")
    return rate, used[0], statistics.mean(used[1:])


def codec_cost_us():
    """Seal + open of one envelope with a one-job REPLJOB frame, in us."""
    from trisque.protocol import bus, jobcodec
    header = bus.Header("ab" * 20, 7711, 17711)
    record = jobcodec.encode(b"D-abababab-" + b"x" * 24 + b"-05a1", 1, 0, 3, 1,
                             10**12, 0, 60, 0, 0, b"q", b"x" * 12, ["ab" * 20, "cd" * 20])
    frame = bus.jobs(header, bus.REPLJOB, [record])
    nonce = os.urandom(bus.NONCE_LEN)
    mac = bus.link_mac(SECRET.encode(), nonce)
    sealed = bus.seal(mac, 0, frame)
    n = 100000
    seal_s = timeit.timeit(lambda: bus.seal_frames(mac, 0, [frame]), number=n) / n
    open_s = timeit.timeit(lambda: bus.unseal(mac, sealed, 0), number=n) / n
    return len(frame), seal_s * 1e6, open_s * 1e6


def run(requests, rounds):
    plain = [start_trisque() for _ in range(3)]
    secret = [start_trisque(["--cluster-secret", SECRET]) for _ in range(3)]
    rows = {}  # (pipeline, name) -> [(rate, origin, replica)]
    try:
        form_cluster(plain)
        form_cluster(secret)
        for r in range(rounds):
            for pipeline in (1, 16):
                order = [("no secret", plain), ("cluster-secret", secret)]
                if r % 2:
                    order.reverse()
                for name, nodes in order:
                    rows.setdefault((pipeline, name), []).append(
                        _round(nodes, requests, pipeline))
    finally:
        for n in plain + secret:
            n.stop()
    print(f"\n3-node clusters on loopback, ADDJOB REPLICATE 3, redis-benchmark -c 50 "
          f"-n {requests}, median of {rounds} rounds")
    print(f"{'':<30} {'ops/s':>9} {'origin us/job':>14} {'replica us/job':>15}")
    for pipeline in (1, 16):
        medians = {}
        for name in ("no secret", "cluster-secret"):
            samples = rows[(pipeline, name)]
            medians[name] = [statistics.median(column) for column in zip(*samples)]
            rate, origin, replica = medians[name]
            print(f"{name + ' -P ' + str(pipeline):<30} {rate:>9.0f} {origin:>14.1f} "
                  f"{replica:>15.1f}")
        ratio = [s / p for s, p in zip(medians["cluster-secret"], medians["no secret"])]
        print(f"{'ratio secret/none -P ' + str(pipeline):<30} {ratio[0]:>9.3f} "
              f"{ratio[1]:>14.3f} {ratio[2]:>15.3f}")
    size, seal_us, open_us = codec_cost_us()
    print(f"codec alone: seal {seal_us:.2f} us, open {open_us:.2f} us "
          f"(one envelope, a {size}-byte REPLJOB frame)")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.cluster_secret",
                                     description=__doc__)
    parser.add_argument("--requests", "-n", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    run(args.requests, args.rounds)


if __name__ == "__main__":
    main()
