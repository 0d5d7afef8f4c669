"""A small RESP client on raw sockets (hiredis parses the replies): one
connection for the batch cycle, and a closed-loop load generator that
replays pre-encoded requests the way redis-benchmark does.

``replay`` and ``cycle`` run bench/loadgen.c (built on demand with the C
compiler) when there is one, and the Python loops here otherwise: on a
2-core machine the loader competes with the server for CPU, so the rows
that replay real job IDs need a loader as lean as redis-benchmark (see
bench/README.md, "The load generator")."""

import dataclasses
import hashlib
import os
import selectors
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Any

import hiredis

LOADGEN_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "loadgen.c")
LOADGEN_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "trisque-bench")
# loadgen with redis-benchmark's loop shape (a batch written on the next
# writable event, epoll interests swapped around it: see bench/loadgen.c),
# the default: its rates match redis-benchmark's, so the rows it measures
# compare with the rows redis-benchmark measures.
C_LIKE_REDIS_BENCHMARK = "loadgen (C, redis-benchmark's loop)"
# loadgen writing each batch at once, no epoll_ctl a request: a lighter
# loader (a higher rate on a machine where loader and server share cores)
C_LEAN = "loadgen (C, lean loop)"
PYTHON_LOADER = "bench.client (Python)"
# --loader's short names
LOADERS = {"c": C_LIKE_REDIS_BENCHMARK, "c-lean": C_LEAN, "python": PYTHON_LOADER}


def encode(*args: object) -> bytes:
    """One request as RESP multibulk bytes."""
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class Connection:
    """Blocking request/replies on one socket."""

    def __init__(self, port: int) -> None:
        self.sock = connect(port)
        self.reader = hiredis.Reader()

    def call(self, data: bytes, count: int) -> list[Any]:
        """Send pre-encoded ``data`` holding ``count`` requests; return the
        ``count`` replies."""
        self.sock.sendall(data)
        replies: list[Any] = []
        reader = self.reader
        while True:
            reply = reader.gets()
            while reply is not False:
                if isinstance(reply, hiredis.ReplyError):
                    raise reply
                replies.append(reply)
                if len(replies) == count:
                    return replies
                reply = reader.gets()
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            reader.feed(chunk)

    def close(self) -> None:
        self.sock.close()


def load(port: int, requests: list[bytes], clients: int = 50,
         pipeline: int = 1) -> tuple[float, list[Any]]:
    """Send every pre-encoded request in ``requests`` over ``clients``
    connections, each keeping ``pipeline`` requests in flight (it writes a
    batch and waits for all of its replies before the next, as
    redis-benchmark -P does).  Returns (requests per second, replies),
    replies being the list of every reply, in no particular order."""
    per_client = [requests[i::clients] for i in range(clients)]
    selector = selectors.DefaultSelector()
    states: list[list[Any]] = []
    for mine in per_client:
        if not mine:
            continue
        batches = [(b"".join(mine[i:i + pipeline]), len(mine[i:i + pipeline]))
                   for i in range(0, len(mine), pipeline)]
        state: list[Any] = [connect(port), hiredis.Reader(),
                 batches, 0, 0]  # sock, reader, batches, next batch, awaited
        states.append(state)
    replies: list[Any] = []
    start = time.perf_counter()
    for state in states:
        _send_next(state)
        selector.register(state[0], selectors.EVENT_READ, state)
    running = len(states)
    while running:
        for key, _ in selector.select():
            state = key.data
            sock, reader = state[0], state[1]
            chunk = sock.recv(262144)
            if not chunk:
                raise ConnectionError("server closed the connection")
            reader.feed(chunk)
            reply = reader.gets()
            while reply is not False:
                replies.append(reply)
                state[4] -= 1
                reply = reader.gets()
            if state[4] == 0:
                if state[3] < len(state[2]):
                    _send_next(state)
                else:
                    selector.unregister(sock)
                    running -= 1
    elapsed = time.perf_counter() - start
    for state in states:
        state[0].close()
    selector.close()
    return len(requests) / elapsed, replies


def _send_next(state: list[Any]) -> None:
    data, count = state[2][state[3]]
    state[3] += 1
    state[4] = count
    state[0].sendall(data)


@dataclasses.dataclass(frozen=True)
class LoadResult:
    """What a replay measured: requests per second and a summary of the
    replies (the C loader keeps no reply values, only these counts)."""

    rate: float
    replies: int
    errors: int
    int_sum: int
    nils: int
    loader: str


def loadgen_binary() -> str | None:
    """Path of the compiled bench/loadgen.c, built into ~/.cache/trisque-bench
    under the hash of its source (so an edit rebuilds it); None when no C
    compiler is found."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        return None
    with open(LOADGEN_SOURCE, "rb") as f:
        source = f.read()
    digest = hashlib.sha256(source).hexdigest()[:16]
    path = os.path.join(LOADGEN_CACHE, f"loadgen-{digest}")
    if os.path.exists(path):
        return path
    os.makedirs(LOADGEN_CACHE, exist_ok=True)
    # Built under a temporary name and renamed: concurrent builds (two
    # test workers) each finish with a whole binary.
    fd, tmp = tempfile.mkstemp(dir=LOADGEN_CACHE, prefix=".loadgen-")
    os.close(fd)
    try:
        subprocess.run([compiler, "-O2", "-o", tmp, LOADGEN_SOURCE],
                       check=True, capture_output=True)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def choose_loader(loader: str = "auto") -> str:
    """A key of LOADERS, one of its values, or ``"auto"`` (C with
    redis-benchmark's loop when a compiler is found, else Python) -> the
    loader's name."""
    name = LOADERS.get(loader, loader)
    if name == PYTHON_LOADER:
        return name
    if name not in (C_LEAN, C_LIKE_REDIS_BENCHMARK, "auto"):
        raise ValueError(f"unknown loader {loader!r}")
    if loadgen_binary():
        return C_LIKE_REDIS_BENCHMARK if name == "auto" else name
    if name != "auto":
        raise RuntimeError(f"loader {loader}: no C compiler (cc, gcc or $CC) "
                           "to build bench/loadgen.c")
    return PYTHON_LOADER


def run_loadgen(*args: object) -> dict[str, float]:
    """Run loadgen and read its result line (key=value pairs)."""
    binary = loadgen_binary()
    if binary is None:
        raise RuntimeError("no C compiler to build bench/loadgen.c")
    out = subprocess.run([binary, *map(str, args)], check=True,
                         capture_output=True, text=True).stdout
    return {key: float(value) for key, value in
            (field.split("=", 1) for field in out.split())}


def replay(port: int, requests: list[bytes], clients: int = 50, pipeline: int = 1,
           loader: str = "auto") -> LoadResult:
    """``load`` by the chosen loader (see ``choose_loader``), summarised."""
    name = choose_loader(loader)
    if name == PYTHON_LOADER:
        rate, replies = load(port, requests, clients, pipeline)
        return LoadResult(rate, len(replies),
                          sum(isinstance(r, hiredis.ReplyError) for r in replies),
                          sum(r for r in replies if isinstance(r, int)),
                          sum(r is None for r in replies), name)
    with tempfile.NamedTemporaryFile(prefix="trisque-loadgen-", suffix=".resp") as f:
        f.write(b"".join(requests))
        f.flush()
        style = ["like-redis-benchmark"] if name == C_LIKE_REDIS_BENCHMARK else []
        got = run_loadgen("replay", port, clients, pipeline, f.name, *style)
    return LoadResult(got["requests"] / got["elapsed"], int(got["replies"]),
                      int(got["errors"]), int(got["int_sum"]), int(got["nils"]), name)


def cycle(port: int, jobs: int, batch: int, kind: str, loader: str = "auto") -> float:
    """Jobs per second through one connection, ``batch`` at a time: for
    ``kind`` "redis" pipelined LPUSH x batch then RPOP cycle batch; for
    any other (a Disque-compatible server) pipelined ADDJOB x batch,
    GETJOB NOHANG COUNT batch, ACKJOB of the IDs that came back."""
    if choose_loader(loader) != PYTHON_LOADER:  # one connection: one C loop
        got = run_loadgen("cycle", port, jobs, batch,
                           "lists" if kind == "redis" else "jobs")
        return max(1, jobs // batch) * batch / got["elapsed"]
    conn = Connection(port)
    body = b"x" * 12
    rounds = max(1, jobs // batch)
    if kind == "redis":
        push = b"".join(encode("LPUSH", "cycle", body) for _ in range(batch))
        pop = encode("RPOP", "cycle", batch)
    else:
        push = b"".join(encode("ADDJOB", "cycle", body, 0) for _ in range(batch))
        get = encode("GETJOB", "NOHANG", "COUNT", batch, "FROM", "cycle")
    start = time.perf_counter()
    for _ in range(rounds):
        if kind == "redis":
            conn.call(push, batch)
            got = conn.call(pop, 1)[0]
            if len(got) != batch:
                raise RuntimeError(f"RPOP gave {len(got)} of {batch}")
        else:
            conn.call(push, batch)
            got = conn.call(get, 1)[0]
            if len(got) != batch:
                raise RuntimeError(f"GETJOB gave {len(got)} of {batch}")
            acked = conn.call(encode("ACKJOB", *[job[1] for job in got]), 1)[0]
            if acked != batch:
                raise RuntimeError(f"ACKJOB acked {acked} of {batch}")
    elapsed = time.perf_counter() - start
    conn.close()
    return rounds * batch / elapsed
