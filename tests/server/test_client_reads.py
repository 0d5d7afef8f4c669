"""A plain client's reads (connection.py): a read starts with SMALL_RECV
bytes of room after a short one, and one that fills its room reads the
rest at once.  Requests of every size around that room, alone and behind
each other in one write, are answered whole and in order, and every byte
sent is counted once (INFO's total_net_input_bytes)."""

from trisque.server.clients.connection import RECV_SIZE, SMALL_RECV

from tests.server.util import Raw, encode


def _set_of_size(key, size):
    """SET key <value> encoded in exactly ``size`` bytes, and its value."""
    overhead = len(encode("SET", key, b""))
    value_len = size - overhead
    value = b"v" * value_len
    request = encode("SET", key, value)
    # (the value's length header grows by a digit past 9, 99...)
    while len(request) > size:
        value_len -= 1
        value = b"v" * value_len
        request = encode("SET", key, value)
    assert len(request) == size
    return request, value


def _net_in(raw):
    info = raw.call("INFO", "stats").decode()
    for line in info.splitlines():
        if line.startswith("total_net_input_bytes:"):
            return int(line.split(":")[1])
    raise AssertionError("no total_net_input_bytes")


SIZES = (SMALL_RECV - 1, SMALL_RECV, SMALL_RECV + 1, 2 * SMALL_RECV,
         RECV_SIZE + SMALL_RECV, 3 * RECV_SIZE + 5)


def test_requests_around_the_first_reads_room_are_answered_whole(shared):
    with Raw(shared.port) as raw:
        for size in SIZES:
            key = f"reads-{size}"
            request, value = _set_of_size(key, size)
            raw.send(request)
            assert raw.reply() == b"OK"
            assert raw.call("GET", key) == value
            assert raw.call("PING") == b"PONG"  # (a short read again after it)


def test_pipelines_around_the_first_reads_room_keep_their_order(shared):
    with Raw(shared.port) as raw:
        for size in SIZES:
            key = f"pipe-{size}"
            request, value = _set_of_size(key, size)
            # a full first read, then PINGs and the GET behind it
            raw.send(request + encode("PING") * 40 + encode("GET", key))
            assert raw.reply() == b"OK"
            assert [raw.reply() for _ in range(40)] == [b"PONG"] * 40
            assert raw.reply() == value
        raw.send(encode("PING") * 500)  # many small requests, 7,000 bytes
        assert [raw.reply() for _ in range(500)] == [b"PONG"] * 500


def test_every_byte_read_is_counted_once(shared):
    with Raw(shared.port) as raw:
        for size in SIZES:
            info_request = encode("INFO", "stats")
            before = _net_in(raw)
            request, _value = _set_of_size(f"count-{size}", size)
            raw.send(request)
            assert raw.reply() == b"OK"
            # this INFO's own request is counted before it answers
            assert _net_in(raw) - before == size + len(info_request)
