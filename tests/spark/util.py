"""Reading the broker's state back in the Spark tests."""

from __future__ import annotations

import socket
import threading
from typing import Any

import redis


def jobs_on(client: redis.Redis, queue: str | None = None,
            states: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """Every job a node holds (JSCAN REPLY all), by ID."""
    out: dict[str, dict[str, Any]] = {}
    cursor = b"0"
    args: list[Any] = ["COUNT", 5000, "BUSYLOOP"]
    if queue is not None:
        args += ["QUEUE", queue]
    for state in states:
        args += ["STATE", state]
    while True:
        cursor, items = client.execute_command("JSCAN", cursor, *args, "REPLY", "all")
        for item in items:
            fields = {k.decode(): v for k, v in zip(item[::2], item[1::2])}
            out[fields["id"].decode()] = fields
        if int(cursor) == 0:
            return out


def bodies(jobs: dict[str, dict[str, Any]]) -> list[bytes]:
    return sorted(job["body"] for job in jobs.values())


def nodes_option(*servers: Any) -> str:
    return ",".join(f"127.0.0.1:{s.port}" for s in servers)


class Gate:
    """Requests carrying ``token`` wait at a HoldingProxy until release()."""

    def __init__(self, token: bytes) -> None:
        self.token = token
        self.held = threading.Event()  # set once a request was held
        self.released = threading.Event()

    def release(self) -> None:
        self.released.set()


class HoldingProxy:
    """A TCP proxy to one node that holds a connection's traffic from the
    first request carrying one of ``tokens`` (e.g. b"ADDJOB") until that
    token's gate is released: a writer task going through it stalls
    mid-write, at the test's will.  Other requests (PING, SET, GET,
    FASTACK) pass meanwhile."""

    def __init__(self, port: int, *tokens: bytes) -> None:
        self.target = ("127.0.0.1", port)
        self.gates = {token: Gate(token) for token in tokens}
        self.held = self.gates[tokens[0]].held  # the first token's
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            self.sockets += [client, server]
            threading.Thread(target=self._pipe, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, False),
                             daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, upstream: bool) -> None:
        try:
            while True:
                data = source.recv(1 << 16)
                if not data:
                    break
                for gate in self.gates.values() if upstream else ():
                    if gate.token in data and not gate.released.is_set():
                        gate.held.set()
                        gate.released.wait(120)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def release(self) -> None:
        for gate in self.gates.values():
            gate.release()

    def close(self) -> None:
        self.release()
        self.listener.close()
        for s in self.sockets:
            s.close()
