"""Cursor iteration over a dict for QSCAN and JSCAN.

The cursor is a position in the dict's (insertion) order plus the count of
deletions seen when it was issued.  Deleting an element before the
position shifts the rest left; on resume we step back by the number of
deletions since, so an element can be returned twice but never skipped,
which is the guarantee Disque's SCAN-family commands give.
"""

from ...protocol.args import to_int
from ...protocol.errors import CommandError

_POSITION_BITS = 40
_DELETIONS_MASK = (1 << 23) - 1


_CURSOR_ERROR = "ERR invalid cursor or option name"
_U64 = 1 << 64


def parse_cursor(arg):
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


def scan(mapping, cursor, count, busyloop, wanted, deletions):
    """Return (next cursor, matching values); the next cursor is 0 at the end."""
    position = cursor & ((1 << _POSITION_BITS) - 1)
    if cursor:
        then = cursor >> _POSITION_BITS
        position = max(0, position - ((deletions - then) & _DELETIONS_MASK))
    if count < 0:
        busyloop = True  # Disque's loop bound never trips for count < 0
    count = max(count, 1)  # COUNT 0 still makes progress
    values = list(mapping.values())[position:] if busyloop else None
    if values is None:
        budget = count * 10  # bound the work, as Disque does
        from itertools import islice
        values = list(islice(mapping.values(), position, position + budget))
    found = []
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
    return ((deletions & _DELETIONS_MASK) << _POSITION_BITS) | position, found
