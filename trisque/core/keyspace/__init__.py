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
- ``hashes.py``, ``sets.py``, ``zsets.py`` (with ``scores.py``): the
  collection types; ``commands_hashes.py``, ``commands_sets.py``,
  ``commands_zsets.py``, ``commands_zsets_blocking.py``: their commands;
  ``containers.py``: what those commands share (typed lookup, in-place
  change bookkeeping, RESP3 sets/maps/doubles, the *SCAN grammar).
- ``commands_keys.py``, ``commands_strings.py``, ``commands_db.py``: the
  commands; ``lists.py`` and ``commands_lists.py``: the list type and its
  commands; ``blocking.py``: clients blocked on keys.
- ``streams.py`` (with ``stream_ids.py``): the stream type, its entries
  in nodes split where Redis splits its listpacks, its consumer groups;
  ``commands_streams.py`` (XADD, XRANGE, XTRIM, XINFO...),
  ``commands_stream_groups.py`` (XGROUP, XACK, XPENDING, XCLAIM,
  XAUTOCLAIM), ``commands_stream_read.py`` (XREAD, XREADGROUP, blocking);
  ``stream_delivery.py``: entries delivered to a group's consumers, and
  the AOF records of the PEL's changes.
- ``transactions.py``: MULTI state, WATCH, ``Atomic`` (what EXEC and
  scripts run inside: one AOF block, blocking denied, waiters served after
  the whole); ``commands_transactions.py``: MULTI/EXEC/DISCARD/WATCH.
- ``scripting.py``: EVAL*, SCRIPT, the time limit and SCRIPT KILL;
  ``lua_sandbox.py``: the Lua 5.1 state and its sandbox;
  ``lua_convert.py``: Redis's Lua<->RESP conversions; ``lua_libs.py``:
  cjson and cmsgpack for scripts.
- ``functions.py``: FUNCTION and FCALL (libraries on the same Lua engine,
  their AOF records, rewrite and memory); ``function_payload.py``:
  FUNCTION DUMP's payload (Redis's format).
- The shell side: ``server/aof/keys.py`` hooks replay and rewrite
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
2. A module ``commands_lists.py`` with its list of commands, ``COMMANDS =
   Commands(keys=(1, 1, 1))`` (``core/command.py``), and handlers ``(node,
   client, argv) -> bytes | None`` added to it with ``@key_command(name,
   arity, flags, summary, syntax)`` (``key_command = COMMANDS.command``;
   flags as command.py: ``write denyoom`` for commands that grow, ``write``
   for others, ``readonly``; ``fast`` where O(1)); name that list in
   ``core/table.py``'s ``KEYSPACE`` and run ``make docs``.  Look keys up with
   ``ks.lookup(db, key)`` (``db = ks.dbs[client.db]``), check the class
   (``raise CommandError(WRONGTYPE)``), create with ``ks.store``, remove
   with ``ks.delete`` (an emptied collection must be deleted: empty
   collections vanish), report in-place size changes with ``ks.grow(db,
   delta)``, call ``ks.touched(db, key)`` after an in-place change when
   ``db.watched``, and log the effect with ``ks.log(db, *argv)`` in a form
   that replays the same (a deterministic command as is; LPOP's effect
   with its count, never a relative time).  Reply in ``client.proto``
   (RESP3 maps, sets, doubles via ``protocol.resp.encode``).
3. The AOF needs nothing else: every ``write`` command of ``KEYSPACE``
   is replayed through its own handler (``table.KEYSPACE_RECORDS``).  Add the type's
   generator to ``tests/server/keyspace_gen.py`` so the differential test
   covers it.

Blocking commands on keys (BLPOP...; BZPOPMIN the same way) reuse GETJOB's
machinery through ``blocking.py`` (``keyspace.blocking``): a command that
finds nothing calls ``blocking.block(client, waiter, timeout_ms)`` with a
``KeyWaiter`` subclass whose ``serve`` takes what it wanted from a value;
a key's creation (``Keyspace.store``) marks it ready, and ``node.execute``
serves the ready keys' waiters first come first served after the command.
EXEC and scripts wrap what they run in ``with blocking.atomic():``
(served once after the whole; blocking commands inside answer at once,
``blocking.deny()``).  ``commands_lists.timeout_ms_arg`` reads a timeout as
Redis 7.0 does.  WATCH uses ``db.watched`` and ``Keyspace.touched``.
"""

from .expiry import active_expire
from .keyspace import Keyspace

__all__ = ["Keyspace", "active_expire"]
