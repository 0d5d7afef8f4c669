"""The node's jobs by ID, in SHARDS dicts: a dict grows by copying all of
itself into a table twice its size, a stall as long as the node is big
(milliseconds at a few 100k jobs, on every node of a cluster at the same
counts).  A shard is 1/SHARDS of that copy, and the shards, each holding
its share of a random sample, cross their sizes at different counts.

The shard is two characters of the ID's random part (protocol/jobid.py:
24 from the base64 alphabet, so 12 uniform bits), never its hash: the
order of iteration stays the IDs', whatever PYTHONHASHSEED.  Any other
bytes (a client's ID of the wrong length) go to shard 0.

Iteration is shard by shard, each in its insertion order: a new job may
land before the ones already walked, never moves another, so scan.py's
cursors (a position, stepped back by the deletions since) still never
skip a job.
"""

from itertools import chain
from typing import Final, Iterator

from .job import Job

SHARD_BITS: Final = 8
SHARDS: Final = 1 << SHARD_BITS
_MASK: Final = SHARDS - 1
_ID_LEN: Final = 40  # protocol/jobid.py's ID_LEN
_HIGH: Final = 33  # the last two of the 24 random characters
_LOW: Final = 34
_ALPHABET: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
# A character's value in the alphabet (0-63); other bytes any of them.
_SIX_BITS: Final = bytes(
    [_ALPHABET.index(byte) if byte in _ALPHABET else byte & 63 for byte in range(256)])


def shard_of(job_id: bytes) -> int:
    if len(job_id) != _ID_LEN:
        return 0
    six = _SIX_BITS
    return ((six[job_id[_HIGH]] << 6) | six[job_id[_LOW]]) & _MASK


class JobRegistry:
    """job id -> Job, with the dict methods the node uses."""

    shards: list[dict[bytes, Job]]

    def __init__(self) -> None:
        self.shards = [{} for _ in range(SHARDS)]

    def get(self, job_id: bytes) -> Job | None:
        return self.shards[shard_of(job_id)].get(job_id)

    def setdefault(self, job_id: bytes, job: Job) -> Job:
        return self.shards[shard_of(job_id)].setdefault(job_id, job)

    def pop(self, job_id: bytes) -> Job | None:
        """The job removed, or None if it was not here."""
        return self.shards[shard_of(job_id)].pop(job_id, None)

    def __contains__(self, job_id: bytes) -> bool:
        return job_id in self.shards[shard_of(job_id)]

    def __getitem__(self, job_id: bytes) -> Job:
        return self.shards[shard_of(job_id)][job_id]

    def __setitem__(self, job_id: bytes, job: Job) -> None:
        self.shards[shard_of(job_id)][job_id] = job

    def __delitem__(self, job_id: bytes) -> None:
        del self.shards[shard_of(job_id)][job_id]

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

    def __iter__(self) -> Iterator[bytes]:
        return chain.from_iterable(self.shards)

    def keys(self) -> Iterator[bytes]:
        return chain.from_iterable(self.shards)

    def values(self) -> Iterator[Job]:
        return chain.from_iterable([shard.values() for shard in self.shards])

    def items(self) -> Iterator[tuple[bytes, Job]]:
        return chain.from_iterable([shard.items() for shard in self.shards])

    def clear(self) -> None:
        for shard in self.shards:
            shard.clear()
