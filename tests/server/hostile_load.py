"""Hostile clients beside a well-behaved producer/consumer pair (issue 17).

Shared by tests/server/test_hostile_clients.py and ``python -m bench
hostile``.  The pair (``pair_rate``) runs in the caller's process; the
hostile clients run in a process of their own (``python -m
tests.server.hostile_load PORT ...``), so their Python work never takes the
pair's interpreter lock and only the server's fairness is measured:

- *idle*: N connections opened and left silent;
- *garbage*: connection after connection, each sending a few MB of
  pipelined requests (valid but huge: 1 MB random-byte arguments of an
  unknown command, 4 KB ECHOs, a megabyte of PINGs, random inline words)
  and ending with a malformed RESP tail, reading every reply until the
  server closes it; together ``--garbage-mb`` MB;
- *non-reader*: SETs a large value once, then pipelines ``GET`` of it and
  never reads a reply, reconnecting after each disconnect.

The process prints ``ready`` once the idle connections are open and the
non-reader's value is set, waits for a line on stdin (the caller's "go"),
then prints one JSON line with what happened when the garbage is sent.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import random
import selectors
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

MB = 1024 * 1024

# Each ends a garbage connection: the server must answer "-ERR Protocol
# error..." and close (test_bad_input.py has each one alone).
# (Redis 7 waits for the elements of a count up to 2^31-1: this one is
# refused by both; we refuse counts over 1048576.)
MALFORMED_TAILS = (b"*1\r\n$x\r\n", b"*x\r\n", b"*1\r\nxyz\r\n",
                   b"*2\r\n*1\r\n$1\r\na\r\n$1\r\nb\r\n", b"*2147483648\r\n",
                   b"*1\r\n$999999999999\r\n")


def encode(*args: bytes) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(out)


def _garbage_bodies(rng: random.Random) -> list[bytes]:
    """The valid-but-huge parts, one per connection in turn."""
    blob = rng.randbytes(MB)
    words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 12)))
             for _ in range(200)]
    inline = b"".join(b" ".join(rng.choices(words, k=rng.randint(1, 8))) + b"\r\n"
                      for _ in range(4000))
    return [
        encode(b"NOSUCHCOMMAND", blob) * 4,  # 4 MB: 1 MB random arguments
        encode(b"ECHO", blob[:4096]) * 1000,  # 4 MB of 4 KB ECHOs
        encode(b"PING") * (MB // 14),  # 1 MB of small requests
        inline,  # random inline words: unknown commands
    ]


@dataclass
class GarbageResult:
    bytes_sent: int = 0
    connections: int = 0
    protocol_errors: int = 0  # connections that ended with -ERR Protocol error
    other_endings: list[str] = field(default_factory=list)


def _one_garbage_connection(port: int, payload: bytes) -> tuple[int, bytes, str]:
    """Send ``payload`` while reading every reply; (bytes sent, the last
    bytes received, how it ended: 'closed' or an error's name)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE)
    view = memoryview(payload)
    sent = 0
    tail = b""
    ending = "timeout"
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            for _key, events in sel.select(timeout=1):
                if events & selectors.EVENT_READ:
                    try:
                        data = sock.recv(256 * 1024)
                    except BlockingIOError:
                        data = None
                    except OSError as exc:
                        return sent, tail, errno.errorcode.get(exc.errno or 0, str(exc))
                    if data == b"":
                        return sent, tail, "closed"
                    if data:
                        tail = (tail + data)[-300:]
                if events & selectors.EVENT_WRITE and sent < len(payload):
                    try:
                        sent += sock.send(view[sent:sent + 256 * 1024])
                    except BlockingIOError:
                        pass
                    except OSError as exc:
                        return sent, tail, errno.errorcode.get(exc.errno or 0, str(exc))
                    if sent == len(payload):
                        sel.modify(sock, selectors.EVENT_READ)
        return sent, tail, ending
    finally:
        sel.close()
        sock.close()


def send_garbage(port: int, total_bytes: int, seed: int,
                 kinds: list[int] | None = None) -> GarbageResult:
    rng = random.Random(seed)
    bodies = _garbage_bodies(rng)
    if kinds is not None:
        bodies = [bodies[k] for k in kinds]
    result = GarbageResult()
    while result.bytes_sent < total_bytes:
        body = bodies[result.connections % len(bodies)]
        tail = MALFORMED_TAILS[result.connections % len(MALFORMED_TAILS)]
        sent, last, ending = _one_garbage_connection(port, body + tail)
        result.connections += 1
        result.bytes_sent += sent
        last_line = last[last.rfind(b"\r\n", 0, len(last) - 2) + 2:]
        if ending == "closed" and last_line.startswith(b"-ERR Protocol error"):
            result.protocol_errors += 1
        else:
            result.other_endings.append(f"{ending}: {last_line[-80:]!r}")
    return result


@dataclass
class NonReaderResult:
    connections: int = 0  # each one closed by the server
    bytes_sent: int = 0


def never_read(port: int, big_key: bytes, stop: threading.Event,
               result: NonReaderResult, every_s: float = 0.5) -> None:
    """Pipeline GET ``big_key`` without reading, until the server closes
    the connection; again on a new one every ``every_s`` until ``stop``
    (one after another as fast as they go would measure how fast the node
    copies a value, not how it treats one client that does not read)."""
    request = encode(b"GET", big_key) * 1000
    while not stop.wait(every_s if result.connections else 0):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(0.5)
        try:
            while not stop.is_set():
                try:
                    result.bytes_sent += sock.send(request)
                except socket.timeout:
                    continue  # the server stopped reading us: keep trying
        except OSError:
            result.connections += 1  # closed by the server (reset or pipe)
        finally:
            sock.close()


def open_idle(port: int, count: int) -> list[socket.socket]:
    return [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]


def raise_open_files(wanted: int) -> None:
    """Raise this process's descriptor limit to ``wanted`` (or the hard cap)."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


# ------------------------------------------------------------- the pair

@dataclass
class PairRate:
    cycles: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.cycles / self.seconds


def pair_rate(port: int, until: Callable[[], bool], kind: str = "disque") -> PairRate:
    """Cycles of a producer and a consumer (two redis-py connections, one
    loop) until ``until()``: ADDJOB, then GETJOB + ACKJOB (trisque) or
    Redis's reliable-queue pattern LPUSH, LMOVE to a processing list, LREM
    (redis-server): three round trips each."""
    import redis
    producer = redis.Redis(host="127.0.0.1", port=port, protocol=2, socket_timeout=30)
    consumer = redis.Redis(host="127.0.0.1", port=port, protocol=2, socket_timeout=30)
    cycles = 0
    start = time.monotonic()
    try:
        while not until():
            body = b"job-%d" % cycles
            if kind == "disque":
                producer.execute_command("ADDJOB", "pair", body, 0)
                got = consumer.execute_command("GETJOB", "NOHANG", "FROM", "pair")
                assert got and got[0][2] == body, got
                assert consumer.execute_command("ACKJOB", got[0][1]) == 1
            else:
                producer.lpush("pair", body)
                assert consumer.lmove("pair", "processing", "RIGHT", "LEFT") == body
                assert consumer.lrem("processing", 1, body.decode()) == 1
            cycles += 1
    finally:
        producer.close()
        consumer.close()
    return PairRate(cycles, time.monotonic() - start)


def for_seconds(seconds: float) -> Callable[[], bool]:
    deadline = time.monotonic() + seconds
    return lambda: time.monotonic() >= deadline


# ------------------------------------------------------ the process

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.server.hostile_load")
    parser.add_argument("port", type=int)
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--garbage-mb", type=int, default=100)
    parser.add_argument("--big-kb", type=int, default=256,
                        help="the value the non-reader asks for again and again")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--kinds", default="0,1,2,3",
                        help="garbage kinds: 0 huge arguments, 1 ECHOs, 2 PINGs, 3 inline")
    parser.add_argument("--no-non-reader", action="store_true")
    args = parser.parse_args(argv)
    # Attackers run on machines of their own: here they yield the CPU to
    # the node and the pair, so what is measured is how the node shares
    # its time, not how this machine shares its cores.
    os.nice(19)
    raise_open_files(args.idle + 256)
    idle = open_idle(args.port, args.idle)
    big_key = b"hostile-big"
    with socket.create_connection(("127.0.0.1", args.port)) as setup:
        setup.sendall(encode(b"SET", big_key, b"v" * (args.big_kb * 1024)))
        assert setup.recv(100) == b"+OK\r\n"
    print("ready", flush=True)
    sys.stdin.readline()  # go
    stop = threading.Event()
    non_reader = NonReaderResult()
    thread = threading.Thread(target=never_read, args=(args.port, big_key, stop, non_reader))
    start = time.monotonic()
    if not args.no_non_reader:
        thread.start()
    try:
        garbage = send_garbage(args.port, args.garbage_mb * MB, args.seed,
                               [int(k) for k in args.kinds.split(",")])
    finally:
        stop.set()
        if thread.is_alive():
            thread.join()
    seconds = time.monotonic() - start
    # the idle connections were open all along: are they still?
    idle_open = sum(1 for s in idle if _still_open(s))
    for s in idle:
        s.close()
    print(json.dumps({"seconds": seconds, "garbage": asdict(garbage),
                      "non_reader": asdict(non_reader), "idle_open": idle_open}),
          flush=True)
    return 0


def _still_open(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True  # nothing to read, not closed
    except OSError:
        return False


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
