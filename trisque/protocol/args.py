"""Argument grammar helpers shared by command handlers."""

from mypy_extensions import i64

from .errors import CommandError, NOT_INTEGER

INT64_MAX = 2**63 - 1
INT64_MIN = -2**63


def decimal(arg: bytes) -> int:
    """The value of 1 to 18 decimal digits (never out of range), else -1:
    to_int's usual case, and ADDJOB's numbers.  A loop the compiler makes
    native, where int(arg) is a generic call."""
    size = len(arg)
    if size == 1:  # (one digit, the usual timeout, count or level: no loop)
        digit = arg[0]
        return digit - 48 if 48 <= digit <= 57 else -1
    if not 0 < size < 19:
        return -1
    # (indexed in i64: compiled, ``for digit in arg`` boxed each byte)
    value: i64 = 0
    for i in range(size):
        c: i64 = arg[i]
        if not 48 <= c <= 57:
            return -1
        value = value * 10 + c - 48
    return value


def to_int(arg: bytes, message: str = NOT_INTEGER) -> int:
    """Parse a strict decimal 64-bit integer, as Redis's string2ll."""
    value = decimal(arg)
    if value >= 0:
        return value
    try:
        value = int(arg)
    except ValueError:
        raise CommandError(message) from None
    # int() accepts " 1", "1_0" and "+1"; Redis does not.
    if not arg or arg[0] in b" +_\t" or arg[-1] in b" \t\r\n" or b"_" in arg:
        raise CommandError(message)
    if value < INT64_MIN or value > INT64_MAX:
        raise CommandError(message)
    return value


def to_float(arg: bytes, message: str = "ERR value is not a valid float") -> float:
    try:
        return float(arg)
    except ValueError:
        raise CommandError(message) from None


def text(arg: bytes) -> str:
    """Arguments as str for names and options (undecodable bytes kept)."""
    return arg.decode("utf-8", "backslashreplace")


def upper(arg: bytes) -> str:
    return arg.upper().decode("latin-1")
