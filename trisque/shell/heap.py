"""glibc's malloc, set for a process that grows to millions of objects.

glibc serves requests above its mmap threshold (128 KiB at start) with
their own mappings, but raises the threshold to the size of each such
block freed, up to 32 MiB.  A broker frees large blocks early (parser
buffers, the job registry's dict tables as it grows), so its later large
lists (a deadline lane of a million jobs) were realloc'd inside the heap,
and the blocks they moved out of stayed there as holes that pages above
kept from being returned.  A fixed threshold keeps every block of 1 MiB
or more in its own mapping (grown in place by mremap, unmapped when
freed); the trim threshold, no longer adjusted either, is raised so that
a pipelined batch's buffers at the heap's top are not given back and
taken again.

glibc gives pages back by itself only from the heap's top.  Job bodies
under 1 MiB live in the heap, so a drained burst of large jobs kept its
pages whenever anything was allocated above them.  So once used_memory
has fallen GIVE_BACK_BYTES below its high point, malloc_trim(0) returns
every free page of the heap (once per drain; nothing at a steady state).
What each change measured: bench/README.md, "The heap".
"""

import ctypes
import ctypes.util
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from ..core.admin.info import rss_bytes
from . import log

if TYPE_CHECKING:
    from ..core.node import Node

M_TRIM_THRESHOLD: Final = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD: Final = -3
MMAP_THRESHOLD: Final = 1 << 20
TRIM_THRESHOLD: Final = 8 << 20
GIVE_BACK_BYTES: Final = 32 << 20  # freed below the high point before a trim
GIVE_BACK_PERIOD_S: Final = 0.1  # how often used_memory is looked at

_malloc_trim: Callable[[int], int] | None = None  # glibc's, once tune() found it


def tune() -> bool:
    """Set the thresholds; False where the C library is not glibc."""
    global _malloc_trim
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
        malloc_trim = libc.malloc_trim
    except (OSError, AttributeError, TypeError):  # not glibc (musl, macOS)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    malloc_trim.argtypes = (ctypes.c_size_t,)
    malloc_trim.restype = ctypes.c_int
    _malloc_trim = malloc_trim
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def give_back() -> bool:
    """Return the heap's free pages to the system now; False without glibc."""
    if _malloc_trim is None:
        return False
    _malloc_trim(0)
    return True


class GiveBack:
    """Trim whenever used_memory has fallen GIVE_BACK_BYTES below the
    highest it reached since the last trim: ``check`` every
    GIVE_BACK_PERIOD_S (in the client loop's turns, shell/timers.py)."""

    node: "Node"
    high: int  # used_memory's high point since the last trim

    def __init__(self, node: "Node") -> None:
        self.node = node
        self.high = node.used_memory

    def check(self) -> None:
        used = self.node.used_memory
        if used > self.high:
            self.high = used
        elif self.high - used >= GIVE_BACK_BYTES:
            before = rss_bytes()
            started = time.perf_counter()
            give_back()
            took_ms = (time.perf_counter() - started) * 1000
            log.verbose(f"Freed heap pages given back in {took_ms:.1f} ms: RSS "
                        f"{before >> 20} -> {rss_bytes() >> 20} MB (used_memory {used >> 20} MB)")
            self.high = used


def trims() -> bool:
    """Whether give_back() can return pages here (glibc, after tune())."""
    return _malloc_trim is not None
