"""Redis-style log lines: ``pid:M 22 Nov 2026 00:46:17.123 * message``."""

import os
import sys
import time
from typing import Any, TextIO

LEVELS = {"debug": 0, "verbose": 1, "notice": 2, "warning": 3}
_MARKS = ".-*#"

_state: dict[str, Any] = {"level": 2, "file": None}


def configure(level: str = "notice", logfile: str = "") -> None:
    _state["level"] = LEVELS[level]
    if _state["file"] not in (None, sys.stdout):
        _state["file"].close()
    _state["file"] = open(logfile, "a", buffering=1) if logfile else sys.stdout


def set_level(level: str) -> None:
    _state["level"] = LEVELS[level]


def _write(level: int, message: str) -> None:
    if level < _state["level"]:
        return
    out: TextIO = _state["file"] or sys.stdout
    now = time.time()
    stamp = time.strftime("%d %b %Y %H:%M:%S", time.localtime(now))
    try:
        out.write(f"{os.getpid()}:M {stamp}.{int(now * 1000) % 1000:03d} "
                  f"{_MARKS[level]} {message}\n")
        out.flush()
    except (OSError, ValueError):
        pass


def debug(message: str) -> None:
    _write(0, message)


def verbose(message: str) -> None:
    _write(1, message)


def notice(message: str) -> None:
    _write(2, message)


def warning(message: str) -> None:
    _write(3, message)


def at_level(level: str, message: str) -> None:
    """Log at a level given by name (a script's redis.log)."""
    _write(LEVELS[level], message)
