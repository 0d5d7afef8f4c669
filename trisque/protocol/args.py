"""Argument grammar helpers shared by command handlers."""

from .errors import CommandError, NOT_INTEGER

INT64_MAX = 2**63 - 1
INT64_MIN = -2**63


def to_int(arg: bytes, message: str = NOT_INTEGER) -> int:
    """Parse a strict decimal 64-bit integer, as Redis's string2ll."""
    if arg.__class__ is bytes and arg.isdigit() and len(arg) < 19:  # usual case
        return int(arg)
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
