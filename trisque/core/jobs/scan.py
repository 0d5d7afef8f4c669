"""Cursor iteration over a dict (jobs, queues) for QSCAN and JSCAN.

The guarantee is Disque's (Redis's SCAN): an element present for the whole
iteration is returned at least once; elements added or removed meanwhile
may or may not be; duplicates are allowed.

A Python dict cannot be resumed at a position cheaply (skipping to the
n-th entry walks n entries, so a whole scan would be quadratic in the
dict's size; bench/README.md, "Scans").  So the first call of a scan
takes a snapshot of the keys (one C-speed copy, 8 bytes per key) and
later calls slice it: O(COUNT) per call.  Keys deleted since are skipped
by looking them up.  At most MAX_SNAPSHOTS scans (and MAX_SNAPSHOT_KEYS
keys) keep a snapshot: the least recently used ones are dropped, and so
is a finished scan's.

A cursor whose snapshot is gone still works: it also carries the position
in the mapping's order and the deletion count when that position was
valid, and resuming there, stepped back by the deletions since, can
return an element twice but never skip one (a new key goes to the end of
a dict, or of its shard in the job registry: it never moves another
forward past the position).

Cursor layout (fits an unsigned 64-bit integer, as Disque's):
  bits 52-63 snapshot id (0: none), bits 32-51 deletions at start (mod
  2^20), bits 0-31 position.
"""

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from itertools import islice
from typing import Any, Literal, Protocol, TypeVar, overload

from ...protocol import errors
from ...protocol.args import to_int
from ...protocol.errors import CommandError

_POSITION_BITS = 32
_POSITION_MASK = (1 << _POSITION_BITS) - 1
_DELETIONS_BITS = 20
_DELETIONS_MASK = (1 << _DELETIONS_BITS) - 1
_SNAP_SHIFT = _POSITION_BITS + _DELETIONS_BITS
_SNAP_IDS = 1 << (64 - _SNAP_SHIFT)  # 4096
MAX_SNAPSHOTS = 64  # scans in progress that keep a snapshot...
MAX_SNAPSHOT_KEYS = 4_000_000  # ...holding at most this many keys in all

_CURSOR_ERROR = "ERR invalid cursor or option name"
_U64 = 1 << 64

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
V_co = TypeVar("V_co", covariant=True)


class Scanned(Protocol[K, V_co]):
    """What a scan walks: a dict, or the job registry (registry.py)."""

    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[K]: ...
    def get(self, key: K, /) -> V_co | None: ...
    def values(self) -> Iterable[V_co]: ...


def parse_cursor(arg: bytes) -> int:
    """An unsigned 64-bit cursor, parsed as C's strtoul: a leading minus
    wraps around (Disque accepts ``-1``), anything else not a number is an
    error (which is also how an unknown option is reported)."""
    if not arg:
        return 0  # strtoul("") is 0
    if arg[:1].isspace():
        raise CommandError(_CURSOR_ERROR)
    try:
        cursor = int(arg)
    except ValueError:
        raise CommandError(_CURSOR_ERROR) from None
    if b"_" in arg or abs(cursor) >= _U64:
        raise CommandError(_CURSOR_ERROR)
    return cursor % _U64


def parse_scan_args(argv: list[bytes],
                    own_option: Callable[[bytes, bytes], bool]) -> tuple[int, int, bool]:
    """(cursor, count, busyloop) from QSCAN's or JSCAN's arguments:
    ``[cursor] [COUNT n] [BUSYLOOP]`` in any order and case, with the
    command's own ``NAME value`` options among them.  ``own_option`` is
    offered each other name (uppercased) that has a value after it, in
    argument order (so the first bad argument is the one reported); it
    returns False for a name it does not know.  Anything not taken is the
    cursor, and a second one is a syntax error."""
    count = 100
    busyloop = False
    cursor: int | None = None
    i, argc = 1, len(argv)
    while i < argc:
        opt = argv[i].upper()
        has_value = i + 1 < argc
        if opt == b"COUNT" and has_value:
            count = to_int(argv[i + 1])
            i += 1
        elif opt == b"BUSYLOOP":
            busyloop = True
        elif has_value and own_option(opt, argv[i + 1]):
            i += 1
        else:
            if cursor is not None:
                raise CommandError(errors.SYNTAX)
            cursor = parse_cursor(argv[i])
        i += 1
    return cursor or 0, count, busyloop


class _Snapshot:
    __slots__ = ("keys", "deletions")

    keys: list[Hashable]
    deletions: int

    def __init__(self, keys: list[Hashable], deletions: int) -> None:
        self.keys = keys
        self.deletions = deletions


_snapshots: "OrderedDict[tuple[int, int], _Snapshot]" = OrderedDict()  # (id(mapping), snapshot id) ->
_next_id = [0]
_total_keys = [0]


def _new_snapshot(mapping: Scanned[Any, object], deletions: int) -> int:
    _next_id[0] = _next_id[0] % (_SNAP_IDS - 1) + 1  # 1 .. 4095
    snap_id = _next_id[0]
    _drop((id(mapping), snap_id))
    snapshot = _Snapshot(list(mapping), deletions & _DELETIONS_MASK)
    _snapshots[(id(mapping), snap_id)] = snapshot
    _total_keys[0] += len(snapshot.keys)
    while len(_snapshots) > 1 and (len(_snapshots) > MAX_SNAPSHOTS
                                   or _total_keys[0] > MAX_SNAPSHOT_KEYS):
        _drop(next(iter(_snapshots)))  # the least recently used
    return snap_id


def _drop(key: tuple[int, int]) -> None:
    snapshot = _snapshots.pop(key, None)
    if snapshot is not None:
        _total_keys[0] -= len(snapshot.keys)


def _cursor(snap_id: int, deletions: int, position: int) -> int:
    return (snap_id << _SNAP_SHIFT) | ((deletions & _DELETIONS_MASK) << _POSITION_BITS) | position


@overload
def scan(mapping: Scanned[K, V], cursor: int, count: int, busyloop: bool,
         wanted: Callable[[V], object], deletions: int,
         keys: Literal[False] = False) -> tuple[int, list[V]]: ...


@overload
def scan(mapping: Scanned[K, V], cursor: int, count: int, busyloop: bool,
         wanted: Callable[[K], object], deletions: int,
         keys: Literal[True]) -> tuple[int, list[K]]: ...


def scan(mapping: Scanned[Any, Any], cursor: int, count: int, busyloop: bool,
         wanted: Callable[[Any], object], deletions: int,
         keys: bool = False) -> tuple[int, list[Any]]:
    """Return (next cursor, matching values); the next cursor is 0 at the end.
    ``deletions`` counts every removal from ``mapping`` so far.  With
    ``keys`` (the keyspace's SCAN), ``wanted`` is asked about keys and the
    matching keys are returned."""
    snap_id = cursor >> _SNAP_SHIFT
    start_deletions = (cursor >> _POSITION_BITS) & _DELETIONS_MASK
    position = cursor & _POSITION_MASK
    if count < 0:
        busyloop = True  # Disque's loop bound never trips for count < 0
    count = max(count, 1)  # COUNT 0 still makes progress
    # bound the work per call, as Disque does (and keep position + budget
    # an index islice takes: COUNT 9223372036854775807 raised, found by
    # tests/server/test_fuzz_live.py)
    budget = min(count * 10, 1 << 48)

    snapshot: _Snapshot | None = None
    if cursor == 0:
        start_deletions = deletions & _DELETIONS_MASK
        if not busyloop and len(mapping) > count:  # may take several calls
            snap_id = _new_snapshot(mapping, deletions)
            snapshot = _snapshots[(id(mapping), snap_id)]
        else:
            snap_id = 0
    elif snap_id:
        snap_key = (id(mapping), snap_id)
        snapshot = _snapshots.get(snap_key)
        if snapshot is not None and snapshot.deletions != start_deletions:
            snapshot = None  # the id was reused by another scan
        if snapshot is not None:
            _snapshots.move_to_end(snap_key)
        else:
            snap_id = 0

    found: list[Any] = []
    if snapshot is not None:
        size = len(snapshot.keys)
        end = size if busyloop else min(size, position + budget)
        get = mapping.get
        examined = 0
        for key in snapshot.keys[position:end]:  # a slice: O(COUNT), islice would walk
            examined += 1
            value = get(key)
            if value is not None and wanted(key if keys else value):
                found.append(key if keys else value)
                if not busyloop and len(found) >= count:
                    break
        position += examined
        if position >= size:
            _drop((id(mapping), snap_id))
            return 0, found
        return _cursor(snap_id, start_deletions, position), found

    # No snapshot: walk the dict from the position, stepped back by the
    # deletions since the cursor was issued (never skips; may repeat).
    if cursor:
        position = max(0, position - ((deletions - start_deletions) & _DELETIONS_MASK))
    walked = mapping if keys else mapping.values()
    if busyloop:
        values = islice(walked, position, None)
    else:
        values = islice(walked, position, position + budget)
    examined = 0
    for value in values:
        examined += 1
        if wanted(value):
            found.append(value)
            if not busyloop and len(found) >= count:
                break
    position += examined
    if position >= len(mapping):
        return 0, found
    return _cursor(0, deletions, position), found  # stepped back from here next time
