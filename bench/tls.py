"""What TLS costs on the client port: the same commands over port and
tls-port of one node, and the same for redis-server in the same run.

    python -m bench.tls [-n REQUESTS] [--rounds R]          # the client port
    python -m bench.tls --bus [-n REQUESTS] [--rounds R]    # the cluster bus

One trisque node and one redis-server, each serving a plain port and a TLS
port (certificates from trustme, client certificates required, as both
default to).  Each round runs redis-benchmark (-c 50; connections are
opened once per run, so the handshakes are not what is measured) with
``ADDJOB q <n> 0`` on trisque and ``LPUSH q <n>`` on Redis, unpipelined
and with -P 16, plain then TLS, and reads the CPU time the server spent
per request (user + system, /proc: the steadier figure on a shared
machine).  Prints medians: requests/s and CPU us per request, plain and
TLS, and the ratio TLS / plain of each, for both servers.  Then the cost of
a connection: the node's CPU per full handshake (TLS 1.3, the client's
certificate checked) of 500 connections opened one after the other, each
sending one PING.

With ``--bus``: two local 3-node clusters, one with ``tls-cluster yes``,
both up for the whole run; redis-benchmark sends ``ADDJOB q <n> 0
REPLICATE 3`` to one node of each over the plain client port (the two in
turn, which goes first alternating by round), so only the bus differs.
Prints jobs/s and the CPU per job of the origin and of a replica (mean of
the two), and the ratios TLS / plain.
"""

import argparse
import csv
import io
import os
import statistics
import subprocess
import tempfile

from .servers import Server, free_port, start_trisque

CLIENTS = 50


def make_certs(directory):
    import trustme  # the test extra (make bench installs it)
    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1", "localhost")
    paths = {name: os.path.join(directory, name)
             for name in ("ca.crt", "node.crt", "node.key")}
    ca.cert_pem.write_to_path(paths["ca.crt"])
    issued.cert_chain_pems[0].write_to_path(paths["node.crt"])
    issued.private_key_pem.write_to_path(paths["node.key"])
    return paths


def tls_flags(certs):
    return ["--tls-cert-file", certs["node.crt"], "--tls-key-file", certs["node.key"],
            "--tls-ca-cert-file", certs["ca.crt"]]


def start_redis_tls(certs, tls_port):
    port = free_port()
    directory = tempfile.mkdtemp(prefix="redis-bench-")
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", directory, "--tls-port", str(tls_port),
            *tls_flags(certs)]
    return Server("redis", argv, port, directory)


def benchmark(port, requests, pipeline, certs, tls, *command):
    """Requests per second that redis-benchmark measured."""
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", str(CLIENTS),
            "-n", str(requests), "-P", str(pipeline), "-r", "1000000", "--csv"]
    if tls:
        argv += ["--tls", "--cacert", certs["ca.crt"], "--cert", certs["node.crt"],
                 "--key", certs["node.key"]]
    out = subprocess.run(argv + list(command), check=True, capture_output=True,
                         text=True).stdout
    return float(list(csv.reader(io.StringIO(out)))[-1][1])


def measure(server, port, requests, pipeline, certs, tls, command):
    """(requests/s, server CPU us per request)."""
    before = server.cpu_seconds()
    rate = benchmark(port, requests, pipeline, certs, tls, *command)
    cpu_us = (server.cpu_seconds() - before) * 1e6 / requests
    server.client.execute_command("DEBUG" if server.kind == "trisque" else "FLUSHALL",
                                  *(["FLUSHALL"] if server.kind == "trisque" else []))
    return rate, cpu_us


def bus_round(nodes, requests, pipeline):
    """(jobs/s, origin CPU us/job, mean replica CPU us/job)."""
    before = [n.cpu_seconds() for n in nodes]
    rate = benchmark(nodes[0].port, requests, pipeline, None, False,
                     "ADDJOB", "q", "__rand_int__", "0", "REPLICATE", "3")
    used = [(n.cpu_seconds() - b) * 1e6 / requests for n, b in zip(nodes, before)]
    for n in nodes:
        n.client.execute_command("DEBUG", "FLUSHALL")
    return rate, used[0], statistics.mean(used[1:])


def run_bus(requests, rounds, certs):
    from .cluster import form_cluster
    plain = [start_trisque() for _ in range(3)]
    secure = [start_trisque(["--tls-cluster", "yes", *tls_flags(certs)]) for _ in range(3)]
    rows = {}  # (pipeline, name) -> [(rate, origin, replica)]
    try:
        form_cluster(plain)
        form_cluster(secure)
        for r in range(rounds):
            for pipeline in (1, 16):
                order = [("plain bus", plain), ("tls-cluster", secure)]
                if r % 2:
                    order.reverse()
                for name, nodes in order:
                    rows.setdefault((pipeline, name), []).append(
                        bus_round(nodes, requests, pipeline))
    finally:
        for n in plain + secure:
            n.stop()
    print(f"3-node clusters on loopback, ADDJOB REPLICATE 3, redis-benchmark -c {CLIENTS} "
          f"-n {requests}, median of {rounds} rounds")
    print(f"{'':<26}{'jobs/s':>9}{'origin us/job':>15}{'replica us/job':>16}")
    for pipeline in (1, 16):
        medians = {}
        for name in ("plain bus", "tls-cluster"):
            medians[name] = [statistics.median(c) for c in zip(*rows[(pipeline, name)])]
            rate, origin, replica = medians[name]
            print(f"{name + ' -P ' + str(pipeline):<26}{rate:>9.0f}{origin:>15.1f}"
                  f"{replica:>16.1f}")
        ratio = [t / p for t, p in zip(medians["tls-cluster"], medians["plain bus"])]
        print(f"{'TLS/plain -P ' + str(pipeline):<26}{ratio[0]:>9.2f}{ratio[1]:>15.2f}"
              f"{ratio[2]:>16.2f}")


def handshake_cpu_ms(server, tls_port, certs, connections=500):
    """The node's CPU (ms) per TLS connection: handshake and one PING."""
    import socket
    import ssl
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.load_verify_locations(certs["ca.crt"])
    context.load_cert_chain(certs["node.crt"], certs["node.key"])
    before = server.cpu_seconds()
    for _ in range(connections):
        with socket.create_connection(("127.0.0.1", tls_port)) as raw:
            with context.wrap_socket(raw) as tls:
                tls.sendall(b"PING\r\n")
                assert tls.recv(100) == b"+PONG\r\n"
    return (server.cpu_seconds() - before) * 1e3 / connections


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.tls")
    parser.add_argument("-n", "--requests", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bus", action="store_true",
                        help="the cluster bus (tls-cluster) instead of the client port")
    args = parser.parse_args(argv)
    if args.bus:
        run_bus(args.requests, args.rounds, make_certs(tempfile.mkdtemp(prefix="tls-bench-")))
        return
    certs_dir = tempfile.mkdtemp(prefix="tls-bench-")
    certs = make_certs(certs_dir)
    trisque_tls, redis_tls = free_port(), free_port()
    trisque = start_trisque(["--tls-port", str(trisque_tls), *tls_flags(certs)])
    redis = start_redis_tls(certs, redis_tls)
    cases = [(trisque, trisque_tls, ("ADDJOB", "q", "__rand_int__", "0")),
             (redis, redis_tls, ("LPUSH", "q", "__rand_int__"))]
    results = {}  # (kind, pipeline, tls) -> [(rate, cpu)]
    try:
        for _ in range(args.rounds):
            for pipeline in (1, 16):
                for server, tls_port, command in cases:
                    for tls in (False, True):
                        port = tls_port if tls else server.port
                        figure = measure(server, port, args.requests, pipeline, certs,
                                         tls, command)
                        results.setdefault((server.kind, pipeline, tls), []).append(figure)
        handshake_ms = handshake_cpu_ms(trisque, trisque_tls, certs)
    finally:
        trisque.stop()
        redis.stop()
    print(f"redis-benchmark -c {CLIENTS} -n {args.requests}, median of {args.rounds} "
          f"rounds; CPU: the server's user+system per request")
    print(f"{'':28}{'plain/s':>10}{'TLS/s':>10}{'TLS/plain':>11}"
          f"{'plain us':>10}{'TLS us':>9}{'TLS/plain':>11}")
    for kind, name in (("trisque", "ADDJOB"), ("redis", "LPUSH")):
        for pipeline in (1, 16):
            plain = results[(kind, pipeline, False)]
            tls = results[(kind, pipeline, True)]
            rate_p = statistics.median(r for r, _ in plain)
            rate_t = statistics.median(r for r, _ in tls)
            cpu_p = statistics.median(c for _, c in plain)
            cpu_t = statistics.median(c for _, c in tls)
            label = f"{kind} {name} -P {pipeline}"
            print(f"{label:28}{rate_p:>10.0f}{rate_t:>10.0f}{rate_t / rate_p:>11.2f}"
                  f"{cpu_p:>10.1f}{cpu_t:>9.1f}{cpu_t / cpu_p:>11.2f}")
    for pipeline in (1, 16):
        ours = statistics.median(r for r, _ in results[("trisque", pipeline, True)])
        theirs = statistics.median(r for r, _ in results[("redis", pipeline, True)])
        print(f"over TLS, -P {pipeline}: trisque ADDJOB / Redis LPUSH = {ours / theirs:.2f}")
    print(f"a TLS connection (handshake with a client certificate, one PING): "
          f"{handshake_ms:.2f} ms of node CPU")


if __name__ == "__main__":
    main()
