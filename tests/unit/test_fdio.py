"""shell/fdio.py's read and write of a non-blocking socket: fdio.c's (the
GIL kept, a read's bytes made from a 64 KB buffer of its own, a larger
one the way os.read does it) behave as os.read and os.write: every byte
once and in order, whatever the room asked for around the buffer's size,
BlockingIOError when there is nothing to read or no room to write, b""
at the peer's end, OSError for a closed peer or a bad fd.  Its poll of an
epoll set by the set's fd finds what epoll.poll finds and waits as long."""

import errno
import os
import select
import socket
import threading
import time

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


# ------------------------------------------------------------ the poll

def _polls():
    """fdio.c's poll of a set by its fd, and epoll.poll's, side by side."""
    if fdio.poll is None:
        return [pytest.param(None, id="epoll.poll alone")]
    return [pytest.param(fdio.poll, id="fdio.c")]


@pytest.mark.parametrize("poll", _polls())
def test_poll_finds_what_epoll_poll_finds(pair, poll):
    if poll is None:
        assert not fdio.EXACT  # (no fdio.c: socket_set.py polls by epoll.poll)
        return
    a, b = pair
    c, d = socket.socketpair()
    epoll = select.epoll()
    try:
        epoll.register(a.fileno(), select.EPOLLIN)
        epoll.register(c.fileno(), select.EPOLLIN | select.EPOLLOUT)
        assert poll(epoll.fileno(), 0.0, 32) == [(c.fileno(), select.EPOLLOUT)]
        b.send(b"x")
        d.close()
        expected = sorted(epoll.poll(0, 32))
        assert sorted(poll(epoll.fileno(), 0.0, 32)) == expected
        assert sorted(poll(epoll.fileno(), 5.0, 32)) == expected  # (ready: no wait)
        assert sorted(poll(epoll.fileno(), -1.0, 32)) == expected
        assert {fd for fd, _ in expected} == {a.fileno(), c.fileno()}
        assert all(type(fd) is int and type(mask) is int for fd, mask in expected)
        assert len(poll(epoll.fileno(), 0, 1)) == 1  # (maxevents; an int timeout)
        with pytest.raises(ValueError):
            poll(epoll.fileno(), 0.0, 0)
    finally:
        epoll.close()
        c.close()


@pytest.mark.parametrize("poll", _polls())
def test_poll_waits_its_timeout_at_least_or_until_a_socket_is_ready(pair, poll):
    if poll is None:
        assert fdio.poll is None and not fdio.EXACT
        return
    a, b = pair
    epoll = select.epoll()
    try:
        epoll.register(a.fileno(), select.EPOLLIN)
        for timeout in (0.0, 0.0004, 0.003, 0.0101):
            start = time.perf_counter()
            assert poll(epoll.fileno(), timeout, 32) == []
            assert time.perf_counter() - start >= timeout  # (rounded up: no earlier)
        sender = threading.Timer(0.05, lambda: b.send(b"x"))
        sender.start()
        try:
            start = time.perf_counter()
            assert poll(epoll.fileno(), -1.0, 32) == [(a.fileno(), select.EPOLLIN)]
            assert time.perf_counter() - start >= 0.04
        finally:
            sender.join()
    finally:
        epoll.close()
