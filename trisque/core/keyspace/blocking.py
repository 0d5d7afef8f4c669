"""Clients blocked on keys (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, and
any later blocking command on a key), as Redis's blocked.c.

The machinery is GETJOB's (node.py): ``client.blocked`` holds a
``KeyWaiter``, ``node.block`` arms its timeout, ``node.unblock`` calls its
``cancel`` and ``node.blocked_timeout`` its ``timeout``, ``node.reply``
sends a late reply.  What is added here is the key side:

- ``waiting[db][key]``: the clients blocked on that key, oldest first (a
  dict used as an ordered set: O(1) removal when one leaves).
- A write that creates a key somebody waits on (a push into a missing
  list, RENAME or MOVE onto it: ``Keyspace.store``) marks it ready
  (``created``: Redis's signalKeyAsReady, which also only fires when a key
  is added: a blocked client's key was missing, or it would have been
  served at once).
- After the command that made keys ready, ``node.execute`` calls
  ``serve_ready``: each ready key's clients, first come first served, are
  offered its value while it lasts; a client waiting for another type
  stays blocked (Redis 7.0: a BLPOP client whose key became a string waits
  on).  Serving may push to another key (BLMOVE), which makes that one
  ready in turn: the loop runs until no key is ready.
- MULTI/EXEC and scripts are one command for the waiters: whoever runs
  queued commands or a script wraps them in ``with blocking.atomic():``;
  keys made ready inside are served once, after the whole.  Inside, a
  blocking command that finds nothing answers as if timed out at once
  (Redis's CLIENT_DENY_BLOCKING): ``deny()``.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from mypy_extensions import mypyc_attr

from ...protocol import resp
from ..pubsub import keyspace_events
from .streams import Stream

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node
    from .db import Db


@mypyc_attr(allow_interpreted_subclasses=True)  # (ZPopWaiter, interpreted)
class KeyWaiter:
    """``client.blocked`` while a command waits for one of ``keys`` of db
    ``db`` to hold a value of class ``value_class``.  Subclasses say what
    serving means (``serve``)."""

    __slots__ = ("db", "keys", "value_class")

    def __init__(self, db: int, keys: tuple[bytes, ...], value_class: type) -> None:
        self.db = db
        self.keys = keys  # distinct, in the command's order
        self.value_class = value_class

    def offer(self, node: Node, client: Client, db: Db, key: bytes,
              value: object | None) -> bytes | None:
        """``key`` was made ready and now holds ``value`` (None: no key):
        the reply if this serves the client, None if it waits on (for
        another type, or a key that is gone)."""
        if value is None or type(value) is not self.value_class:
            return None
        return self.serve(node, client, db, key, value)

    def serve(self, node: Node, client: Client, db: Db, key: bytes,
              value: object) -> bytes:
        """Take what the command wanted from ``value`` (non-empty, of
        ``value_class``) at ``key``, log it, and return the reply."""
        raise NotImplementedError

    def as_command(self, key: bytes) -> list[bytes]:
        """The command that does what serving did at ``key`` (LPOP...),
        for its keyspace events; [] for none."""
        return []

    def cancel(self, node: Node, client: Client) -> None:
        node.keyspace.blocking.forget(client, self)

    def timeout(self, node: Node, client: Client) -> None:
        node.unblock(client)
        node.reply(client, resp.null_array(client.proto))


class KeyBlocking:
    def __init__(self, node: Node, databases: int) -> None:
        self.node = node
        self.waiting: list[dict[bytes, dict[Client, None]]] = [{} for _ in range(databases)]
        self.ready: dict[tuple[int, bytes], None] = {}  # in the order made ready
        self.count = 0  # clients blocked on keys (0: writes skip every check)
        self.atomic_depth = 0

    def block(self, client: Client, waiter: KeyWaiter, timeout_ms: int) -> None:
        """Block ``client`` until ``waiter`` is served, times out, or the
        client goes (timeout_ms 0: forever)."""
        waiting = self.waiting[waiter.db]
        for key in waiter.keys:
            clients = waiting.get(key)
            if clients is None:
                clients = waiting[key] = {}
            clients[client] = None
        self.count += 1
        self.node.block(client, waiter, timeout_ms)

    def forget(self, client: Client, waiter: KeyWaiter) -> None:
        waiting = self.waiting[waiter.db]
        for key in waiter.keys:
            clients = waiting.get(key)
            if clients is not None:
                clients.pop(client, None)
                if not clients:
                    del waiting[key]
        self.count -= 1

    def created(self, db: Db, key: bytes) -> None:
        """``key`` was just added to ``db``: its waiters are served after
        this command (or after the EXEC/script around it)."""
        if key in self.waiting[db.id]:
            self.ready[(db.id, key)] = None
            self.node.keys_ready = True  # (what node.execute looks at)

    def signal(self, db: Db, key: bytes) -> None:
        """Redis's signalKeyAsReady for what is not a creation: an XADD
        to a stream, a stream deleted or overwritten (a blocked
        XREADGROUP then fails), a group destroyed."""
        if self.count and key in self.waiting[db.id]:
            self.ready[(db.id, key)] = None
            self.node.keys_ready = True

    def replaced(self, db: Db, key: bytes, old: object) -> None:
        """``key``'s value ``old`` was deleted or overwritten: a stream's
        blocked XREADGROUPs are answered (Redis's dbGenericDelete and
        dbOverwrite signal a stream key so)."""
        if self.count and type(old) is Stream and key in self.waiting[db.id]:
            self.ready[(db.id, key)] = None
            self.node.keys_ready = True

    def deny(self) -> bool:
        """Whether a blocking command must answer now rather than block
        (inside EXEC or a script, or replaying the AOF)."""
        return self.atomic_depth > 0 or self.node.keyspace.replaying

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Commands run inside are one for the waiters (EXEC, scripts)."""
        self.atomic_depth += 1
        try:
            yield
        finally:
            self.atomic_depth -= 1

    def serve_ready(self) -> None:
        """Serve the clients blocked on the keys made ready (Redis's
        handleClientsBlockedOnKeys); node.execute calls this after a
        command that made any."""
        if self.atomic_depth:
            return  # after the EXEC or script as a whole
        node = self.node
        ks = node.keyspace
        while self.ready:
            ready, self.ready = self.ready, {}
            for db_id, key in ready:
                db = ks.dbs[db_id]
                clients = self.waiting[db_id].get(key)
                if not clients:
                    continue
                value = ks.lookup(db, key)
                for client in list(clients):  # first come, first served
                    waiter = client.blocked
                    if not isinstance(waiter, KeyWaiter):
                        continue
                    if value is None and waiter.value_class is not Stream:
                        # emptied by those before, or deleted: only a group
                        # reader has something to hear (its stream is gone)
                        continue
                    if ks.notify_flags:  # (its pop notifies: pubsub/keyspace_events.py)
                        reply = keyspace_events.serve_waiter(node, client, waiter, db, key, value)
                    else:
                        reply = waiter.offer(node, client, db, key, value)
                    if reply is None:  # (a waiter for another type stays blocked)
                        continue
                    node.unblock(client)
                    node.reply(client, reply)
                    value = ks.lookup(db, key)
