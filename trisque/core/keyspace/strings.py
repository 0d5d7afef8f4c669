"""The string type: values are ``bytes``, or ``bytearray`` once APPEND or
SETRANGE changed them in place (amortized O(1) appends, as Redis's sds).

OBJECT ENCODING follows Redis's tryObjectEncoding from the bytes: "int"
for what string2l reads back exactly (20 characters at most), "embstr" up
to 44 bytes, "raw" above, and "raw" for any string changed in place.
"""

from __future__ import annotations

from .numbers import parse_ll
from .types import ValueType, register_type

STRING_OVERHEAD = 40  # a bytes object's header, rounded to pymalloc's 8
EMBSTR_MAX = 44
MAX_STRING = 512 * 1024 * 1024  # proto-max-bulk-len's default, as Redis


def string_memory(value: object) -> int:
    assert isinstance(value, (bytes, bytearray))
    return STRING_OVERHEAD + len(value)


def string_encoding(value: object) -> str:
    if type(value) is bytearray:
        return "raw"
    assert isinstance(value, bytes)
    if len(value) <= 20 and parse_ll(value) is not None:
        return "int"
    return "embstr" if len(value) <= EMBSTR_MAX else "raw"


def string_freeze(value: object) -> object:
    return bytes(value) if type(value) is bytearray else value


def string_records(key: bytes, frozen: object) -> list[list[bytes]]:
    assert isinstance(frozen, bytes)
    return [[b"SET", key, frozen]]


def string_copy(value: object) -> object:
    return bytearray(value) if type(value) is bytearray else value  # (bytes: immutable)


STRING = ValueType("string", (bytes, bytearray), string_memory, string_encoding,
                   string_freeze, string_records, string_copy)
register_type(STRING)
