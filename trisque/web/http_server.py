"""The HTTP port's listeners: accept, cap the connections, serve each one.

Bound to the node's ``bind`` addresses on ``http-port``.  At most
``MAX_CONNECTIONS`` connections are served at once; one more is closed at
once (a flood of idle sockets costs the node nothing but descriptors).
"""

import socket
import trio

from ..shell import log
from ..shell.listening import open_listener
from .http_connection import Handler, Limits, serve_connection

MAX_CONNECTIONS = 64


class HttpServer:
    def __init__(self, handle: Handler, limits: Limits = Limits(),
                 max_connections: int = MAX_CONNECTIONS) -> None:
        self.handle = handle
        self.limits = limits
        self.max_connections = max_connections
        self.connections = 0
        self.rejected = 0
        self.listeners: list[socket.socket] = []

    def bind(self, addresses: list[str], port: int, backlog: int) -> None:
        """Open the listening sockets now, so a bind error stops start-up."""
        for address in addresses:
            self.listeners.append(open_listener(address, port, backlog))

    def serve(self, nursery: trio.Nursery) -> None:
        for sock in self.listeners:
            nursery.start_soon(self._accept_forever, sock, nursery)

    async def _accept_forever(self, sock: socket.socket, nursery: trio.Nursery) -> None:
        listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
        while True:
            try:
                stream = await listener.accept()
            except OSError as exc:  # out of descriptors: wait, try again
                log.warning(f"Error accepting an HTTP connection: {exc.strerror}")
                await trio.sleep(0.1)
                continue
            if self.connections >= self.max_connections:
                self.rejected += 1
                with trio.move_on_after(0):
                    await stream.aclose()
                continue
            self.connections += 1
            nursery.start_soon(self._serve, stream)

    async def _serve(self, stream: trio.SocketStream) -> None:
        try:
            await serve_connection(stream, self.handle, self.limits, _peer(stream))
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        except Exception as exc:  # a bug here must not take the node down
            log.warning(f"HTTP connection failed: {exc!r}")
        finally:
            self.connections -= 1



def _peer(stream: trio.SocketStream) -> str:
    try:
        host, port = stream.socket.getpeername()[:2]
    except OSError:  # (already reset by the peer)
        return "?"
    return f"{host}:{port}"
