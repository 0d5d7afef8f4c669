"""trisque-server's malloc settings (shell/heap.py)."""

import platform

import pytest

from trisque.shell import heap


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_tune_sets_glibc_thresholds() -> None:
    assert heap.tune() is True


def test_tune_leaves_a_working_allocator() -> None:
    heap.tune()
    big = [bytearray(heap.MMAP_THRESHOLD + i) for i in range(4)]  # own mappings now
    big[1][-1] = 7
    assert [len(b) for b in big] == [heap.MMAP_THRESHOLD + i for i in range(4)]
    assert big[1][-1] == 7
