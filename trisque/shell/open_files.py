"""The descriptor limit a node needs: one per client, plus its own.

As Redis does at start, the node raises its soft RLIMIT_NOFILE to
``maxclients`` + RESERVED_FDS.  When the hard limit is lower, it takes what
the hard limit allows and lowers ``maxclients`` to fit, with a warning
saying so: a client past the limit then gets ``-ERR max number of clients
reached`` rather than an accept() failing with EMFILE (which would also
starve the bus and the AOF of descriptors).  ``CONFIG SET maxclients``
raises the limit again when it can, and is refused when it cannot (with
Redis's text).
"""

from __future__ import annotations

import resource
from typing import Any

from ..core.admin.config import ConfigError
from . import log

# Listeners, the log, the AOF and its rewrite, nodes.conf, the bus's links
# to peers (two each) and the HTTP port's 64 connections.
RESERVED_FDS = 128


def _raise_soft_limit(wanted: int) -> int:
    """Raise the soft limit toward ``wanted``; the soft limit it ends at."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return wanted
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        return soft
    return target


def fit_maxclients(config: Any) -> None:
    """At start: make room for ``config.maxclients``, or lower it to fit."""
    wanted = config.maxclients + RESERVED_FDS
    got = _raise_soft_limit(wanted)
    if got >= wanted:
        return
    fitted = max(1, got - RESERVED_FDS)
    log.warning(f"You requested maxclients of {config.maxclients} requiring at least "
                f"{wanted} max file descriptors, but the limit is {got} "
                f"(ulimit -n, LimitNOFILE). maxclients has been reduced to {fitted} "
                f"to compensate for the low ulimit.")
    config.maxclients = fitted


def on_maxclients_set(value: int) -> None:
    """CONFIG SET maxclients: raise the limit for it, or refuse."""
    wanted = value + RESERVED_FDS
    got = _raise_soft_limit(wanted)
    if got < wanted:
        raise ConfigError(f"The operating system is not able to handle the specified "
                          f"number of clients, try with {max(1, got - RESERVED_FDS)}")
