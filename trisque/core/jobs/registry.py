"""The node's jobs by ID, in SHARDS dicts: a dict grows by copying all of
itself into a table twice its size, a stall as long as the node is big
(milliseconds at a few 100k jobs, on every node of a cluster at the same
counts), and one with deletions copies itself again each time its free
slots run out.  A shard is 1/SHARDS of that copy, and the shards, each
holding its share of a random sample, cross their sizes at different
counts.  ``JobIdSet``: the same for a set of IDs (the ack GC's
tombstones, cluster/acks.py).  (shards.py: the same for other keys.)

The shard is two characters of the ID's random part (protocol/jobid.py:
24 from the base64 alphabet, so 12 uniform bits), never its hash: the
order of iteration stays the IDs', whatever PYTHONHASHSEED.  Any other
bytes (a client's ID of the wrong length) go to shard 0.

Iteration is shard by shard, each in its insertion order: a new job may
land before the ones already walked, never moves another, so scan.py's
cursors (a position, stepped back by the deletions since) still never
skip a job.

``recent``: a direct-mapped cache in front of the dicts, a job per slot
chosen by two other random characters of its ID.  An ID from a bus frame
or a client is a fresh bytes object: a dict look-up hashes its 40 bytes
and compares them with the key's (~520 instructions); a slot is two
indexed reads and one compare.  Every job in a slot is in the registry
under its ID (each change of the dicts updates its slot), so a hit needs
no look-up and a miss is the dict's answer.
"""

from itertools import chain
from typing import Final, Iterator

from mypy_extensions import i64

from .job import Job
from .shards import MASK as _MASK
from .shards import SHARDS, DictShards
_ID_LEN: Final = 40  # protocol/jobid.py's ID_LEN
_HIGH: Final = 33  # the last two of the 24 random characters
_LOW: Final = 34
_SLOT_HIGH: Final = 31  # (the slot of ``recent``: two characters the shard does not use)
_SLOT_LOW: Final = 32
_SLOTS: Final = 4096  # 12 bits: 32 KiB of pointers
_ALPHABET: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
# A character's value in the alphabet (0-63); other bytes any of them.
_SIX_BITS: Final = bytes(
    [_ALPHABET.index(byte) if byte in _ALPHABET else byte & 63 for byte in range(256)])


def shard_of(job_id: bytes) -> i64:
    # (the methods below repeat this inline: compiled, a call and tagged
    # ints cost a lookup ~40 instructions more; bench/README.md, "The job
    # registry's growth")
    if len(job_id) != _ID_LEN:
        return 0
    six = _SIX_BITS
    return ((i64(six[job_id[_HIGH]]) << 6) | i64(six[job_id[_LOW]])) & _MASK


def _slot_of(job_id: bytes) -> i64:
    """The ID's slot in ``recent`` (an ID of another length: -1, none)."""
    if len(job_id) != _ID_LEN:
        return -1
    six = _SIX_BITS
    return (i64(six[job_id[_SLOT_HIGH]]) << 6) | i64(six[job_id[_SLOT_LOW]])


class JobRegistry(DictShards[bytes, Job]):
    """job id -> Job, with the dict methods the node uses."""

    recent: list[Job | None]

    def __init__(self) -> None:
        self.shards = tuple([{} for _ in range(SHARDS)])
        self.recent = [None] * _SLOTS

    def get(self, job_id: bytes) -> Job | None:
        i: i64 = 0
        if len(job_id) == _ID_LEN:
            six = _SIX_BITS
            slot = (i64(six[job_id[_SLOT_HIGH]]) << 6) | i64(six[job_id[_SLOT_LOW]])
            hit = self.recent[slot]
            if hit is not None and hit.id == job_id:
                return hit
            i = ((i64(six[job_id[_HIGH]]) << 6) | i64(six[job_id[_LOW]])) & _MASK
            found = self.shards[i].get(job_id)
            if found is not None:
                self.recent[slot] = found
            return found
        return self.shards[i].get(job_id)

    def setdefault(self, job_id: bytes, job: Job) -> Job:
        i: i64 = 0
        if len(job_id) == _ID_LEN:
            six = _SIX_BITS
            i = ((i64(six[job_id[_HIGH]]) << 6) | i64(six[job_id[_LOW]])) & _MASK
            found = self.shards[i].setdefault(job_id, job)
            self.recent[(i64(six[job_id[_SLOT_HIGH]]) << 6) | i64(six[job_id[_SLOT_LOW]])] = found
            return found
        return self.shards[i].setdefault(job_id, job)

    def pop(self, job_id: bytes) -> Job | None:
        """The job removed, or None if it was not here."""
        i: i64 = 0
        if len(job_id) == _ID_LEN:
            six = _SIX_BITS
            i = ((i64(six[job_id[_HIGH]]) << 6) | i64(six[job_id[_LOW]])) & _MASK
            shard = self.shards[i]
            slot = (i64(six[job_id[_SLOT_HIGH]]) << 6) | i64(six[job_id[_SLOT_LOW]])
            job = self.recent[slot]
            if job is not None and job.id == job_id:
                self.recent[slot] = None  # (a slot holds only registered jobs)
            else:
                # (get and del: compiled, dict.pop with a default is a
                # generic method call, ~400 instructions)
                job = shard.get(job_id)
                if job is None:
                    return None
            del shard[job_id]
            return job
        return self.shards[i].pop(job_id, None)

    def _forget(self, job_id: bytes) -> None:
        """``job_id``'s job, if in its slot, leaves it."""
        slot = _slot_of(job_id)
        if slot >= 0:
            hit = self.recent[slot]
            if hit is not None and hit.id == job_id:
                self.recent[slot] = None

    def __contains__(self, job_id: bytes) -> bool:
        slot = _slot_of(job_id)
        if slot >= 0:
            hit = self.recent[slot]
            if hit is not None and hit.id == job_id:
                return True
        return job_id in self.shards[shard_of(job_id)]

    def __getitem__(self, job_id: bytes) -> Job:
        job = self.get(job_id)
        if job is None:
            raise KeyError(job_id)
        return job

    def __setitem__(self, job_id: bytes, job: Job) -> None:
        self._forget(job_id)  # (the job there now may be another)
        self.shards[shard_of(job_id)][job_id] = job

    def __delitem__(self, job_id: bytes) -> None:
        del self.shards[shard_of(job_id)][job_id]
        self._forget(job_id)

    def __len__(self) -> int:
        n = 0
        for shard in self.shards:
            n += len(shard)
        return n

    def __bool__(self) -> bool:
        for shard in self.shards:
            if shard:
                return True
        return False

    def keys(self) -> Iterator[bytes]:
        return chain.from_iterable(self.shards)

    def clear(self) -> None:
        for shard in self.shards:
            shard.clear()
        self.recent = [None] * _SLOTS


class JobIdSet:
    """A set of job IDs in SHARDS sets: the set methods its users call.
    ``size`` counted as it goes: ``if ids`` is on REPLJOB's path."""

    shards: list[set[bytes]]
    size: int

    def __init__(self) -> None:
        self.shards = [set() for _ in range(SHARDS)]
        self.size = 0

    def add(self, job_id: bytes) -> None:
        shard = self.shards[shard_of(job_id)]
        before = len(shard)
        shard.add(job_id)
        self.size += len(shard) - before

    def discard(self, job_id: bytes) -> None:
        shard = self.shards[shard_of(job_id)]
        before = len(shard)
        shard.discard(job_id)
        self.size -= before - len(shard)

    def __contains__(self, job_id: bytes) -> bool:
        return job_id in self.shards[shard_of(job_id)]

    def __len__(self) -> int:
        return self.size

    def __bool__(self) -> bool:
        return self.size > 0

    def __iter__(self) -> Iterator[bytes]:
        return chain.from_iterable(self.shards)
