"""Raw-socket RESP client for tests that need exact bytes on the wire."""

import socket
import threading
import time

import hiredis


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Raw:
    """One TCP connection; ``call`` sends a multibulk request and returns
    the decoded reply (errors as hiredis.ReplyError instances)."""

    def __init__(self, port, timeout=10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.reader = hiredis.Reader()
        self.unread = b""  # bytes received past read_until's last marker

    def send(self, data):
        self.sock.sendall(data)

    def send_command(self, *args):
        self.send(encode(*args))

    def reply(self):
        """The next reply; raises ConnectionError if the server closed."""
        while True:
            item = self.reader.gets()
            if item is not False:
                return item
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed by server")
            self.reader.feed(data)

    def call(self, *args):
        self.send_command(*args)
        return self.reply()

    def send_requests(self, *requests):
        """Each request (a list of arguments) as one multibulk, in one write."""
        self.send(b"".join(encode(*argv) for argv in requests))

    def read_until(self, marker, timeout=10):
        """The raw bytes up to and including the first ``marker`` (for
        differential tests that compare whole streams byte for byte)."""
        deadline = time.monotonic() + timeout
        while marker not in self.unread:
            assert time.monotonic() < deadline, f"no {marker!r} in {self.unread[-300:]!r}"
            data = self.sock.recv(65536)
            assert data, f"closed; got {self.unread[-300:]!r}"
            self.unread += data
        end = self.unread.index(marker) + len(marker)
        out, self.unread = self.unread[:end], self.unread[end:]
        return out

    def read_line(self):
        data = b""
        while not data.endswith(b"\n"):
            chunk = self.sock.recv(1)
            if not chunk:
                break
            data += chunk
        return data

    def read_all_until_closed(self, timeout=5):
        """Everything the server sends until it closes the connection."""
        self.sock.settimeout(timeout)
        out = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            chunk = self.sock.recv(65536)
            if not chunk:
                return out
            out += chunk
        raise AssertionError(f"connection still open; got {out!r}")

    def pending(self, wait=0.05):
        """Whatever arrived within ``wait`` seconds (b"" if nothing)."""
        self.sock.settimeout(wait)
        try:
            return self.sock.recv(65536)
        except socket.timeout:
            return b""
        finally:
            self.sock.settimeout(10)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def raw_replies(port, commands):
    """Each command's reply as the bytes on the wire, over one connection
    (``#sleep`` pauses 20 ms instead of sending)."""
    out = []
    with Raw(port) as conn:
        for argv in commands:
            if argv[0] in (b"#sleep", "#sleep"):
                time.sleep(0.02)
                out.append(b"")
                continue
            conn.send_command(*argv)
            reader = hiredis.Reader(notEnoughData=Ellipsis)
            data = b""
            while True:
                chunk = conn.sock.recv(65536)
                if not chunk:
                    break
                data += chunk
                reader.feed(chunk)
                try:
                    if reader.gets() is not Ellipsis:
                        break
                except hiredis.ProtocolError:
                    break  # (deeper than hiredis reads: the bytes are enough)
            out.append(data)
    return out


def reads_never_torn(server, write_pair, rounds=300):
    """Run ``write_pair()`` (which sets x and y to the same value in one
    atomic step) ``rounds`` times while another client reads both keys;
    the pairs that reader saw."""
    stop = threading.Event()
    seen = []

    def reader():
        r = server.client()
        while not stop.is_set():
            seen.append(tuple(r.mget("x", "y")))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for _ in range(rounds):
            write_pair()
    finally:
        stop.set()
        thread.join()
    return seen
