"""The keyspace: 16 databases (``databases``) of keys beside the jobs, and
every rule that touches a key whatever its type: lookup with lazy expiry,
storing and deleting with memory accounting, expiry times, the AOF record
of each write, flushing, and what INFO says.

Rules, as Redis's db.c:

- Lazy expiry: a key whose time has come is deleted when a command looks
  it up (``lookup``), so no command ever sees it, to the millisecond; the
  deletion is logged as ``DEL`` so the AOF replays the same history.  The
  cron deletes the rest (expiry.py).
- While the AOF is replayed (``replaying``) nothing expires and nothing is
  logged: the records replay the history as it happened, expired keys
  included, and the cron removes what is due once loading is over.
- Every write is logged as a record that replays the same way whenever it
  is loaded: relative times become absolute (``SET .. PXAT``,
  ``PEXPIREAT``), conditional commands log their effect (SETNX -> SET),
  and a ``SELECT`` goes before the first record of another db
  (``aof_db``, reset when a rewrite starts, so its buffered records are
  self-contained).
- ``memory`` (per db, and the node's ``used_memory``) follows every key
  created, changed or removed, estimated from the sizes of the Python
  objects; ``maxmemory`` refuses ``denyoom`` commands at the limit, the
  node's rule for jobs too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from ...protocol import aof
from ...protocol.errors import CommandError
from ..pubsub import keyspace_events
from .blocking import KeyBlocking
from .db import Db
from .encoding_limits import follow
from .types import TYPES, memory_of

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

# Estimated bytes per key beyond its bytes: a dict slot (~48 at the usual
# load factor) and the key's bytes object header (~40); checked against
# tracemalloc in bench/README.md, "Keyspace memory estimates".
KEY_OVERHEAD = 88
# A TTL: the expires dict slot (~64), the int (32), the heap's tuple and slot (~72).
EXPIRE_OVERHEAD = 168
LAZYFREE_PER_CRON = 50000  # values freed per cron step after FLUSH* ASYNC
SNAPSHOT_CHUNK_KEYS = 2000  # keys serialized per step of a background rewrite


class Keyspace:
    def __init__(self, node: Node, databases: int) -> None:
        self.node = node
        self.dbs = [Db(i) for i in range(databases)]
        self.replaying = False  # the AOF is being replayed: no expiry, no log
        self.aof_db = -1  # the db the last logged record applies to
        self.expired_keys = 0
        # writes logged since the start (INFO's rdb_changes_since_last_save:
        # there is no RDB; Redis's dirty counter, one per write record)
        self.changes = 0
        self.lazyfree: list[dict[bytes, object]] = []  # flushed, freed by the cron
        self.blocking = KeyBlocking(node, databases)  # clients blocked on keys (BLPOP...)
        # notify-keyspace-events as flags (0: off, nothing looked at), and
        # the keys the running command created (pubsub/keyspace_events.py)
        self.notify_flags = 0
        self.created: list[tuple[int, bytes]] = []
        keyspace_events.follow(self)
        follow(node.config)  # OBJECT ENCODING's bounds, from CONFIG

    # ------------------------------------------------------------ lookups

    def lookup(self, db: Db, key: bytes) -> object | None:
        """The live value of ``key``, or None (an expired key goes now)."""
        value = db.keys.get(key)
        if value is not None and db.expires:
            when = db.expires.get(key)
            if when is not None and when <= self.node.now_ms() and not self.replaying:
                if not self.node.paused:  # (CLIENT PAUSE: missing, but kept)
                    self.expire_key(db, key)
                return None
        return value

    def is_expired(self, db: Db, key: bytes, now_ms: int) -> bool:
        """Past its time, without deleting it (KEYS, SCAN, RANDOMKEY)."""
        when = db.expires.get(key)
        return when is not None and when <= now_ms and not self.replaying

    def expire_key(self, db: Db, key: bytes) -> None:
        """Delete a key whose time has come, as if DEL'd (and logged so)."""
        self.delete(db, key)
        self.expired_keys += 1
        self.log(db, b"DEL", key)
        if self.notify_flags:
            keyspace_events.publish(self.node, keyspace_events.EXPIRED, b"expired", key, db.id)

    def ttl_ms(self, db: Db, key: bytes) -> int | None:
        return db.expires.get(key)

    # ------------------------------------------------------------- writes

    def grow(self, db: Db, delta: int) -> None:
        """``db`` holds ``delta`` more bytes (negative: fewer)."""
        db.memory += delta
        self.node.memory_changed(delta)

    def store(self, db: Db, key: bytes, value: object, keepttl: bool = False) -> None:
        """Set ``key`` to ``value`` whatever it held (Redis's setKey); its
        TTL goes unless ``keepttl``."""
        keys = db.keys
        old = keys.get(key)
        if old is None:
            delta = KEY_OVERHEAD + len(key) + memory_of(value)
        else:
            delta = memory_of(value) - memory_of(old)
            if not keepttl and db.expires and db.remove_expire(key):
                delta -= EXPIRE_OVERHEAD
        keys[key] = value
        db.memory += delta
        self.node.memory_changed(delta)
        if db.watched:
            self.touched(db, key)
        if old is None and self.notify_flags:
            self.created.append((db.id, key))  # ("new": keyspace_events.py)
        if self.blocking.count:
            if old is None:
                self.blocking.created(db, key)  # a client may wait for it (BLPOP...)
            else:
                self.blocking.replaced(db, key, old)  # (a blocked XREADGROUP's stream)

    def delete(self, db: Db, key: bytes) -> bool:
        value = db.keys.pop(key, None)
        if value is None:
            return False
        delta = -(KEY_OVERHEAD + len(key) + memory_of(value))
        if db.expires and db.remove_expire(key):
            delta -= EXPIRE_OVERHEAD
        db.deletions += 1
        db.memory += delta
        self.node.memory_changed(delta)
        if db.watched:
            self.touched(db, key)
        if self.blocking.count:
            self.blocking.replaced(db, key, value)  # (a blocked XREADGROUP's stream)
        return True

    def set_expire(self, db: Db, key: bytes, when_ms: int) -> None:
        if db.set_expire(key, when_ms):
            self.grow(db, EXPIRE_OVERHEAD)
        if db.watched:
            self.touched(db, key)

    def remove_expire(self, db: Db, key: bytes) -> bool:
        if not db.remove_expire(key):
            return False
        self.grow(db, -EXPIRE_OVERHEAD)
        if db.watched:
            self.touched(db, key)
        return True

    def touched(self, db: Db, key: bytes) -> None:
        """Redis's signalModifiedKey: ``key`` was written, deleted, expired
        or flushed.  Only WATCH cares (MULTI/EXEC): writers call this only
        while ``db.watched`` is non-empty, so it costs nothing until then.
        A watcher is anything with a ``dirty`` attribute."""
        for watcher in db.watched.get(key, ()):
            watcher.dirty = True

    # ---------------------------------------------------------------- AOF

    def log(self, db: Db, *argv: bytes) -> None:
        """Log a write of ``db`` (bytes arguments) to the AOF, if any."""
        if self.replaying:
            return
        self.changes += 1
        node = self.node
        if db.id != self.aof_db:
            self.aof_db = db.id
            if node.log_active:
                node.log.append_command(b"SELECT", b"%d" % db.id)
        # (a log that records nothing now, the AOF off and no rewrite, is
        # not called: it would return at once, after an interpreted call)
        if node.log_active:
            node.log.append_command(*argv)

    def replay(self, client: Client, argv: list[bytes]) -> None:
        """Apply one logged record (``client`` carries the SELECTed db).
        Raises ValueError for a record no writer of ours produces."""
        command = self.node.table.get(argv[0].upper())
        arity = command.arity if command is not None else 0
        if command is None or (arity > 0 and len(argv) != arity) or len(argv) < -arity:
            raise ValueError(f"bad keyspace record {argv[0][:32]!r}")
        self.aof_db = -1  # the file's SELECT state is not ours
        self.replaying = True
        try:
            command.handler(self.node, client, argv)
        except CommandError:
            pass  # as Redis: a record's error reply is dropped
        finally:
            self.replaying = False

    def snapshot(self) -> Iterator[bytes]:
        """The records that rebuild every key, for an AOF rewrite.  Values
        are captured now (mutable ones frozen); serialized lazily."""
        self.aof_db = -1  # the rewrite's buffered records start with a SELECT
        captured = []
        for db in self.dbs:
            if not db.keys:
                continue
            items = list(db.keys.items())
            for i, (key, value) in enumerate(items):
                if type(value) is not bytes:
                    items[i] = (key, TYPES[type(value)].freeze(value))
            captured.append((db.id, items, dict(db.expires)))

        def chunks() -> Iterator[bytes]:
            command = aof.command
            for db_id, items, expires in captured:
                parts = [command(b"SELECT", b"%d" % db_id)]
                for n, (key, frozen) in enumerate(items, 1):
                    for argv in TYPES[type(frozen)].records(key, frozen):
                        parts.append(command(*argv))
                    when = expires.get(key)
                    if when is not None:
                        parts.append(command(b"PEXPIREAT", key, b"%d" % when))
                    if n % SNAPSHOT_CHUNK_KEYS == 0:
                        yield b"".join(parts)
                        parts = []
                yield b"".join(parts)
        return chunks()

    def expiry_due(self, now_ms: int) -> bool:
        """Some db's earliest TTL (maybe a stale one) is due by ``now_ms``:
        the cron's look before active expiry (expiry.py, interpreted), which
        would find nothing to do otherwise."""
        for db in self.dbs:
            heap = db.heap
            if heap and heap[0][0] <= now_ms:
                return True
        return False

    # --------------------------------------------------------- whole dbs

    def flush_db(self, db: Db, lazy: bool = False) -> None:
        """Empty ``db`` (FLUSHDB); ``lazy`` frees its values from the cron."""
        watched = [key for key in db.watched if key in db.keys]
        if self.blocking.count:
            for key in self.blocking.waiting[db.id]:
                value = db.keys.get(key)
                if value is not None:
                    self.blocking.replaced(db, key, value)  # (blocked XREADGROUPs fail)
        self.node.memory_changed(-db.memory)
        old = db.clear()
        if lazy and old:
            self.lazyfree.append(old)
        for key in watched:
            self.touched(db, key)

    def swap_dbs(self, a: Db, b: Db) -> None:
        """SWAPDB: ``a`` and ``b`` exchange their keys (with TTLs and
        bookkeeping); clients and their WATCHes and waits stay with the
        db number, so a watched key present on either side is touched and
        a waited-for key now present is made ready (dbSwapDatabases)."""
        for one, other in ((a, b), (b, a)):
            for key in [k for k in one.watched if k in one.keys or k in other.keys]:
                self.touched(one, key)
        a.keys, b.keys = b.keys, a.keys
        a.expires, b.expires = b.expires, a.expires
        a.heap, b.heap = b.heap, a.heap
        a.when_sum, b.when_sum = b.when_sum, a.when_sum
        a.memory, b.memory = b.memory, a.memory
        a.deletions, b.deletions = b.deletions, a.deletions
        if self.blocking.count:
            for db in (a, b):
                for key in list(self.blocking.waiting[db.id]):
                    if key in db.keys:
                        self.blocking.created(db, key)

    def flush_all(self, lazy: bool = False) -> None:
        for db in self.dbs:
            if db.keys:
                self.flush_db(db, lazy)

    def free_lazily(self, budget: int = LAZYFREE_PER_CRON) -> None:
        """Drop up to ``budget`` values of flushed dbs (FLUSH* ASYNC)."""
        while self.lazyfree and budget > 0:
            old = self.lazyfree[-1]
            while old and budget > 0:
                old.popitem()
                budget -= 1
            if not old:
                self.lazyfree.pop()

    # -------------------------------------------------------------- INFO

    def info_fields(self, now_ms: int) -> list[tuple[str, str]]:
        """INFO keyspace: ``db0:keys=..,expires=..,avg_ttl=..`` (avg_ttl
        exact here; Redis's is an estimate from its samples)."""
        out = []
        for db in self.dbs:
            if db.keys:
                n_exp = len(db.expires)
                avg = max(0, db.when_sum // n_exp - now_ms) if n_exp else 0
                out.append((f"db{db.id}", f"keys={len(db.keys)},expires={n_exp},avg_ttl={avg}"))
        return out
