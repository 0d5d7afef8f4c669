"""Sorted-set scores and ranges as Redis 7.0 reads and writes them.

- ``parse_score``: string2d (ZADD, ZINCRBY): strtod, refusing an empty
  or space-led string, trailing bytes, NaN, and a result out of range
  (overflow to inf, underflow to 0); "inf"/"-inf" and hex are accepted.
- ``parse_score_bound``: zslParseRange's min/max (ZRANGEBYSCORE, ZCOUNT,
  ZREMRANGEBYSCORE): "(" makes it exclusive, then plain strtod: leading
  spaces, "" (0), overflow (inf) and underflow (0) all accepted; NaN and
  trailing bytes refused.
- ``parse_lex_bound``: zslParseLexRangeItem: "-", "+", "[x", "(x".
- ``listpack_score``: d2string, how a small zset stores a score (ZSCAN
  of a listpack zset answers with it); replies use ``%.17g``
  (containers.format_score).
"""

from __future__ import annotations

import math
import re

from ...protocol.errors import CommandError

_DECIMAL = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
_INFINITY = re.compile(rb"([+-]?)(inf|infinity)\Z", re.IGNORECASE)
_HEX = re.compile(rb"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?\d+)?\Z")
_NONZERO = re.compile(rb"[1-9]")
_SPACES = b" \t\n\v\f\r"
_LL_HALF = float((1 << 63) // 2)  # double2ll's bound: LLONG_MAX/2
NOT_FLOAT = "ERR value is not a valid float"
BAD_RANGE = "ERR min or max is not a float"
BAD_LEX = "ERR min or max not valid string range item"
LEX_MIN, LEX_MAX = -1, 1  # "-" and "+"


def _strtod(text: bytes) -> tuple[float, bool] | None:
    """strtod over the whole of ``text``: (value, out of range), or None."""
    if _DECIMAL.match(text):
        value = float(text)
        mantissa = text.split(b"e")[0].split(b"E")[0]
        return value, math.isinf(value) or (value == 0 and bool(_NONZERO.search(mantissa)))
    special = _INFINITY.match(text)
    if special:
        return (-math.inf if special.group(1) == b"-" else math.inf), False
    hexa = _HEX.match(text)
    if hexa:
        try:
            value = float.fromhex(text.decode("ascii"))
        except OverflowError:
            return (-math.inf if text[:1] == b"-" else math.inf), True
        return value, value == 0 and bool(re.search(rb"[1-9a-fA-F]", hexa.group(1)))
    return None


def parse_score(data: bytes) -> float:
    """A ZADD/ZINCRBY score (string2d), or -ERR value is not a valid float."""
    parsed = _strtod(data) if data and data[0] not in _SPACES else None
    if parsed is None or parsed[1]:
        raise CommandError(NOT_FLOAT)
    return parsed[0]


def parse_score_bound(data: bytes) -> tuple[float, bool]:
    """A min/max of a score range: (value, exclusive)."""
    exclusive = data[:1] == b"("
    text = data[1:] if exclusive else data
    text = text.split(b"\0", 1)[0]  # strtod stops at the C string's end
    if not text:
        return 0.0, exclusive  # no conversion, and nothing left over: 0
    stripped = text.lstrip(_SPACES)
    parsed = _strtod(stripped) if stripped else None
    if parsed is None:
        raise CommandError(BAD_RANGE)
    return parsed[0], exclusive


def parse_lex_bound(data: bytes) -> tuple[int, bytes, bool]:
    """A min/max of a lex range: (LEX_MIN/LEX_MAX or 0, value, exclusive)."""
    first = data[:1]
    if first == b"+" and len(data) == 1:
        return LEX_MAX, b"", True
    if first == b"-" and len(data) == 1:
        return LEX_MIN, b"", True
    if first == b"(":
        return 0, data[1:], True
    if first == b"[":
        return 0, data[1:], False
    raise CommandError(BAD_LEX)


def listpack_score(score: float) -> bytes:
    """Redis's d2string: integers (up to LLONG_MAX/2) as integers."""
    if score == 0:
        return b"-0" if math.copysign(1.0, score) < 0 else b"0"
    if not math.isinf(score) and -_LL_HALF <= score <= _LL_HALF and score == int(score):
        return b"%d" % int(score)
    return b"%.17g" % score
