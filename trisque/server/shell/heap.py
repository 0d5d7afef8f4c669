"""glibc's malloc, set for a process that grows to millions of objects.

glibc serves requests above its mmap threshold (128 KiB at start) with
their own mappings, but raises the threshold to the size of each such
block freed, up to 32 MiB.  A broker frees large blocks early (parser
buffers, the job registry's dict tables as it grows), so its later large
lists (a deadline lane of a million jobs, 8 MiB) were realloc'd inside the
heap, and the blocks they moved out of stayed there as holes that pages of
deque blocks above kept from being returned: 1M queued jobs held a free
6.7 MiB chunk and ~2 MiB of smaller ones (malloc_info on a live
trisque-server), 4-6 B/job of RSS (python -m bench memory: 402-403 ->
~398).  A fixed threshold keeps every block of 1 MiB or more in its own
mapping (grown in place by mremap, unmapped when freed); the trim
threshold, no longer adjusted either, is raised so that a pipelined
batch's buffers at the heap's top are not given back and taken again.
"""

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 1 << 20
TRIM_THRESHOLD = 8 << 20


def tune() -> bool:
    """Set the thresholds; False where the C library is not glibc."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):  # not glibc (musl, macOS)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
