"""Idempotent adds (docs/lifecycle.md): ADDJOB ... IDEMPOTENCY key answers
the ID of the job already added here with that key in that queue, for
that job's TTL.

A node indexes the key of every job it holds (created here, replicated
here, imported by federation, reloaded from the AOF: the key travels in
the job's policy).  When the job leaves (acked, deleted) a tombstone keeps
key -> (ID, end of the TTL), so a retry after the job completed still gets
the same ID; tombstones are logged (``IDEMKEY`` records), rewritten, and
dropped when their time is over.  A key is scoped by the queue the job was
added to (as SQS and BullMQ scope theirs): a dead-lettered job keeps it
under that queue.

Both maps are sharded (shards.py): one dict of every keyed job
copied itself whole as it grew, a stall as long as the node is big.
"""

import heapq
from typing import Final

from .shards import ShardedDict

# What an index entry or a tombstone costs (the dict entry, the tuple, the
# heap entry), beyond the key and queue name: counted in used_memory.
ENTRY_OVERHEAD: Final = 200

Scope = tuple[bytes, bytes]  # (queue added to, key)


class IdempotencyIndex:
    """One node's keys: the live jobs' and the tombstones of gone ones."""

    __slots__ = ("live", "gone", "_expiries")
    live: ShardedDict[Scope, bytes]  # -> job ID, while the job is held here
    gone: ShardedDict[Scope, tuple[bytes, int]]  # -> (job ID, ms the TTL ends)
    _expiries: list[tuple[int, bytes, bytes]]  # heap: (ms, queue, key)

    def __init__(self) -> None:
        self.live = ShardedDict()
        self.gone = ShardedDict()
        self._expiries = []

    def __len__(self) -> int:
        return len(self.live) + len(self.gone)

    def find(self, queue: bytes, key: bytes, now_ms: int) -> bytes | None:
        """The ID of the job added with ``key`` in ``queue``, if its TTL
        has not ended."""
        scope = (queue, key)
        job_id = self.live.get(scope)
        if job_id is not None:
            return job_id
        entry = self.gone.get(scope)
        if entry is not None and entry[1] > now_ms:
            return entry[0]
        return None

    def add_live(self, queue: bytes, key: bytes, job_id: bytes) -> int:
        """A job with ``key`` is held here: the bytes this costs (0 if the
        scope already had a live job: the first one stays indexed)."""
        scope = (queue, key)
        if scope in self.live:
            return 0
        self.live[scope] = job_id
        return ENTRY_OVERHEAD + len(queue) + len(key)

    def remove_live(self, queue: bytes, key: bytes, job_id: bytes) -> int:
        """The job left; minus the bytes given back (0 if it was not the
        indexed one)."""
        scope = (queue, key)
        if self.live.get(scope) != job_id:
            return 0
        del self.live[scope]
        return -(ENTRY_OVERHEAD + len(queue) + len(key))

    def add_gone(self, queue: bytes, key: bytes, job_id: bytes, until_ms: int) -> int:
        """A tombstone until ``until_ms``: the bytes it costs."""
        scope = (queue, key)
        old = self.gone.get(scope)
        self.gone[scope] = (job_id, until_ms)
        heapq.heappush(self._expiries, (until_ms, queue, key))
        return 0 if old is not None else ENTRY_OVERHEAD + len(queue) + len(key)

    def retire(self, queue: bytes, key: bytes, job_id: bytes, until_ms: int) -> int:
        """The job left: its entry becomes a tombstone until ``until_ms``
        (none if 0); the bytes this costs, or minus those given back.
        Nothing changes if it was not the indexed job."""
        freed = self.remove_live(queue, key, job_id)
        if freed and until_ms:
            return freed + self.add_gone(queue, key, job_id, until_ms)
        return freed

    def expire(self, now_ms: int) -> int:
        """Drop the tombstones whose time is over: minus the bytes freed."""
        expiries = self._expiries
        freed = 0
        while expiries and expiries[0][0] <= now_ms:
            until_ms, queue, key = heapq.heappop(expiries)
            scope = (queue, key)
            entry = self.gone.get(scope)
            if entry is not None and entry[1] <= now_ms:
                del self.gone[scope]
                freed += ENTRY_OVERHEAD + len(queue) + len(key)
        return -freed

    def tombstones(self) -> list[tuple[bytes, bytes, bytes, int]]:
        """(queue, key, job ID, until ms) of every tombstone (AOF rewrite)."""
        return [(queue, key, job_id, until_ms)
                for (queue, key), (job_id, until_ms) in list(self.gone.items())]
