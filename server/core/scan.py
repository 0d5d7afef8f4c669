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


def parse_cursor(arg):
    try:
        cursor = to_int(arg)
    except CommandError:
        raise CommandError("ERR invalid cursor") from None
    if cursor < 0:
        raise CommandError("ERR invalid cursor")
    return cursor


def scan(mapping, cursor, count, busyloop, wanted, deletions):
    """Return (next cursor, matching values); the next cursor is 0 at the end."""
    position = cursor & ((1 << _POSITION_BITS) - 1)
    if cursor:
        then = cursor >> _POSITION_BITS
        position = max(0, position - ((deletions - then) & _DELETIONS_MASK))
    values = list(mapping.values())[position:] if busyloop else None
    if values is None:
        budget = max(1, count) * 10  # bound the work, as Disque does
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
