"""A bus link's reads (cluster/tcp/transport.py): a plain link whose last
read was short reads SMALL_READ bytes first, and reads the rest at once
when that filled; a long read goes to the transport's buffer.  Whatever
the sizes the peer's bytes arrive in, every frame is handled exactly once,
in order, and frames split between reads are joined."""

import socket
import time

from trisque.cluster.tcp.transport import SMALL_READ
from trisque.protocol import bus

from .test_bus import _bus_conn, _header, _healthy


def _pongs(sock, expected, timeout=10):
    """The types of the frames the node sent back until ``expected`` of
    them came, and the bytes after them."""
    sock.settimeout(timeout)
    got = b""
    types = []
    pos = 0
    deadline = time.monotonic() + timeout
    while len(types) < expected:
        assert time.monotonic() < deadline, f"{len(types)} of {expected} PONGs"
        try:
            data = sock.recv(65536)
        except socket.timeout:
            break
        assert data, f"link closed after {len(types)} of {expected} PONGs"
        got += data
        while True:
            length = bus.frame_length(got, pos)
            if length is None or len(got) - pos < length:
                break
            types.append(got[pos + bus.TYPE_OFFSET])
            pos += length
    return types, got[pos:]


def test_frames_arriving_in_any_split_around_the_small_read(cluster3):
    """PINGs sent in pieces of SMALL_READ bytes exactly (a small read that
    fills its room with nothing after it, a frame cut at its end), one
    byte more or less, a piece of a small read and a long one together,
    then short pieces again: each PING is answered once."""
    c = cluster3
    peer_id = c.ids()[1]
    ping = bus.gossip(_header(peer_id, c.servers[1].port, c.servers[1].port + 10000),
                      bus.PING, [])
    count = 120
    stream = ping * count
    sizes = [SMALL_READ, SMALL_READ - 1, SMALL_READ + 1, SMALL_READ, 3 * SMALL_READ + 7,
             SMALL_READ, 5, len(ping) - 5, 100, SMALL_READ * 2, 1, SMALL_READ - 1]
    sock = _bus_conn(c, 0)
    pos = 0
    for size in sizes:
        sock.sendall(stream[pos:pos + size])
        pos += size
        time.sleep(0.05)  # (a read of its own)
    assert pos < len(stream)
    sock.sendall(stream[pos:])
    types, _ = _pongs(sock, count)
    sock.close()
    assert types == [bus.PONG] * count
    _healthy(c)


def test_a_small_read_that_fills_then_the_end_of_the_link(cluster3):
    """SMALL_READ bytes of whole PINGs and the start of one, then the peer
    closes: the PINGs are answered, and the node drops the link (the end
    is met by the next read) and stays healthy."""
    c = cluster3
    peer_id = c.ids()[1]
    ping = bus.gossip(_header(peer_id, c.servers[1].port, c.servers[1].port + 10000),
                      bus.PING, [])
    whole = SMALL_READ // len(ping)
    assert whole * len(ping) < SMALL_READ
    sock = _bus_conn(c, 0)
    sock.sendall((ping * (whole + 1))[:SMALL_READ])
    sock.shutdown(socket.SHUT_WR)
    types, rest = _pongs(sock, whole)
    assert types == [bus.PONG] * whole
    sock.settimeout(5)
    while True:
        data = sock.recv(65536)
        if not data:
            break
        rest += data
    sock.close()
    assert bus.MAGIC not in rest, "no more PONGs than whole PINGs"
    _healthy(c)
