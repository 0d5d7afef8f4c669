"""Which arguments of a request are keys (COMMAND GETKEYS), as Redis 7.0's
key specs say.

Most commands name their keys by position (a command's first key, last
key and step in the table: ``DEL k1 k2``: 1, -1, 1).  The others find
them by reading the request: a count of keys first (``EVAL script
numkeys key...``, ``ZUNIONSTORE dst numkeys key...``), keys after a
keyword (``XREAD ... STREAMS k1 k2 id1 id2``), or SORT's key with the
last ``STORE`` destination.  ``FINDERS`` holds those, by command name.
"""

from __future__ import annotations

from typing import Callable

from .command import Command

Finder = Callable[[list[bytes]], list[int]]


def _numkeys_at(index: int, before: tuple[int, ...] = ()) -> Finder:
    """Keys counted by argv[index], following it (and keys at ``before``)."""
    def find(argv: list[bytes]) -> list[int]:
        try:
            count = int(argv[index])
        except (IndexError, ValueError):
            return []
        if count < 0 or index + count >= len(argv):
            return []
        return [*before, *range(index + 1, index + 1 + count)]
    return find


def _sort(argv: list[bytes]) -> list[int]:
    """sortGetKeys: the key, and the last STORE's destination (BY, GET and
    LIMIT's arguments skipped, so a key named STORE is not mistaken)."""
    keys = [1]
    store = -1
    skip = {b"LIMIT": 2, b"GET": 1, b"BY": 1}
    i = 2
    while i < len(argv):
        word = argv[i].upper()
        if word in skip:
            i += skip[word]
        elif word == b"STORE" and i + 1 < len(argv):
            store = i + 1
            i += 1
        i += 1
    if store > 0:
        keys.append(store)
    return keys


def _streams(argv: list[bytes]) -> list[int]:
    """XREAD/XREADGROUP: the first half of what follows STREAMS."""
    for i in range(1, len(argv)):
        if argv[i].upper() == b"STREAMS":
            rest = len(argv) - i - 1
            if rest % 2:
                return []
            return list(range(i + 1, i + 1 + rest // 2))
    return []


FINDERS: dict[str, Finder] = {
    "SORT": _sort, "SORT_RO": _sort,
    "EVAL": _numkeys_at(2), "EVALSHA": _numkeys_at(2), "EVAL_RO": _numkeys_at(2),
    "EVALSHA_RO": _numkeys_at(2), "FCALL": _numkeys_at(2), "FCALL_RO": _numkeys_at(2),
    "ZUNION": _numkeys_at(1), "ZINTER": _numkeys_at(1), "ZDIFF": _numkeys_at(1),
    "ZINTERCARD": _numkeys_at(1), "SINTERCARD": _numkeys_at(1), "LMPOP": _numkeys_at(1),
    "ZMPOP": _numkeys_at(1), "BLMPOP": _numkeys_at(2), "BZMPOP": _numkeys_at(2),
    "ZUNIONSTORE": _numkeys_at(2, (1,)), "ZINTERSTORE": _numkeys_at(2, (1,)),
    "ZDIFFSTORE": _numkeys_at(2, (1,)),
    "XREAD": _streams, "XREADGROUP": _streams,
}


# Commands that may name no key at all (EVAL script 0): an empty answer,
# not an error
NO_MANDATORY_KEYS = frozenset(("EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"))


def key_positions(command: Command, argv: list[bytes]) -> list[int] | None:
    """The indexes of ``argv``'s keys; None if the command takes none."""
    finder = FINDERS.get(command.name)
    if finder is not None:
        return finder(argv)
    first, last, step = command.first_key, command.last_key, command.key_step
    if first <= 0:
        return None
    if last < 0:
        last += len(argv)
    return list(range(first, min(last, len(argv) - 1) + 1, max(step, 1)))
