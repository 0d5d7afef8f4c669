"""SORT and SORT_RO, as Redis 7.0's sort.c.

SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
[ALPHA] [STORE destination] sorts the elements of a list, set or sorted
set:

- by their value as a number (C's strtod: leading spaces, hex, inf;
  trailing bytes, NaN or out of range make the whole command answer
  ``One or more scores can't be converted into double``), equal numbers
  by the elements' bytes; with ALPHA by the bytes themselves (strcoll in
  the C locale);
- ``BY pattern``: by the string at the key the pattern names, its first
  ``*`` replaced by the element (``weight_*``), or by a hash field
  (``weight_*->field``); a missing key sorts as 0 (with ALPHA: first).  A
  pattern without ``*`` (``BY nosort``) does not sort: a list or sorted
  set keeps its order (DESC reverses it), a set its own, except that SORT
  ... STORE and SORT from a script sort a set by ALPHA, so the result is
  the same on every replay; a sorted set sorted, even by SORT_RO, is a
  skiplist from then on, as in Redis;
- ``GET pattern``: what each element is replaced with, in order (``#``:
  the element itself); a missing key or field answers nil (STORE: "");
- ``LIMIT offset count``: the range of the sorted elements, clamped as
  Redis clamps it (a negative count: to the end);
- ``STORE``: the result replaces the destination as a list (none: the
  destination is deleted); the reply is its length.  It is logged as the
  command itself, which sorts the same again on replay (ties keep the
  elements' order, as glibc's merge sort keeps them).

Sorting by equal ALPHA weights keeps the elements' order; Redis's partial
sort of a BY ... LIMIT may order such ties otherwise.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import SYNTAX, CommandError
from ..command import Commands
from .args import int_arg
from .hashes import Hash
from .lists import List
from .scores import _SPACES, _strtod
from .sets import Set
from .types import WRONGTYPE
from .zsets import ZSet

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node
    from .db import Db
    from .keyspace import Keyspace

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: the key at argv[1]
key_command = COMMANDS.command

NOT_INTEGER = "ERR value is not an integer or out of range"
NOT_DOUBLE = "ERR One or more scores can't be converted into double"
SYNTAX_LINE = ("key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]")


class SortRequest:
    """SORT's options, as parsed."""

    __slots__ = ("by", "dontsort", "gets", "desc", "alpha", "limit_start", "limit_count",
                 "store")

    def __init__(self) -> None:
        self.by: bytes | None = None
        self.dontsort = False
        self.gets: list[bytes] = []
        self.desc = False
        self.alpha = False
        self.limit_start = 0
        self.limit_count = -1
        self.store: bytes | None = None


def parse(argv: list[bytes], readonly: bool) -> SortRequest:
    request = SortRequest()
    j = 2
    while j < len(argv):
        option = argv[j].upper()
        left = len(argv) - j - 1
        if option == b"ASC":
            request.desc = False
        elif option == b"DESC":
            request.desc = True
        elif option == b"ALPHA":
            request.alpha = True
        elif option == b"LIMIT" and left >= 2:
            request.limit_start = int_arg(argv[j + 1], NOT_INTEGER)
            request.limit_count = int_arg(argv[j + 2], NOT_INTEGER)
            j += 2
        elif option == b"STORE" and left >= 1 and not readonly:
            request.store = argv[j + 1]
            j += 1
        elif option == b"BY" and left >= 1:
            request.by = argv[j + 1]
            request.dontsort = b"*" not in request.by
            j += 1
        elif option == b"GET" and left >= 1:
            request.gets.append(argv[j + 1])
            j += 1
        else:
            raise CommandError(SYNTAX)
        j += 1
    return request


def pattern_value(ks: Keyspace, db: Db, pattern: bytes, element: bytes) -> bytes | None:
    """lookupKeyByPattern: the string (or hash field) ``pattern`` names
    for ``element``, or None."""
    if pattern == b"#":
        return element
    star = pattern.find(b"*")
    if star < 0:
        return None  # (a constant key: nothing to look up, as Redis)
    arrow = pattern.find(b"->", star + 1)
    field: bytes | None = None
    end = len(pattern)
    if arrow >= 0 and arrow + 2 < len(pattern):
        field = pattern[arrow + 2:]
        end = arrow
    value = ks.lookup(db, pattern[:star] + element + pattern[star + 1:end])
    if value is None:
        return None
    if field is not None:
        return value.get(field) if type(value) is Hash else None
    if type(value) is bytes:
        return value
    if type(value) is bytearray:
        return bytes(value)
    return None


def weight(data: bytes) -> float | None:
    """A numeric sort weight as strtod reads it (up to a NUL, leading
    spaces allowed, "" is 0, spaces alone are not), or None if it cannot
    be converted."""
    text = data.split(b"\0", 1)[0]
    if not text:
        return 0.0  # (Redis: 0, or refused if an earlier call left errno at ERANGE)
    parsed = _strtod(text.lstrip(_SPACES))
    if parsed is None or parsed[1] or math.isnan(parsed[0]):
        return None
    return parsed[0]


def _elements(value: object, request: SortRequest, from_script: bool) -> list[bytes]:
    """The elements to sort, in the order Redis loads them: a list's, a
    set's (an intset ascending), a sorted set's by score when it is not
    sorted (DESC reversing a list or sorted set that is not sorted)."""
    if value is None:
        return []
    if type(value) is List:
        items = list(value)
    elif type(value) is Set:
        if request.dontsort and (request.store is not None or from_script):
            request.dontsort = False  # sorted by ALPHA, the same on every replay
            request.alpha = True
            request.by = None
        return value.members()
    elif type(value) is ZSet:
        value.listpack = False  # (Redis converts a sorted set it sorts, for good)
        items = [member for _, member in value.order]
    else:
        raise CommandError(WRONGTYPE)
    if request.dontsort and request.desc:
        items.reverse()
    return items


def _sort(ks: Keyspace, db: Db, items: list[bytes], request: SortRequest) -> list[bytes]:
    by = request.by
    if request.alpha:
        if by is None:
            items.sort(reverse=request.desc)
            return items
        keyed = [(pattern_value(ks, db, by, item), i) for i, item in enumerate(items)]
        # a missing weight first (ascending); equal weights keep the order
        keyed.sort(key=lambda pair: (pair[0] is not None, pair[0] or b""),
                   reverse=request.desc)
        return [items[i] for _, i in keyed]
    weights: list[tuple[float, bytes]] = []
    for item in items:
        data = pattern_value(ks, db, by, item) if by is not None else item
        if data is None:
            weights.append((0.0, item))  # a missing weight counts as 0
            continue
        number = weight(data)
        if number is None:
            raise CommandError(NOT_DOUBLE)
        weights.append((number, item))
    weights.sort(reverse=request.desc)
    return [item for _, item in weights]


def _window(length: int, request: SortRequest) -> tuple[int, int]:
    """LIMIT's start and end (inclusive), clamped as sortCommandGeneric."""
    start = min(max(request.limit_start, 0), length)
    count = min(max(request.limit_count, -1), length)
    end = length - 1 if count < 0 else start + count - 1
    if start >= length:
        start, end = length - 1, length - 2
    if end >= length:
        end = length - 1
    return start, end


def _from_script(node: Node, client: Client) -> bool:
    engine = node.scripting
    return engine is not None and engine.running is not None and engine.running.client is client


def sort_generic(node: Node, client: Client, argv: list[bytes], readonly: bool) -> bytes:
    request = parse(argv, readonly)
    ks = node.keyspace
    db = ks.dbs[client.db]
    items = _elements(ks.lookup(db, argv[1]), request, _from_script(node, client))
    if not request.dontsort:
        items = _sort(ks, db, items, request)
    start, end = _window(len(items), request)
    chosen = items[start:end + 1] if end >= start else []
    gets = request.gets
    if request.store is None:
        if not gets:
            return resp.encode(chosen, client.proto)
        out: list[bytes | None] = [pattern_value(ks, db, pattern, item)
                                   for item in chosen for pattern in gets]
        return resp.encode(out, client.proto)
    stored = chosen if not gets else [pattern_value(ks, db, pattern, item) or b""
                                      for item in chosen for pattern in gets]
    if stored:
        ks.store(db, request.store, List(stored))
        ks.log(db, *argv)
    elif ks.lookup(db, request.store) is not None:
        ks.delete(db, request.store)
        ks.log(db, b"DEL", request.store)
    return resp.integer(len(stored))


@key_command("SORT", -2, "write denyoom", syntax=SYNTAX_LINE + " [STORE destination]")
def sort(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return sort_generic(node, client, argv, readonly=False)


@key_command("SORT_RO", -2, "readonly", syntax=SYNTAX_LINE)
def sort_ro(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return sort_generic(node, client, argv, readonly=True)
