"""The keyspace in the append-only file: its records replayed on load, its
keys written by a rewrite.

Keyspace writes are logged by the core (``Keyspace.log``) as the commands
that replay them; here every such record name (``table.KEYSPACE_RECORDS``)
gets a replay handler that runs it through the command's own handler, with
one client per load carrying the SELECTed db, and the rewrite gets the
keyspace's snapshot as a source after the jobs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from ...core.client import Client
from ...core.keyspace.functions import functions
from ...core.table import KEYSPACE_RECORDS

from . import load as aof_load, rewrite as aof_rewrite

if TYPE_CHECKING:
    from ...core.node import Node


def replay_key_record(node: Node, argv: list[bytes], options: aof_load.Options) -> None:
    client = getattr(options, "key_client", None)
    if client is None:
        client = options.key_client = Client(0)  # type: ignore[attr-defined]
    node.keyspace.replay(client, argv)


def key_snapshot(node: Node) -> Iterator[bytes]:
    return node.keyspace.snapshot()


def function_snapshot(node: Node) -> Iterator[bytes]:
    """The FUNCTION libraries, before the keys (as Redis's RDB preamble);
    none on a node that never loaded one (no Lua state made for nothing)."""
    engine = node.scripting
    if engine is None or engine.functions is None:
        return iter(())
    return functions(node).snapshot()


for _name in KEYSPACE_RECORDS:
    aof_load.REPLAY[_name] = replay_key_record
aof_rewrite.SNAPSHOT_SOURCES.append(function_snapshot)
aof_rewrite.SNAPSHOT_SOURCES.append(key_snapshot)
