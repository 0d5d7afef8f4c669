"""Argument grammar shared by the keyspace's commands, with Redis's texts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol.errors import NOT_INTEGER, CommandError
from .numbers import INT64_MAX, parse_ll

if TYPE_CHECKING:
    from ..node import Node

# SET/GETEX options (Redis's OBJ_* flags)
NX, XX, GET, KEEPTTL, PERSIST, EX, PX, EXAT, PXAT = (1 << i for i in range(9))
EXPIRE_OPTIONS = EX | PX | EXAT | PXAT
_OPTION_BITS = {b"NX": NX, b"XX": XX, b"GET": GET, b"KEEPTTL": KEEPTTL,
                b"PERSIST": PERSIST, b"EX": EX, b"PX": PX, b"EXAT": EXAT, b"PXAT": PXAT}
# What each option may not be combined with (Redis's
# parseExtendedStringArgumentsOrReply); GET, NX, XX and KEEPTTL belong to
# SET only, PERSIST to GETEX only.
_CONFLICTS = {NX: XX, XX: NX, GET: 0, KEEPTTL: PERSIST | EXPIRE_OPTIONS,
              PERSIST: KEEPTTL | EXPIRE_OPTIONS,
              EX: KEEPTTL | PERSIST | EXAT | PX | PXAT,
              PX: KEEPTTL | PERSIST | EX | EXAT | PXAT,
              EXAT: KEEPTTL | PERSIST | EX | PX | PXAT,
              PXAT: KEEPTTL | PERSIST | EX | EXAT | PX}
_SET_ONLY = NX | XX | GET | KEEPTTL


def int_arg(arg: bytes, message: str = NOT_INTEGER) -> int:
    """A strict 64-bit integer argument (getLongLongFromObjectOrReply)."""
    value = parse_ll(arg)
    if value is None:
        raise CommandError(message)
    return value


def string_options(argv: list[bytes], start: int, for_set: bool) -> tuple[int, bytes | None]:
    """SET's (``for_set``) or GETEX's options from ``argv[start:]``:
    (flags, the expire argument or None)."""
    flags = 0
    expire = None
    i, argc = start, len(argv)
    while i < argc:
        bit = _OPTION_BITS.get(argv[i].upper(), 0)
        if (not bit or flags & _CONFLICTS[bit] or (bit & _SET_ONLY) != 0 and not for_set
                or bit == PERSIST and for_set):
            raise CommandError("ERR syntax error")
        if bit & EXPIRE_OPTIONS:
            if i + 1 >= argc:
                raise CommandError("ERR syntax error")
            i += 1
            expire = argv[i]
        flags |= bit
        i += 1
    return flags, expire


def expire_at_ms(node: Node, arg: bytes, flags: int, name: str) -> int:
    """The absolute expiry time (unix ms) of SET/GETEX's EX|PX|EXAT|PXAT
    argument (getExpireMillisecondsOrReply)."""
    value = int_arg(arg)
    seconds = flags & (EX | EXAT)
    if value <= 0 or (seconds and value > INT64_MAX // 1000):
        raise CommandError(f"ERR invalid expire time in '{name}' command")
    if seconds:
        value *= 1000
    if flags & (EX | PX):
        value += node.now_ms()
        if value > INT64_MAX:  # (C's addition would wrap negative)
            raise CommandError(f"ERR invalid expire time in '{name}' command")
    return value
