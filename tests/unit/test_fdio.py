"""shell/fdio.py's read and write of a non-blocking socket: fdio.c's (the
GIL kept, a read's bytes made from a 64 KB buffer of its own, a larger
one the way os.read does it) behave as os.read and os.write: every byte
once and in order, whatever the room asked for around the buffer's size,
BlockingIOError when there is nothing to read or no room to write, b""
at the peer's end, OSError for a closed peer or a bad fd."""

import errno
import os
import socket

import pytest

from trisque.core.admin.build_form import is_compiled
from trisque.shell import fdio

IMPLEMENTATIONS = [pytest.param((os.read, os.write), id="os")]
if fdio.EXACT:
    IMPLEMENTATIONS.append(pytest.param((fdio.read, fdio.write), id="fdio.c"))

BUFFER = 64 * 1024  # fdio.c's own


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    yield a, b
    a.close()
    b.close()


def _fill(write, fd, data):
    """Write ``data`` until the kernel takes no more: what it took."""
    taken = 0
    while taken < len(data):
        try:
            taken += write(fd, memoryview(data)[taken:])
        except BlockingIOError:
            break
    return taken


def _drain(read, fd, n):
    """Read with room ``n`` until nothing waits: the bytes, in order."""
    parts = []
    while True:
        try:
            part = read(fd, n)
        except BlockingIOError:
            return b"".join(parts)
        assert type(part) is bytes and 0 < len(part) <= n
        parts.append(part)


def test_the_compiled_core_has_fdio_built_beside_it():
    # (fdio.c is plain C: a build that compiled the core compiles it too)
    assert fdio.EXACT == is_compiled()


@pytest.mark.parametrize("io", IMPLEMENTATIONS)
def test_nothing_to_read_is_blocking_io_error(pair, io):
    read, _write = io
    a, _b = pair
    with pytest.raises(BlockingIOError):
        read(a.fileno(), 100)


@pytest.mark.parametrize("io", IMPLEMENTATIONS)
def test_a_read_takes_at_most_its_room_and_the_rest_waits(pair, io):
    read, write = io
    a, b = pair
    assert write(b.fileno(), b"hello, world") == 12
    assert read(a.fileno(), 5) == b"hello"
    assert read(a.fileno(), 1) == b","
    assert read(a.fileno(), 100) == b" world"
    assert read(a.fileno(), 0) == b""


@pytest.mark.parametrize("io", IMPLEMENTATIONS)
@pytest.mark.parametrize("room", [1, 448, BUFFER - 1, BUFFER, BUFFER + 1, 4 * BUFFER])
def test_every_byte_once_and_in_order_around_the_buffers_size(pair, io, room):
    read, write = io
    a, b = pair
    data = bytes(range(256)) * (3 * BUFFER // 256) + b"tail"
    got = b""
    taken = 0
    while taken < len(data) or len(got) < taken:
        taken += _fill(write, b.fileno(), data[taken:])
        got += _drain(read, a.fileno(), room)
    assert got == data


@pytest.mark.parametrize("io", IMPLEMENTATIONS)
def test_writes_take_bytes_and_views_and_say_how_much(pair, io):
    read, write = io
    a, b = pair
    assert write(b.fileno(), b"") == 0
    assert write(b.fileno(), memoryview(b"0123456789")[3:7]) == 4
    assert write(b.fileno(), bytearray(b"ab")) == 2
    assert read(a.fileno(), 100) == b"3456ab"


@pytest.mark.parametrize("io", IMPLEMENTATIONS)
def test_a_full_socket_is_blocking_io_error(pair, io):
    _read, write = io
    _a, b = pair
    assert _fill(write, b.fileno(), b"x" * (8 * 1024 * 1024)) < 8 * 1024 * 1024
    with pytest.raises(BlockingIOError):
        write(b.fileno(), b"x" * BUFFER)


@pytest.mark.parametrize("io", IMPLEMENTATIONS)
def test_the_peers_end_and_errors(pair, io):
    read, write = io
    a, b = pair
    write(b.fileno(), b"last")
    b.close()
    assert read(a.fileno(), 100) == b"last"
    assert read(a.fileno(), 100) == b""
    assert read(a.fileno(), 4 * BUFFER) == b""
    with pytest.raises(BrokenPipeError):
        write(a.fileno(), b"to nobody")
    fd = os.dup(a.fileno())
    os.close(fd)
    with pytest.raises(OSError) as bad_read:
        read(fd, 10)
    assert bad_read.value.errno == errno.EBADF
    with pytest.raises(OSError) as bad_write:
        write(fd, b"x")
    assert bad_write.value.errno == errno.EBADF
