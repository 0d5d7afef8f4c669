"""Start a local trisque cluster: ``python -m deploy.local_cluster``.

Starts N trisque-server processes on consecutive ports (7711, 7712, ...),
each with its own directory, joins them with CLUSTER MEET, waits until
every node sees all the others, and keeps them running until Ctrl-C.
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time


def command(port, *args):
    """One request over a raw socket (no client library needed)."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        arg = str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(b"".join(parts))
        data = b""
        while not data.endswith(b"\r\n") or (data[:1] == b"$" and data.count(b"\r\n") < 2):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.decode(errors="replace")


def wait(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit(f"timed out waiting for {what}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m deploy.local_cluster", description=__doc__)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--port", type=int, default=7711, help="port of the first node")
    parser.add_argument("--dir", default="cluster-data", help="parent of the node directories")
    parser.add_argument("--fresh", action="store_true", help="delete old node data first")
    parser.add_argument("--http-port", type=int, default=None,
                        help="HTTP port (/metrics, dashboard) of the first node "
                             "(default: port + 1000; 0: off)")
    args = parser.parse_args(argv)
    # SIGTERM stops the cluster as Ctrl-C does, never orphaning the nodes.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    exe = shutil.which("trisque-server", path=os.path.dirname(sys.executable)) or "trisque-server"
    ports = [args.port + i for i in range(args.nodes)]
    http_base = args.port + 1000 if args.http_port is None else args.http_port
    http_ports = [http_base + i if http_base else 0 for i in range(args.nodes)]
    procs = []
    if args.fresh:
        shutil.rmtree(args.dir, ignore_errors=True)
    for port, http_port in zip(ports, http_ports):
        directory = os.path.abspath(os.path.join(args.dir, str(port)))
        os.makedirs(directory, exist_ok=True)
        procs.append(subprocess.Popen(
            [exe, "--port", str(port), "--dir", directory, "--logfile", "log.txt",
             "--appendonly", "yes", "--http-port", str(http_port)]))
    try:
        for port in ports:
            wait(lambda p=port: command(p, "PING").startswith("+PONG"), 15, f"node {port}")
        for a, b in zip(ports, ports[1:]):
            command(a, "CLUSTER", "MEET", "127.0.0.1", b)
        wait(lambda: all(f"cluster_reachable_nodes:{len(ports) - 1}" in command(p, "CLUSTER", "INFO")
                         for p in ports), 30, "a full mesh")
        print(f"trisque cluster of {len(ports)} nodes up on 127.0.0.1 ports "
              f"{', '.join(map(str, ports))} (data in {os.path.abspath(args.dir)}).")
        for port, http_port in zip(ports, http_ports):
            if http_port:
                print(f"  node {port}: dashboard http://127.0.0.1:{http_port}/ , "
                      f"metrics http://127.0.0.1:{http_port}/metrics")
        print(f"Try: redis-cli -p {ports[0]} ADDJOB myqueue hello 0 ; "
              f"redis-cli -p {ports[-1]} GETJOB FROM myqueue")
        print("Ctrl-C stops the cluster.")
        while all(p.poll() is None for p in procs):
            time.sleep(0.5)
        print("a node exited; stopping the cluster", file=sys.stderr)
    except KeyboardInterrupt:
        pass
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
