"""client-output-buffer-limit: a client's unsent replies are bounded.

Redis's syntax: ``client-output-buffer-limit <class> <hard> <soft> <soft-seconds>``
repeated for any of the classes normal, replica (slave) and pubsub.  A client
whose unsent output reaches the hard limit, or stays at or above the soft
limit for soft-seconds, is disconnected (and logged), never kept in memory.
0 turns a limit off.

Default ``normal 256mb 64mb 60``.  Redis ships ``normal 0 0 0`` (no limit)
because a Redis client reads the replies it asked for; but a client that
pipelines requests and never reads grows its output without bound, and our
default maxmemory is 1gb.  256mb/64mb/60s are Redis's own defaults for
replicas, the one class that is expected to take big bulk data without
keeping up at every moment.  (The shell also stops reading a client holding
1 MB of unsent output, so its input cannot run ahead; a single reply can
still be large, e.g. LRANGE of a long list, and the limit bounds that.)
``normal`` applies to ordinary clients, ``pubsub`` to subscribed ones
(default Redis's ``pubsub 32mb 8mb 60``: a subscriber that does not keep
up with what is published is cut, rather than growing without bound); a
class the words do not name keeps its default.  ``replica`` is accepted
for compatibility with Redis config files (there is no replica client).
"""

from __future__ import annotations

from typing import NamedTuple

from .config_values import ConfigError, parse_memory

CLASSES = ("normal", "replica", "slave", "pubsub")
DEFAULT = ["normal", "256mb", "64mb", "60", "pubsub", "32mb", "8mb", "60"]


class OutputLimit(NamedTuple):
    hard_bytes: int  # 0: none
    soft_bytes: int  # 0: none
    soft_s: int


NONE = OutputLimit(0, 0, 0)
PUBSUB_DEFAULT = OutputLimit(32 * 1024 * 1024, 8 * 1024 * 1024, 60)


def parse(words: list[str]) -> dict[str, OutputLimit]:
    """The limits by class (replica for slave); ConfigError on bad words."""
    if len(words) % 4 != 0:
        raise ConfigError("Wrong number of arguments in buffer limit configuration.")
    limits: dict[str, OutputLimit] = {}
    for i in range(0, len(words), 4):
        name = words[i].lower()
        if name not in CLASSES:
            raise ConfigError("Invalid client class specified in buffer limit configuration.")
        hard, soft = parse_memory(words[i + 1]), parse_memory(words[i + 2])
        try:
            soft_s = int(words[i + 3])
        except ValueError:
            soft_s = -1
        if hard < 0 or soft < 0 or soft_s < 0:
            raise ConfigError("Error in hard, soft or soft_seconds setting in buffer "
                              "limit configuration.")
        limits["replica" if name == "slave" else name] = OutputLimit(hard, soft, soft_s)
    return limits


def normal(words: list[str]) -> OutputLimit:
    """The limit for ordinary clients; none if the words name none."""
    return parse(words).get("normal", NONE)


def pubsub(words: list[str]) -> OutputLimit:
    """The limit for subscribed clients; Redis's default if the words name none."""
    return parse(words).get("pubsub", PUBSUB_DEFAULT)


def verdict(limit: OutputLimit, unsent: int, soft_since_ms: int | None,
            now_ms: int) -> str | None:
    """Why a client with ``unsent`` bytes must go ('hard' or 'soft'), or
    None.  ``soft_since_ms``: when it last rose to the soft limit."""
    if limit.hard_bytes and unsent >= limit.hard_bytes:
        return "hard"
    if (limit.soft_bytes and unsent >= limit.soft_bytes and soft_since_ms is not None
            and now_ms - soft_since_ms >= limit.soft_s * 1000):
        return "soft"
    return None
