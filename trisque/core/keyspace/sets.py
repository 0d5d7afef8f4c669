"""The set type: a ``Set`` is a dict of members (member -> itself: no
extra object, and scan.py's lookups see a value) that keeps
its byte count and Redis's encoding.

A dict rather than a Python set: it keeps insertion order, which SSCAN's
cursor (scan.py) needs to resume without missing a member, and it costs
about the same per member.

Redis 7.0 keeps a set of integers (string2ll's, at most
``set-max-intset-entries`` = 512: encoding_limits.py) as an intset, sorted, and converts it
to a hash table for good on the first other member or past the bound.
``intset`` records that: OBJECT ENCODING answers from it, and an intset
is listed in ascending order (SMEMBERS, SSCAN whole in one call, the
results of SUNION/SDIFF), as Redis lists it.
"""

from __future__ import annotations

from .encoding_limits import LIMITS
from .numbers import parse_ll
from .types import ValueType, register_type

SET_OVERHEAD = 120  # the dict object with its slots, before any member
MEMBER_OVERHEAD = 72  # a dict entry and index slot, the bytes object's header
RECORD_MEMBERS = 64  # members per SADD record of an AOF rewrite


class Set(dict[bytes, bytes]):  # member -> member, in insertion order
    __slots__ = ("nbytes", "intset", "deletions")

    def __init__(self) -> None:
        super().__init__()
        self.nbytes = 0  # MEMBER_OVERHEAD + len(member), summed
        self.intset = True  # every member an integer so far (empty: yes)
        self.deletions = 0  # members removed so far (SSCAN cursors)

    def add(self, member: bytes) -> bool:
        """Add ``member``; True if it is new.  (Callers report nbytes'
        change to the keyspace.)"""
        if member in self:
            return False
        self[member] = member
        self.nbytes += MEMBER_OVERHEAD + len(member)
        if self.intset and (parse_ll(member) is None or len(self) > LIMITS.set_intset_entries):
            self.intset = False
        return True

    def remove(self, member: bytes) -> bool:
        if member not in self:
            return False
        del self[member]
        self.nbytes -= MEMBER_OVERHEAD + len(member)
        self.deletions += 1
        return True

    def members(self) -> list[bytes]:
        """Every member in Redis's order where it has one (an intset's)."""
        if self.intset:
            return sorted(self, key=int)
        return list(self)


class FrozenSet(tuple[bytes, ...]):  # (member, ...)
    """A set captured for an AOF rewrite."""
    __slots__ = ()


def set_memory(value: object) -> int:
    assert isinstance(value, Set)
    return SET_OVERHEAD + value.nbytes


def set_encoding(value: object) -> str:
    assert isinstance(value, Set)
    return "intset" if value.intset else "hashtable"


def set_freeze(value: object) -> object:
    assert isinstance(value, Set)
    return FrozenSet(value)


def set_records(key: bytes, frozen: object) -> list[list[bytes]]:
    assert isinstance(frozen, FrozenSet)
    return [[b"SADD", key, *frozen[i:i + RECORD_MEMBERS]]
            for i in range(0, len(frozen), RECORD_MEMBERS)]


def set_copy(value: object) -> object:
    assert isinstance(value, Set)
    out = Set()
    out.update(value)
    out.nbytes = value.nbytes
    out.intset = value.intset
    return out


SET = ValueType("set", (Set, FrozenSet), set_memory, set_encoding, set_freeze, set_records,
                set_copy)
register_type(SET)
