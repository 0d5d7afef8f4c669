"""The hash type: a ``Hash`` is a dict (field -> value, both bytes) that
keeps its byte count and Redis's encoding.

Redis 7.0 keeps a small hash as a listpack (insertion order, every field
and value at most ``hash-max-listpack-value`` = 64 bytes, at most
``hash-max-listpack-entries`` = 128 fields: encoding_limits.py) and converts it to a hash
table for good when either bound is crossed.  ``big`` records that
conversion: OBJECT ENCODING answers from it, and a listpack hash is
scanned whole in one HSCAN call, as Redis does.  A dict keeps insertion
order, so HGETALL of a small hash is in Redis's order too.
"""

from __future__ import annotations

from mypy_extensions import mypyc_attr

from .types import ValueType, register_type

HASH_OVERHEAD = 120  # the dict object with its slots, before any entry
# Per field: a dict entry and index slot (~36 at the usual load), two
# bytes objects' headers (~33 each, rounded to pymalloc's 8).
FIELD_OVERHEAD = 112
RECORD_FIELDS = 64  # fields per HSET record of an AOF rewrite


class Hash(dict[bytes, bytes]):  # field -> value
    __slots__ = ("nbytes", "big", "deletions")

    def __init__(self) -> None:
        super().__init__()
        self.nbytes = 0  # FIELD_OVERHEAD + len(field) + len(value), summed
        self.big = False  # converted to a hash table (never back)
        self.deletions = 0  # fields removed so far (HSCAN cursors)


@mypyc_attr(native_class=False)  # (mypyc compiles no tuple subclass)
class FrozenHash(tuple[tuple[bytes, bytes], ...]):  # ((field, value), ...)
    """A hash captured for an AOF rewrite."""
    __slots__ = ()


def hash_memory(value: object) -> int:
    assert isinstance(value, Hash)
    return HASH_OVERHEAD + value.nbytes


def hash_encoding(value: object) -> str:
    assert isinstance(value, Hash)
    return "hashtable" if value.big else "listpack"


def hash_freeze(value: object) -> object:
    assert isinstance(value, Hash)
    return FrozenHash(value.items())


def hash_records(key: bytes, frozen: object) -> list[list[bytes]]:
    assert isinstance(frozen, FrozenHash)
    out = []
    for i in range(0, len(frozen), RECORD_FIELDS):
        argv = [b"HSET", key]
        for field, value in frozen[i:i + RECORD_FIELDS]:
            argv += (field, value)
        out.append(argv)
    return out


def hash_copy(value: object) -> object:
    assert isinstance(value, Hash)
    out = Hash()
    out.update(value)
    out.nbytes = value.nbytes
    out.big = value.big
    return out


HASH = ValueType("hash", (Hash, FrozenHash), hash_memory, hash_encoding, hash_freeze,
                 hash_records, hash_copy)
register_type(HASH)
