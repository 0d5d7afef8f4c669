"""Whether this build runs compiled, and the byte reads that pay only then.

Compiled by mypyc, a byte read and i64 arithmetic are plain C, cheaper than
struct's generic unpack and the objects it makes; interpreted, each step is
a Python call and struct is the cheaper way.  The protocol modules choose
their read by ``COMPILED`` (they are compiled together: setup.py).
"""

from importlib.machinery import EXTENSION_SUFFIXES
from typing import Final

from mypy_extensions import i64

COMPILED: Final = __file__.endswith(tuple(EXTENSION_SUFFIXES))


def u16(raw: bytes, o: i64) -> i64:
    """The little-endian unsigned 16-bit integer at raw[o:o + 2]."""
    return i64(raw[o]) | i64(raw[o + 1]) << 8


def u32(raw: bytes, o: i64) -> i64:
    """The little-endian unsigned 32-bit integer at raw[o:o + 4]."""
    return (i64(raw[o]) | i64(raw[o + 1]) << 8 | i64(raw[o + 2]) << 16
            | i64(raw[o + 3]) << 24)
