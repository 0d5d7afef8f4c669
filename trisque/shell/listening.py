"""Listening sockets and their accept loops, for clients and the cluster bus."""

import errno
import socket
from typing import Any, Callable

import trio

from . import log

# Out of descriptors or memory: log, wait a little, accept again (the node
# keeps serving the connections it has).
_TRANSIENT = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def open_listener(address: str, port: int, backlog: int) -> socket.socket:
    """A non-blocking TCP socket listening on ``address`` (IPv4 or IPv6)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((address, port))
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


async def accept_forever(listener: socket.socket, what: str,
                         on_accept: Callable[[socket.socket, Any], None]) -> None:
    """Hand every connection ``listener`` accepts to ``on_accept(sock,
    addr)``; ``what`` names them in log lines."""
    while True:
        try:
            sock, addr = listener.accept()
        except BlockingIOError:
            await trio.lowlevel.wait_readable(listener)
            continue
        except OSError as exc:
            if exc.errno in _TRANSIENT:
                log.warning(f"Error accepting a {what}: {exc.strerror}")
                await trio.sleep(0.1)
                continue
            raise
        on_accept(sock, addr)
