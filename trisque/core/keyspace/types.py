"""The type registry: what the keyspace knows about each kind of value.

A value's Python class is its Redis type: ``bytes`` and ``bytearray`` are
strings (a ``bytearray`` is a string that APPEND or SETRANGE grew in place,
Redis's "raw" encoding), and each collection type registers its own class
(a list, hash, set, zset module adds one ``ValueType``).  Looking a value's
type up is one dict access on its class, so commands stay lean.

Each ``ValueType`` says:
- ``name``: what TYPE answers (``string``, ``list``...);
- ``memory(value)``: the bytes it is estimated to hold, for ``maxmemory``
  (commands that change a value in place report the difference themselves
  through ``Keyspace.grow``);
- ``encoding(value)``: what OBJECT ENCODING answers;
- ``freeze(value)``: an immutable copy taken when an AOF rewrite starts
  (the snapshot must not see later changes; bytes are already immutable);
- ``records(key, frozen)``: the AOF records that rebuild the key, as
  argument lists (expiry times are added by the keyspace);
- ``copy(value)``: an independent value equal to it, encoding included
  (COPY); a type without one is copied by ``copy.deepcopy``.
"""

from __future__ import annotations

from typing import Callable, Iterable

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"

Records = Iterable[list[bytes]]


class ValueType:
    __slots__ = ("name", "classes", "memory", "encoding", "freeze", "records", "copy")

    def __init__(self, name: str, classes: tuple[type, ...],
                 memory: Callable[[object], int],
                 encoding: Callable[[object], str],
                 freeze: Callable[[object], object],
                 records: Callable[[bytes, object], Records],
                 copy: Callable[[object], object] | None = None) -> None:
        self.name = name
        self.classes = classes
        self.memory = memory
        self.encoding = encoding
        self.freeze = freeze
        self.records = records
        self.copy = copy


TYPES: dict[type, ValueType] = {}
NAMES: dict[str, ValueType] = {}


def register_type(value_type: ValueType) -> None:
    for cls in value_type.classes:
        TYPES[cls] = value_type
    NAMES[value_type.name] = value_type


def type_of(value: object) -> ValueType:
    return TYPES[type(value)]


def memory_of(value: object) -> int:
    return TYPES[type(value)].memory(value)
