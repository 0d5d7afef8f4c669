"""The bounds of Redis's compact encodings, as CONFIG SET changes them.

A small hash or sorted set is a listpack and a set of integers an intset
until a bound is crossed; then it converts for good, and OBJECT ENCODING
says so (hashes.py, sets.py, zsets.py record the conversion).  The bounds
are Redis's directives (core/admin/config.py): ``hash-max-listpack-entries``
and ``-value``, ``set-max-intset-entries``, ``zset-max-listpack-entries``
and ``-value``, with their 6.x ``ziplist`` names as aliases.  A changed
bound applies to the next write, as in Redis; nothing converts back.

``LIMITS`` is one per process (the value classes convert without a node at
hand): the node sets it from its config at start and on CONFIG SET
(``follow``).  Lists have no bound here: Redis 7.0 answers ``quicklist`` for
every list, whatever ``list-max-listpack-size`` says.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from ..admin.config import Config


class EncodingLimits:
    # (defaults: as redis.conf 7.0 ships them; the config sets them at start)
    hash_entries: int
    hash_value: int
    set_intset_entries: int
    zset_entries: int
    zset_value: int

    def __init__(self) -> None:
        self.hash_entries = 128  # hash-max-listpack-entries
        self.hash_value = 64  # hash-max-listpack-value
        self.set_intset_entries = 512  # set-max-intset-entries
        self.zset_entries = 128  # zset-max-listpack-entries
        self.zset_value = 64  # zset-max-listpack-value


LIMITS = EncodingLimits()


def _set(attr: str, value: int) -> None:
    # (explicit: LIMITS may be a compiled class, without setattr by name)
    if attr == "hash_entries":
        LIMITS.hash_entries = value
    elif attr == "hash_value":
        LIMITS.hash_value = value
    elif attr == "set_intset_entries":
        LIMITS.set_intset_entries = value
    elif attr == "zset_entries":
        LIMITS.zset_entries = value
    elif attr == "zset_value":
        LIMITS.zset_value = value


# directive -> the attribute of LIMITS it sets
DIRECTIVES: dict[str, str] = {
    "hash-max-listpack-entries": "hash_entries",
    "hash-max-listpack-value": "hash_value",
    "set-max-intset-entries": "set_intset_entries",
    "zset-max-listpack-entries": "zset_entries",
    "zset-max-listpack-value": "zset_value",
}


def _setter(attr: str) -> Callable[[int], None]:
    return lambda value: _set(attr, value)


def follow(config: Config) -> None:
    """Take the bounds from ``config`` now and on every CONFIG SET."""
    for name, attr in DIRECTIVES.items():
        _set(attr, getattr(config, name.replace("-", "_")))
        config.on_change[name] = _setter(attr)
