"""Numbers as Redis reads and writes them in string values and arguments.

``parse_ll`` is Redis's string2ll: a strict decimal 64-bit integer (no
sign but '-', no leading zero, no space).  ``protocol.args.to_int`` is
laxer (it takes "007"), and INCR's replies must match Redis's.

INCRBYFLOAT works in C's ``long double`` (x87 80-bit, a 64-bit
significand), and its result is written with ``%.17Lf`` minus trailing
zeros: doubles would give 10.59999999999999964 where Redis gives 10.6.  So
``LongDouble`` arithmetic here is exact rational arithmetic rounded to that
format after every step (round half to even, as the FPU does), and
``format_long_double`` rounds the exact value to 17 decimals, as glibc's
printf does.  It is slow (tens of microseconds) and only INCRBYFLOAT and
HINCRBYFLOAT need it.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Final

from ...protocol.args import decimal

INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1
INT32_MIN: Final = -(1 << 31)
INT32_MAX: Final = (1 << 31) - 1
LONG_STR_SIZE: Final = 21  # Redis refuses integers this long or longer
MAX_LONG_DOUBLE_CHARS = 5 * 1024


def parse_ll(data: bytes | bytearray) -> int | None:
    """Redis's string2ll, or None where it fails."""
    size = len(data)
    if isinstance(data, bytes):
        # The usual case, 1 to 18 plain digits, read by protocol.args's
        # native loop: int() of bytes is a generic call, several times dearer.
        value = decimal(data)
        if value >= 0 and (data[0] != 48 or size == 1):
            return value
    if 0 < size < 19 and data.isdigit() and (data[0] != 48 or size == 1):
        return int(data)  # (a bytearray)
    if size == 0 or size >= LONG_STR_SIZE:
        return None
    digits = data[1:] if data[0] == 45 else data  # '-'
    if not digits or not digits.isdigit() or digits[0] == 48:  # '0'
        return None  # (a lone "0" took the fast path)
    value = int(data)
    if value < INT64_MIN or value > INT64_MAX:
        return None
    return value


# ------------------------------------------------------------ long double

_MANT_BITS = 64
_MIN_EXP = -16382 - (_MANT_BITS - 1)  # exponent of the smallest subnormal's unit
_MAX = Fraction((1 << _MANT_BITS) - 1) * Fraction(2) ** (16383 - (_MANT_BITS - 1))
_INF = math.inf
_DECIMAL = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
_SPECIAL = re.compile(rb"([+-]?)(inf|infinity|nan)\Z", re.IGNORECASE)
_HEX = re.compile(rb"[+-]?0[xX]")
_EXP_LIMIT = 6000  # beyond 10**±6000 only the overflow or underflow matters



def round_long_double(x: Fraction) -> Fraction | float:
    """``x`` rounded to the nearest long double (+-inf past the largest)."""
    if x == 0:
        return Fraction(0)
    sign = -1 if x < 0 else 1
    mag = abs(x)
    # floor(log2(mag)), then the unit of the last significand bit
    exp = mag.numerator.bit_length() - mag.denominator.bit_length()
    if Fraction(2) ** exp > mag:
        exp -= 1
    unit_exp = max(exp - (_MANT_BITS - 1), _MIN_EXP)
    scaled = mag / Fraction(2) ** unit_exp
    rounded = Fraction(round(scaled)) * Fraction(2) ** unit_exp  # half to even
    if rounded > _MAX:
        return _INF * sign
    return rounded * sign


def parse_long_double(data: bytes | bytearray) -> Fraction | float | None:
    """Redis's string2ld (strtold, refusing spaces, trailing bytes, NaN and
    out-of-range values), or None."""
    if not data or len(data) >= MAX_LONG_DOUBLE_CHARS or data[:1].isspace():
        return None
    data = bytes(data)
    special = _SPECIAL.match(data)
    if special:
        if special.group(2).lower() == b"nan":
            return None
        return -_INF if special.group(1) == b"-" else _INF
    if _HEX.match(data):
        try:
            exact: Fraction = Fraction(float.fromhex(data.decode("ascii")))
        except (ValueError, OverflowError, UnicodeDecodeError):
            return None
    else:
        match = _DECIMAL.match(data)
        if not match:
            return None
        if match.group(2) and abs(int(match.group(2)[1:])) > _EXP_LIMIT:
            mantissa = Fraction(data[:match.start(2)].decode("ascii"))
            if mantissa == 0:
                return Fraction(0)
            return None  # overflow or underflow: ERANGE, refused
        exact = Fraction(data.decode("ascii"))
    value = round_long_double(exact)
    if type(value) is float or (value == 0 and exact != 0):
        return None  # ERANGE (overflow to HUGE_VAL, or underflow to zero)
    return value


def add_long_double(a: Fraction | float, b: Fraction | float) -> Fraction | float:
    """a + b in long double; NaN comes back as float nan."""
    if type(a) is float or type(b) is float:
        # An infinity: finite parts do not matter (and may not fit a float).
        return (a if type(a) is float else 0.0) + (b if type(b) is float else 0.0)
    return round_long_double(Fraction(a) + Fraction(b))


def format_long_double(value: Fraction | float) -> bytes:
    """Redis's ld2string in LD_STR_HUMAN mode: ``%.17Lf`` without trailing
    zeros (nor a trailing point), ``-0`` written ``0``."""
    if type(value) is float:
        return b"inf" if value > 0 else b"-inf"
    scaled = round(Fraction(value) * 10**17)  # half to even, as glibc
    sign = b"-" if scaled < 0 else b""
    whole, frac = divmod(abs(scaled), 10**17)
    text = b"%s%d.%017d" % (sign, whole, frac)
    text = text.rstrip(b"0").rstrip(b".")
    return b"0" if text == b"-0" else text
