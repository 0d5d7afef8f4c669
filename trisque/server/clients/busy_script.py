"""Serving the other clients while a script runs past its time limit.

A script runs inside one client's turn of the event loop (the core never
awaits, so nothing else runs meanwhile: that is what makes it atomic).
Past ``busy-reply-threshold`` the Lua hook (core/keyspace/scripting.py)
calls ``node.on_busy``, which is ``serve_while_busy`` here: synchronously,
from inside the hook, it accepts new connections, reads what the other
clients sent (one ``epoll.poll(0)``, non-blocking ``recv``s) and answers
each request through ``execute_while_busy``: -BUSY for almost everything,
SCRIPT KILL (which marks the script killed: the hook raises the kill error
on its way back into Lua) and the few commands Redis 7 allows then.
Replies are sent at once with a non-blocking send (and so are the replies
of the requests run earlier in the script's turn, waiting for the turn's
end); what the kernel does not take stays in the connection's buffer for
the event loop.

Clients in a state the event loop owns (blocked, held for the AOF, closing,
with requests not run yet) are left alone until the script ends.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ...protocol.resp import ProtocolError, error
from ...core.keyspace.scripting import execute_while_busy

if TYPE_CHECKING:
    from .connection import ClientServer

SERVE_EVERY_S = 0.005  # at most this often from the hook (~1 ms of Lua per call)
ACCEPT_PER_CALL = 16  # new connections taken per call
RECV_SIZE = 16 * 1024


class BusyServer:
    def __init__(self, server: ClientServer) -> None:
        self.server = server
        self.next_s = 0.0

    def __call__(self) -> None:
        now = time.monotonic()
        if now < self.next_s:
            return
        self.next_s = now + SERVE_EVERY_S
        server = self.server
        node = server.node
        self._accept()
        scripting = node.scripting
        caller = scripting.running.caller if scripting and scripting.running else None
        # Replies of requests run in this turn before the script (other
        # clients, earlier in the same epoll batch) are only sent at the end
        # of the turn: send them now, or their clients wait for them and
        # never get to send anything (not even SCRIPT KILL) while the
        # script runs.  (Redis's processEventsWhileBlocked writes pending
        # replies too.)  What the kernel does not take stays for the loop.
        for conn in server.replying:
            if not conn.closed and not conn.held and conn.mark <= node.log.durable:
                conn.flush(node.stats)
        for fd, _events in server.epoll.poll(0):
            other = server.conns.get(fd)
            if other is None:
                continue
            conn = other
            if conn.closed or conn.held or conn.closing or conn.pending:
                continue
            client = conn.client
            if client is caller or client.blocked is not None or client.close_after_reply:
                continue
            try:
                data = conn.sock.recv(RECV_SIZE)
            except BlockingIOError:
                continue
            except OSError:
                server._close(conn)
                continue
            if not data:
                server._close(conn)
                continue
            node.stats.net_in += len(data)
            try:
                requests = conn.parser.feed(data)
            except ProtocolError as exc:
                requests = getattr(exc, "requests", [])
                self._run(conn, requests)
                client.out.append(error(f"ERR {exc}"))
                conn.closing = True
            else:
                self._run(conn, requests)
            if conn.mark <= node.log.durable:
                conn.flush(node.stats)
            server.replying.append(conn)  # the event loop finishes the output

    def _run(self, conn, requests) -> None:
        node = self.server.node
        client = conn.client
        client.last_ms = node.now_ms()
        for argv in requests:
            if client.close_after_reply or client.killed:
                break
            execute_while_busy(node, client, argv)

    def _accept(self) -> None:
        server = self.server
        for listener in server.listeners:
            for _ in range(ACCEPT_PER_CALL):
                try:
                    sock, addr = listener.accept()
                except OSError:
                    break
                server._accepted(sock, addr)
