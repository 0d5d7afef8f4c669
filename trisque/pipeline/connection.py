"""A minimal RESP client for executors and the driver: one socket, requests
pre-encoded as bytes and sent in one write, replies parsed by hiredis.

Why not redis-py: its pipelines cost several times the client CPU a job
(bench/README.md, "The Spark pipeline's client"); hiredis is already a
dependency of trisque itself."""

from __future__ import annotations

import socket
from typing import Sequence, Union

import hiredis

Reply = Union[bytes, int, list, None, hiredis.ReplyError]
Address = tuple[str, int]

RECEIVE_BYTES = 1 << 16


class NodeUnavailable(ConnectionError):
    """A node could not be reached, or the connection broke mid-request."""


def encode(*args: Union[bytes, str, int]) -> bytes:
    """One request as RESP multibulk bytes."""
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        if not isinstance(arg, bytes):
            arg = str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(out)


def format_address(address: Address) -> str:
    return f"{address[0]}:{address[1]}"


class Connection:
    """Blocking pipelined requests to one node."""

    def __init__(self, address: Address, timeout_s: float) -> None:
        self.address = address
        try:
            self.sock = socket.create_connection(address, timeout=timeout_s)
        except OSError as e:
            raise NodeUnavailable(f"{format_address(address)}: {e}") from e
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = hiredis.Reader()

    def pipeline(self, requests: Sequence[bytes]) -> list[Reply]:
        """Send every request at once and return their replies in order;
        error replies come back as ``hiredis.ReplyError`` values, so one bad
        job does not hide the replies of the others."""
        if not requests:
            return []
        replies: list[Reply] = []
        want = len(requests)
        try:
            self.sock.sendall(b"".join(requests))
            reader = self.reader
            while True:
                reply = reader.gets()
                while reply is not False:
                    replies.append(reply)
                    if len(replies) == want:
                        return replies
                    reply = reader.gets()
                chunk = self.sock.recv(RECEIVE_BYTES)
                if not chunk:
                    raise NodeUnavailable(f"{format_address(self.address)} closed the connection")
                reader.feed(chunk)
        except OSError as e:  # timeouts included: the node is not answering
            self.close()
            raise NodeUnavailable(f"{format_address(self.address)}: {e}") from e

    def call(self, *args: Union[bytes, str, int]) -> Reply:
        """One request; an error reply is raised."""
        reply = self.pipeline([encode(*args)])[0]
        if isinstance(reply, hiredis.ReplyError):
            raise reply
        return reply

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
