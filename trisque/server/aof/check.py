"""``trisque-server --check-aof [--fix] FILE``: redis-check-aof for our AOF.

The file is loaded exactly as the server would load it (the same loader,
into a scratch node that serves nobody), with truncation refused, so every
problem the server would meet is found: a torn last record, bytes that are
no record, a record no writer of ours produces.  Without ``--fix`` the
verdict is printed (exit 0 when the file is good, 1 otherwise).  With
``--fix`` a bad file is cut back to its last good record (the start of a
MULTI block that has a bad record, so a block goes whole), as
``redis-check-aof --fix`` does; the bytes cut are kept beside it in
``FILE.cut-at-<offset>``, so nothing is lost that a human may want back.
"""

from __future__ import annotations

import os
import sys
import time

from ...core.admin.config import Config
from ...core.node import Node
from ...core.table import COMMANDS
from . import keys as aof_keys  # noqa: F401 (registers the keyspace's records)
from . import load as aof_load

USAGE = "Usage: trisque-server --check-aof [--fix] <file.aof>\n"


def check(path: str) -> aof_load.LoadError | None:
    """None if the whole file loads, else the error (with its offset)."""
    node = Node(Config(), "0" * 40, time.time, table=COMMANDS)
    loader = aof_load.load(node, path, False, False)
    try:
        while True:
            next(loader)
    except StopIteration:
        return None
    except aof_load.LoadError as exc:
        return exc


def fix(path: str, offset: int) -> str:
    """Keep the first ``offset`` bytes; the rest goes to a side file."""
    cut = f"{path}.cut-at-{offset}"
    with open(path, "rb") as src, open(cut, "wb") as dst:
        src.seek(offset)
        while chunk := src.read(1 << 20):
            dst.write(chunk)
        dst.flush()
        os.fsync(dst.fileno())
    os.truncate(path, offset)
    return cut


def main(args: list[str]) -> int:
    do_fix = "--fix" in args
    files = [a for a in args if a != "--fix"]
    if len(files) != 1 or files[0].startswith("--"):
        sys.stderr.write(USAGE)
        return 2
    path = files[0]
    if not os.path.isfile(path):
        print(f"Cannot open file: {path}", file=sys.stderr)
        return 1
    error = check(path)
    size = os.path.getsize(path)
    if error is None:
        print(f"AOF analyzed: size={size}, ok_up_to={size}, diff=0")
        print("AOF is valid")
        return 0
    print(error)
    if error.offset is None:
        return 1
    print(f"AOF analyzed: size={size}, ok_up_to={error.offset}, "
          f"diff={size - error.offset}")
    if not do_fix:
        print("AOF is not valid. Use the --fix option to try fixing it.")
        return 1
    cut = fix(path, error.offset)
    again = check(path)
    if again is not None:
        print(f"Still not valid after the cut: {again}")
        return 1
    print(f"Successfully truncated AOF to {error.offset} bytes "
          f"({size - error.offset} bytes kept in {cut})")
    return 0
