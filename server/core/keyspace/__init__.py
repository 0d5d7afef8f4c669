"""The Redis keyspace of a node: keys beside the jobs, on the same port.

Keys are node-local (jobs are the replicated path): one node, or one node
per queue family, serves a Redis-protocol deployment.  The keyspace is part
of the node core: synchronous, time from ``node.now_ms()``, its commands in
the node's one command table, its writes in the node's AOF, its memory in
``used_memory``.

Modules (one concept each):

- ``db.py``: one database: ``keys`` (key -> value), ``expires`` (key ->
  unix ms), the expiry heap, memory and deletion counts.
- ``keyspace.py``: ``Keyspace``: the 16 dbs and the rules for any key:
  lookup with lazy expiry, store/delete with memory accounting, TTLs, the
  AOF record of a write (``log``) and its replay, rewrite snapshots,
  FLUSH*, INFO keyspace.
- ``expiry.py``: active expiry from the node's cron.
- ``types.py``: the type registry (TYPE, OBJECT ENCODING, memory, AOF
  rewrite of each type); ``strings.py``: the string type.
- ``numbers.py``: Redis's integer and long double parsing/formatting.
- ``patterns.py``: Redis's glob matching (KEYS, SCAN MATCH).
- ``args.py``: argument grammar (SET options, expire times).
- ``key_table.py``: ``key_command``, which registers in the one table.
- ``commands_keys.py``, ``commands_strings.py``, ``commands_db.py``: the
  commands.
- The shell side: ``server/shell/aof_keys.py`` hooks replay and rewrite
  into the AOF.

How to add a type (say lists):

1. A module ``lists.py``: the value class (e.g. ``collections.deque``, or a
   small class with ``__slots__`` that keeps its own byte count so
   ``memory`` is O(1)), and a ``ValueType("list", (deque,), memory,
   encoding, freeze, records)`` passed to ``register_type``.  ``freeze``
   copies the value for an AOF rewrite (``tuple(value)``); ``records``
   yields argument lists that rebuild it (``RPUSH key`` + up to 64 items
   each, as Redis's rewrite).  Import it from ``commands_lists.py`` so the
   registration runs.
2. A module ``commands_lists.py`` with handlers ``(node, client, argv) ->
   bytes | None`` registered with ``@key_command(name, arity, flags,
   keys)`` (flags as table.py: ``write denyoom`` for commands that grow,
   ``write`` for others, ``readonly``; ``fast`` where O(1)), and import it
   at the end of ``server/core/table.py``.  Look keys up with
   ``ks.lookup(db, key)`` (``db = ks.dbs[client.db]``), check the class
   (``raise CommandError(WRONGTYPE)``), create with ``ks.store``, remove
   with ``ks.delete`` (an emptied collection must be deleted: empty
   collections vanish), report in-place size changes with ``ks.grow(db,
   delta)``, call ``ks.touched(db, key)`` after an in-place change when
   ``db.watched``, and log the effect with ``ks.log(db, *argv)`` in a form
   that replays the same (a deterministic command as is; LPOP's effect
   with its count, never a relative time).  Reply in ``client.proto``
   (RESP3 maps, sets, doubles via ``protocol.resp.encode``).
3. The AOF needs nothing else: every ``write`` command registered with
   ``key_command`` is replayed through its own handler.  Add the type's
   generator to ``tests/server/keyspace_gen.py`` so the differential test
   covers it.

Blocking list commands (BLPOP...) reuse GETJOB's machinery: ``client.blocked``
holds an object with ``cancel(node, client)`` and ``timeout(node,
client)`` (``node.unblock`` and ``node.blocked_timeout`` call them), the
timeout is ``node.block(client, blocked, timeout_ms)``'s deadline, and
``node.reply(client, data)`` sends the late reply.  Keep a per-db
``key -> clients`` registry, have pushes mark the key ready, and serve the
ready keys' clients first come first served after the command that
pushed (Redis's handleClientsBlockedOnKeys; after EXEC and scripts as a
whole).  WATCH uses ``db.watched`` and ``Keyspace.touched``.
"""

from .expiry import active_expire
from .keyspace import Keyspace

__all__ = ["Keyspace", "active_expire"]
