"""MULTI, EXEC, DISCARD, WATCH, UNWATCH, as Redis 7's multi.c.

- MULTI opens a transaction (``client.multi``): every later command but
  EXEC, DISCARD, MULTI, WATCH, QUIT and RESET is checked (unknown command,
  arity, auth, OOM, loading: the table's refusals in ``node.execute``) and
  queued with ``+QUEUED``.  A refusal at queue time answers its error and
  marks the transaction aborted: EXEC then answers ``-EXECABORT`` and runs
  nothing.  A refused EXEC itself (-BUSY, -OOM) discards the transaction
  with ``EXECABORT Transaction discarded because of: <error>``.
- EXEC runs the queued commands one after the other, with nothing between
  them: the core never awaits, so it is atomic with respect to every other
  client.  Each command's reply, errors included, is one element of EXEC's
  array.  Blocking commands answer at once as if timed out (BLPOP...), as
  in Redis; Disque's own commands are queued like any other: GETJOB acts
  as NOHANG and ADDJOB as ASYNC (its replication is a wait too), both
  through ``blocking.atomic()``, the keyspace's "no waiting here" marker.
- WATCH remembers keys; any write to one of them (by anybody, this client
  included: ``Keyspace.touched``), its expiry, FLUSHDB/FLUSHALL, makes the
  next EXEC answer a null (``*-1``, RESP3 ``_``).  A key already expired
  when watched counts as missing: its later deletion changes nothing (7.0's
  ``wk->expired``); one that expires between WATCH and EXEC aborts it,
  even if nobody looked it up (``isWatchedKeyExpired``).  EXEC, DISCARD,
  UNWATCH and the client's departure forget every watched key.
- AOF: the writes of an EXEC (and of a script) reach the log between a
  ``MULTI`` and an ``EXEC`` record (``AtomicLog``), written only if
  something was logged; the loader applies such a block only once its
  ``EXEC`` is read, so a torn tail never half-applies one.  A script cut
  short by SHUTDOWN NOSAVE after writing ends its block with ``DISCARD``:
  the loader drops it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..hooks import NoLog

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node
    from ..command import Command
    from .db import Db

QUEUED = b"+QUEUED\r\n"
EXECABORT = "EXECABORT Transaction discarded because of previous errors."
# Run at once even inside MULTI (Redis's processCommand list).
NOT_QUEUED = frozenset(("EXEC", "DISCARD", "MULTI", "WATCH", "QUIT", "RESET"))
# Refused inside MULTI, aborting the transaction (Redis's no-multi flag).
NO_MULTI = frozenset(("SHUTDOWN", "SAVE", "SYNC", "PSYNC"))
NO_MULTI_ERROR = "ERR Command not allowed inside a transaction"
# Refused at EXEC as Redis does for a DENY BLOCKING client.
NOT_IN_EXEC = {"MONITOR": "ERR MONITOR isn't allowed for DENY BLOCKING client",
               "SSUBSCRIBE": "ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client"}


class Transaction:
    """``client.multi`` between MULTI and EXEC/DISCARD."""

    __slots__ = ("commands", "aborted", "deny_oom")

    def __init__(self) -> None:
        self.commands: list[tuple[Command, list[bytes]]] = []
        self.aborted = False  # a command was refused at queue time
        self.deny_oom = False  # a queued command may grow memory


class Watch:
    """``client.watch``: the keys a client WATCHes.  ``dirty`` is set by
    ``Keyspace.touched`` through its ``WatchedKey`` entries."""

    __slots__ = ("keys", "dirty")

    def __init__(self) -> None:
        self.keys: list[WatchedKey] = []
        self.dirty = False


class WatchedKey:
    """One watched key: what sits in ``db.watched[key]``."""

    __slots__ = ("watch", "db", "key", "expired")

    def __init__(self, watch: Watch, db: Db, key: bytes, expired: bool) -> None:
        self.watch = watch
        self.db = db
        self.key = key
        self.expired = expired  # already logically expired when watched

    @property
    def dirty(self) -> bool:
        return self.watch.dirty

    @dirty.setter
    def dirty(self, value: bool) -> None:
        # Keyspace.touched: a key watched while expired and now deleted is
        # logically unchanged (Redis 7.0 touchWatchedKey); anything else
        # after that (a new value) is a change.
        if self.expired and self.key not in self.db.keys:
            self.expired = False
            return
        self.watch.dirty = value


# --------------------------------------------------------------- queueing

def queue(node: Node, client: Client, command: Command, argv: list[bytes]) -> None:
    """A command sent inside MULTI: kept for EXEC (node.execute, after the
    table's checks passed)."""
    multi = client.multi
    assert multi is not None
    multi.commands.append((command, argv))
    if command.deny_oom:
        multi.deny_oom = True
    if client.slots:  # (replies waiting behind a pending one keep order)
        client.slots.append(QUEUED)
    else:
        client.out.append(QUEUED)


def rejected(node: Node, client: Client, command: Command | None, message: str) -> str:
    """A command refused before running (node._reply_error) while in
    MULTI: the transaction is aborted; a refused EXEC discards it now."""
    multi = client.multi
    if multi is None:
        return message
    if command is not None and command.name == "EXEC":
        discard(node, client)
        return "EXECABORT Transaction discarded because of: " + message
    multi.aborted = True
    return message


def discard(node: Node, client: Client) -> None:
    client.multi = None
    unwatch_all(client)


# ---------------------------------------------------------------- WATCH

def watch_key(node: Node, client: Client, db: Db, key: bytes) -> None:
    watch = client.watch
    if watch is None:
        watch = client.watch = Watch()
    for entry in watch.keys:
        if entry.db is db and entry.key == key:
            return
    when = db.expires.get(key)
    expired = when is not None and when <= node.now_ms() and key in db.keys
    entry = WatchedKey(watch, db, key, expired)
    watch.keys.append(entry)
    db.watched.setdefault(key, []).append(entry)


def unwatch_all(client: Client) -> None:
    """Forget every key ``client`` watches (EXEC, DISCARD, UNWATCH, gone)."""
    watch = client.watch
    if watch is None:
        return
    client.watch = None
    for entry in watch.keys:
        watchers = entry.db.watched.get(entry.key)
        if watchers is not None:
            watchers.remove(entry)
            if not watchers:
                del entry.db.watched[entry.key]


def watch_failed(node: Node, client: Client) -> bool:
    """EXEC must abort: a watched key was touched, or expired since WATCH."""
    watch = client.watch
    if watch is None:
        return False
    if watch.dirty:
        return True
    now_ms = node.now_ms()
    for entry in watch.keys:
        if entry.expired:
            continue
        when = entry.db.expires.get(entry.key)
        if when is not None and when <= now_ms and entry.key in entry.db.keys:
            return True
    return False


# ------------------------------------------------------------------ AOF

class AtomicLog:
    """Stands in for ``node.log`` while an EXEC or a script runs: the first
    record written opens a ``MULTI`` block, ``close`` ends it with ``EXEC``.
    Everything else is the real log's (``end``, ``failing``...)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.opened = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def _open(self) -> None:
        if not self.opened:
            self.opened = True
            self.real.append_command(b"MULTI")

    def job_stored(self, job: Any) -> None:
        self._open()
        self.real.job_stored(job)

    def job_deleted(self, job: Any) -> None:
        self._open()
        self.real.job_deleted(job)

    def job_updated(self, job: Any) -> None:
        self._open()
        self.real.job_updated(job)

    def append_command(self, *argv: bytes) -> None:
        self._open()
        self.real.append_command(*argv)

    def close(self, discard: bool = False) -> None:
        if self.opened:
            # DISCARD: the loader drops the block (a script cut short by
            # SHUTDOWN NOSAVE: its half-done writes must not come back)
            self.real.append_command(b"DISCARD" if discard else b"EXEC")


class Atomic:
    """``with Atomic(node):`` around commands that must be one: an EXEC's,
    a script's.  Their records form one AOF block, the clients they make
    ready are served after the whole, blocking commands answer at once.
    Nested (EVAL inside EXEC) is one block.  A script engine keeps one and
    calls ``begin``/``end`` around every run: its ``AtomicLog`` is reused
    (scripts never nest), so a run allocates nothing here."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.log: AtomicLog | None = None  # node.log while this block wraps it
        self.abandoned = False  # set by the owner: log DISCARD, not EXEC
        self._wrapper: AtomicLog | None = None  # the AtomicLog begin() reuses

    def __enter__(self) -> Atomic:
        self.begin()
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()

    def begin(self) -> None:
        node = self.node
        log = node.log
        if type(log) is not AtomicLog and type(log) is not NoLog:
            wrapper = self._wrapper
            if wrapper is None:
                wrapper = self._wrapper = AtomicLog(log)
            else:
                wrapper.real = log
                wrapper.opened = False
            node.swap_log(wrapper)
            self.log = wrapper
        self.abandoned = False
        # blocking.atomic()'s depth, kept here without its generator (a
        # script's FCALL pays for this on every call)
        node.keyspace.blocking.atomic_depth += 1

    def end(self) -> None:
        node = self.node
        node.keyspace.blocking.atomic_depth -= 1
        wrapper = self.log
        if wrapper is not None:
            self.log = None
            node.swap_log(wrapper.real)
            wrapper.close(self.abandoned)
            wrapper.real = None  # (the log is not kept alive between runs)
            if self.abandoned:
                node.keyspace.aof_db = -1  # its SELECT is dropped on load too
