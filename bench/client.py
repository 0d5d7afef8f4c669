"""A small RESP client on raw sockets (hiredis parses the replies): one
connection for the batch cycle, and a closed-loop load generator that
replays pre-encoded requests the way redis-benchmark does."""

import selectors
import socket
import time

import hiredis


def encode(*args):
    """One request as RESP multibulk bytes."""
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        if not isinstance(arg, bytes):
            arg = str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(out)


def connect(port):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class Connection:
    """Blocking request/replies on one socket."""

    def __init__(self, port):
        self.sock = connect(port)
        self.reader = hiredis.Reader()

    def call(self, data, count):
        """Send pre-encoded ``data`` holding ``count`` requests; return the
        ``count`` replies."""
        self.sock.sendall(data)
        replies = []
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

    def close(self):
        self.sock.close()


def load(port, requests, clients=50, pipeline=1):
    """Send every pre-encoded request in ``requests`` over ``clients``
    connections, each keeping ``pipeline`` requests in flight (it writes a
    batch and waits for all of its replies before the next, as
    redis-benchmark -P does).  Returns (requests per second, replies),
    replies being the list of every reply, in no particular order."""
    per_client = [requests[i::clients] for i in range(clients)]
    selector = selectors.DefaultSelector()
    states = []
    for mine in per_client:
        if not mine:
            continue
        batches = [(b"".join(mine[i:i + pipeline]), len(mine[i:i + pipeline]))
                   for i in range(0, len(mine), pipeline)]
        state = [connect(port), hiredis.Reader(),
                 batches, 0, 0]  # sock, reader, batches, next batch, awaited
        states.append(state)
    replies = []
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


def _send_next(state):
    data, count = state[2][state[3]]
    state[3] += 1
    state[4] = count
    state[0].sendall(data)
