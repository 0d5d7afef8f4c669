"""Reads and writes of the event loop's non-blocking sockets by their fd,
and its epoll set's poll: fdio.c's (the GIL kept, a read's bytes of just
its size) where it was built, else os.read, os.write and epoll.poll, which
do the same (bench/README.md, "The loop's system calls, twenty-ninth
session")."""

import os
from typing import Callable, Final

read: Callable[[int, int], bytes]
write: Callable[[int, bytes | memoryview], int]
# An epoll set's poll by its fd (socket_set.py); None: epoll.poll's
poll: Callable[[int, float, int], list[tuple[int, int]]] | None
try:
    from ._fdio import poll, read, write
except ImportError:  # (not built: TRISQUE_PURE=1, or no C compiler)
    read = os.read
    write = os.write
    poll = None

# A read returns bytes of its size, whatever n: no small first read is
# needed to spare the allocation of n (connection.py, transport.py).
EXACT: Final = read is not os.read
