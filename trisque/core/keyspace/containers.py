"""What the collection commands (hashes, sets, sorted sets) share: looking a
key up as one type (WRONGTYPE otherwise), the bookkeeping after an
in-place change (memory, WATCH, an emptied collection deleted), the
reply encoders in the client's protocol, and the *SCAN option grammar.

Every collection value keeps ``nbytes`` (its entries' estimated bytes, in
step with every change), so its memory is O(1) to read; a command that
changes a value in place reports the difference with ``changed``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, TypeVar

from ...protocol.errors import NOT_INTEGER, CommandError
from ..jobs.scan import parse_cursor
from .args import int_arg
from .patterns import compile_pattern
from .types import WRONGTYPE

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node
    from .db import Db

OUT_OF_RANGE_POSITIVE = "ERR value is out of range, must be positive"
LONG_MAX = (1 << 63) - 1

T = TypeVar("T")


def lookup_typed(node: Node, client: Client, key: bytes, cls: type[T]) -> T | None:
    """The value at ``key`` if it is a ``cls``; None if there is none."""
    ks = node.keyspace
    value = ks.lookup(ks.dbs[client.db], key)
    if value is None or type(value) is cls:
        return value
    raise CommandError(WRONGTYPE)


def changed(node: Node, db: Db, key: bytes, delta: int, empty: bool) -> None:
    """``key``'s collection changed in place by ``delta`` bytes; an emptied
    one is deleted (empty collections vanish, as in Redis)."""
    ks = node.keyspace
    if delta:
        db.memory += delta
        node.memory_changed(delta)
    if empty:
        ks.delete(db, key)  # (what is left: the key and the empty value)
        return
    if db.watched:
        ks.touched(db, key)


# --------------------------------------------------------------- replies

def bulks(items: Iterable[bytes]) -> bytes:
    return b"".join([b"$%d\r\n%s\r\n" % (len(item), item) for item in items])


def array(items: list[bytes]) -> bytes:
    return b"*%d\r\n%s" % (len(items), bulks(items))


def set_reply(items: list[bytes], proto: int) -> bytes:
    """A RESP3 set (``~``), an array in RESP2."""
    return (b"~%d\r\n" if proto == 3 else b"*%d\r\n") % len(items) + bulks(items)


def map_reply(pairs: list[bytes], proto: int) -> bytes:
    """``pairs`` flat (k1, v1, k2, v2...): a RESP3 map, a flat array in RESP2."""
    n = len(pairs)
    return (b"%%%d\r\n" % (n // 2) if proto == 3 else b"*%d\r\n" % n) + bulks(pairs)


def format_score(score: float) -> bytes:
    """As Redis 7.0's addReplyDouble: ``%.17g``; inf and -inf."""
    return b"%.17g" % score


def double(score: float, proto: int) -> bytes:
    """A score: a RESP3 double, a bulk string in RESP2."""
    text = b"%.17g" % score
    return b",%s\r\n" % text if proto == 3 else b"$%d\r\n%s\r\n" % (len(text), text)


def count_arg(arg: bytes, low: int = -LONG_MAX, message: str | None = None) -> int:
    """getRangeLongFromObjectOrReply(arg, low, LONG_MAX, message): a count;
    ``message`` (if any) answers both a non-number and one out of range."""
    value = int_arg(arg, message or NOT_INTEGER)
    if value < low:
        raise CommandError(message or "ERR value is out of range, value must between "
                           f"{low} and {LONG_MAX}")
    return value


# ------------------------------------------------------------------ SCAN

ScanMatch = Callable[[bytes], bool] | None


def scan_cursor(arg: bytes) -> int:
    """The cursor of HSCAN/SSCAN/ZSCAN (parseScanCursorOrReply)."""
    try:
        if arg[-1:].isspace():
            raise CommandError("")
        return parse_cursor(arg)
    except CommandError:
        raise CommandError("ERR invalid cursor") from None


def scan_options(argv: list[bytes], start: int) -> tuple[int, ScanMatch]:
    """COUNT and MATCH of an HSCAN/SSCAN/ZSCAN from ``argv[start:]``:
    (count, matcher or None)."""
    count, match, _ = scan_arguments(argv, start, with_type=False)
    return count, match


def scan_arguments(argv: list[bytes], start: int,
                   with_type: bool) -> tuple[int, ScanMatch, str | None]:
    """COUNT, MATCH and (SCAN only: ``with_type``) TYPE from
    ``argv[start:]``, in order, as Redis reads them: (count, matcher or
    None, type name or None)."""
    count = 10
    match: ScanMatch = None
    type_name = None
    i, argc = start, len(argv)
    while i < argc:
        opt = argv[i].upper()
        if opt == b"COUNT" and i + 1 < argc:
            count = int_arg(argv[i + 1])
            if count < 1:
                raise CommandError("ERR syntax error")
        elif opt == b"MATCH" and i + 1 < argc:
            match = None if argv[i + 1] == b"*" else compile_pattern(argv[i + 1])
        elif with_type and opt == b"TYPE" and i + 1 < argc:
            type_name = argv[i + 1].decode("latin-1").lower()
        else:
            raise CommandError("ERR syntax error")
        i += 2
    return count, match, type_name


def scan_reply(cursor: int, items: list[bytes]) -> bytes:
    text = b"%d" % cursor
    return b"*2\r\n$%d\r\n%s\r\n%s" % (len(text), text, array(items))


EMPTY_SCAN = b"*2\r\n$1\r\n0\r\n*0\r\n"
