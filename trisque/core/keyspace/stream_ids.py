"""Stream IDs as Redis 7.0 reads and writes them (t_stream.c).

An ID ``<ms>-<seq>`` (two unsigned 64-bit numbers) is kept as one Python
int, ``ms << 64 | seq``: IDs then compare, sort and bisect as ints, and a
PEL or a node index is a plain list of ints.
"""

from __future__ import annotations

from typing import Final

from ...protocol.errors import CommandError
from .numbers import parse_ll

MASK64: Final = (1 << 64) - 1
MAX_ID: Final = (1 << 128) - 1
INVALID_ID: Final = "ERR Invalid stream ID specified as stream command argument"


def make_id(ms: int, seq: int) -> int:
    return ms << 64 | seq


def format_id(stream_id: int) -> bytes:
    return b"%d-%d" % (stream_id >> 64, stream_id & MASK64)


def bulk_id(stream_id: int) -> bytes:
    text = b"%d-%d" % (stream_id >> 64, stream_id & MASK64)
    return b"$%d\r\n%s\r\n" % (len(text), text)


def _ull(text: bytes) -> int | None:
    """string2ull: string2ll's strict form (a negative one refused), else
    C's strtoull (leading blanks, a sign, leading zeros; '-' wraps)."""
    canonical = parse_ll(text)
    if canonical is not None:
        return canonical if canonical >= 0 else None
    digits = text.lstrip(b" \t\n\v\f\r")
    negative = digits[:1] == b"-"
    if digits[:1] in (b"+", b"-"):
        digits = digits[1:]
    if not digits or not digits.isdigit():
        return None
    value = int(digits)
    if value > MASK64:
        return None
    return (-value) & MASK64 if negative else value


def _plain_id(arg: bytes) -> int:
    """``<ms>-<seq>`` in plain digits (no sign, blank or leading zero,
    under 19 digits each: what replies and clients send): the ID; -1 for
    anything else, which parse_id's general path reads."""
    ms = 0
    value = 0
    digits = 0
    dash = False
    for c in arg:
        if 48 <= c <= 57:
            if digits == 18 or (digits and not value):  # (too long; "0" then a digit)
                return -1
            value = value * 10 + c - 48
            digits += 1
        elif c == 45 and digits and not dash:  # "-"
            ms = value
            value = 0
            digits = 0
            dash = True
        else:
            return -1
    if not dash or not digits:
        return -1
    return ms << 64 | value


def parse_id(arg: bytes, missing_seq: int = 0, strict: bool = False,
             seq_star: bool = False) -> tuple[int, bool]:
    """streamGenericParseIDOrReply: (id, seq_given).  ``strict`` refuses
    ``-`` and ``+``; ``seq_star`` accepts ``<ms>-*`` (XADD: seq_given
    False).  ``missing_seq`` is the sequence of a bare ``<ms>``."""
    if len(arg) < 40:
        plain = _plain_id(arg)
        if plain >= 0:
            return plain, True
    if len(arg) > 127:
        raise CommandError(INVALID_ID)
    if arg == b"-" or arg == b"+":
        if strict:
            raise CommandError(INVALID_ID)
        return (0 if arg == b"-" else MAX_ID), True
    dash = arg.find(b"-")
    if dash < 0:
        ms = _ull(arg)
        if ms is None:
            raise CommandError(INVALID_ID)
        return ms << 64 | missing_seq, True
    ms = _ull(arg[:dash])
    if ms is None:
        raise CommandError(INVALID_ID)
    rest = arg[dash + 1:]
    if seq_star and rest == b"*":
        return ms << 64, False
    seq = _ull(rest)
    if seq is None:
        raise CommandError(INVALID_ID)
    return ms << 64 | seq, True


def parse_strict(arg: bytes) -> int:
    return parse_id(arg, 0, True)[0]


def parse_interval(arg: bytes, missing_seq: int) -> tuple[int, bool]:
    """streamParseIntervalIDOrReply: (id, exclusive) for a range bound;
    ``(`` makes it exclusive and forbids ``-``/``+``."""
    if len(arg) > 1 and arg[0] == 40:  # "("
        return parse_id(arg[1:], missing_seq, True)[0], True
    return parse_id(arg, missing_seq)[0], False
