"""Active expiry: the cron deletes keys whose time has passed even if no
command looks at them again (lazy expiry, in keyspace.py, covers the ones
that are looked at, to the millisecond).

Redis samples 20 keys of its expires table at a time and goes on while more
than 10% of a sample had expired, within 25% of the cron period.  Here the
keys with a TTL also sit in a heap by expiry time (db.py says why), so the
cron pops exactly the keys that are due, oldest first: no key stays past
its time for longer than one cron period (100 ms at ``hz 10``) unless the
time budget ran out, and none is looked at needlessly.  The budget is
Redis's: 25% of the cron period, checked every 20 keys.
"""

from __future__ import annotations

from heapq import heappop
from time import perf_counter_ns
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .keyspace import Keyspace

KEYS_PER_LOOP = 20  # keys between two looks at the clock, as Redis's loop
SLOW_TIME_PERC = 25  # % of the cron period active expiry may take


def active_expire(keyspace: Keyspace, now_ms: int, hz: int) -> int:
    """Delete the keys due by ``now_ms``; returns how many went."""
    if keyspace.replaying or keyspace.node.loading:
        return 0  # the loaded history still has to be replayed as it was
    if keyspace.node.paused:
        return 0  # CLIENT PAUSE keeps the dataset still (Redis's, for a failover)
    budget_ns = SLOW_TIME_PERC * 10_000_000 // max(1, hz)
    started = perf_counter_ns()
    expired = 0
    for db in keyspace.dbs:
        heap = db.heap
        if not heap or heap[0][0] > now_ms:
            continue
        expires = db.expires
        while heap and heap[0][0] <= now_ms:
            when, key = heappop(heap)
            if expires.get(key) != when:
                continue  # a stale entry: the TTL changed or the key went
            keyspace.expire_key(db, key)
            expired += 1
            if (expired % KEYS_PER_LOOP == 0
                    and perf_counter_ns() - started > budget_ns):
                return expired
            heap = db.heap  # (expire_key may have rebuilt it)
    return expired
