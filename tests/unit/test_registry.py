"""The job registry (core/jobs/registry.py): a node's jobs spread over its
shards by their IDs' random characters, so the shards grow (and their
dicts double) at different counts; every dict operation the node uses
finds the job in its shard; and JSCAN still returns every job present for
the whole scan while jobs come and go between its calls, with the scan's
snapshot and without it; its cache of recent jobs never answers for a job
gone or replaced.  The set of IDs (the ack GC's tombstones) too."""

from trisque.core.jobs import scan as scan_module
from trisque.core.jobs.job import ACTIVE, Job
from trisque.core.jobs.registry import SHARDS, JobIdSet, JobRegistry, shard_of


def add(core, n, queue="q"):
    return [core("ADDJOB", queue, "body%d" % i, 0) for i in range(n)]


def full_jscan(core, count, between=None):
    cursor, seen = b"0", []
    while True:
        cursor, found = core("JSCAN", cursor, "COUNT", count)
        seen += found
        if between:
            between()
        if cursor == b"0":
            return seen


def test_jobs_spread_over_every_shard_and_cross_sizes_apart(core):
    ids = add(core, 40000)
    registry = core.node.jobs
    sizes = [len(shard) for shard in registry.shards]
    assert len(sizes) == SHARDS and sum(sizes) == len(registry) == 40000
    mean = 40000 / SHARDS
    assert min(sizes) > mean / 2 and max(sizes) < mean * 2
    # The job count at which each shard took its 86th job (past 2/3 of 128
    # slots: where a dict doubles): not the same count for all of them.
    taken = [0] * SHARDS
    crossed = []
    for n, job_id in enumerate(ids, 1):
        shard = shard_of(job_id)
        taken[shard] += 1
        if taken[shard] == 86:
            crossed.append(n)
    assert len(crossed) == SHARDS
    assert max(crossed) - min(crossed) > 4000  # spread over thousands of jobs
    assert len(set(crossed)) > SHARDS * 3 // 4


def test_dict_operations_find_each_job_in_its_shard(core):
    ids = add(core, 2000)
    registry = core.node.jobs
    jobs = [registry.get(job_id) for job_id in ids]
    assert all(job is not None and job.id == job_id for job, job_id in zip(jobs, ids))
    assert all(job_id in registry and registry[job_id] is job for job_id, job in zip(ids, jobs))
    assert list(registry) == list(registry.keys()) == [job.id for job in registry.values()]
    assert dict(registry.items()) == dict(zip(ids, jobs))
    assert set(registry) == set(ids)
    for job_id in ids[:1000]:
        assert core("DELJOB", job_id) == 1
    assert len(registry) == 1000 and registry
    assert registry.get(ids[0]) is None and ids[0] not in registry
    assert registry.pop(ids[0]) is None
    # IDs of another shape (a client's) are looked up, never raise
    for odd in (b"", b"x", ids[1000][:39], ids[1000] + b"x"):
        assert registry.get(odd) is None and odd not in registry
    assert core("SHOW", ids[1000])  # still there
    empty = JobRegistry()
    assert not empty and len(empty) == 0 and list(empty.values()) == []


def test_jscan_returns_every_survivor_while_jobs_come_and_go(core):
    ids = add(core, 5000)
    doomed = ids[::3]
    survivors = set(ids) - set(doomed)
    added = []

    def churn():
        for _ in range(10):
            if doomed:
                assert core("DELJOB", doomed.pop()) == 1
        added.extend(add(core, 7, queue="later"))  # into shards before and after the cursor

    seen = full_jscan(core, 40, churn)
    assert survivors <= set(seen)
    assert set(seen) <= set(ids) | set(added)


def test_jscan_without_its_snapshot_never_skips(core):
    ids = add(core, 5000)
    cursor, seen = core("JSCAN", 0, "COUNT", 100)
    assert int(cursor) >> 52  # a snapshot cursor
    # other scans push its snapshot out: the cursor is a position now
    for _ in range(scan_module.MAX_SNAPSHOTS + 1):
        assert int(core("JSCAN", 0, "COUNT", 10)[0]) >> 52
    doomed = set(ids[::4])
    for job_id in doomed:
        assert core("DELJOB", job_id) == 1
    while cursor != b"0":
        add(core, 20, queue="later")  # new jobs land in every shard, walked or not
        cursor, found = core("JSCAN", cursor, "COUNT", 100)
        assert int(cursor) >> 52 == 0
        seen += found
    assert set(ids) - doomed <= set(seen)


def test_id_set_counts_and_finds_ids_in_every_shard(core):
    ids = add(core, 3000)
    tombstones = JobIdSet()
    assert not tombstones and len(tombstones) == 0
    for job_id in ids + ids[:100]:  # (an ID added twice is one)
        tombstones.add(job_id)
    assert tombstones and len(tombstones) == 3000
    # spread over the shards: 3,000 random IDs leave a given one of 256 empty
    # with odds ~8e-6, so "every shard" failed ~0.2% of runs; 250 is sure
    assert sum(1 for shard in tombstones.shards if len(shard)) >= 250
    assert all(job_id in tombstones for job_id in ids) and b"x" not in tombstones
    for job_id in ids[:2000] + ids[:10]:  # (discarding one not there changes nothing)
        tombstones.discard(job_id)
    assert len(tombstones) == 1000 and sorted(tombstones) == sorted(ids[2000:])
    assert ids[0] not in tombstones and ids[2000] in tombstones
    for job_id in ids[2000:]:
        tombstones.discard(job_id)
    assert not tombstones and len(tombstones) == 0


def _job(job_id):
    return Job(job_id, b"q", b"body", ACTIVE, 1, 1, 0, 0, 0)


def _id(random):
    """An ID with these 24 random characters (protocol/jobid.py's layout)."""
    job_id = b"D-0123abcd-" + random + b"-0005"
    assert len(job_id) == 40
    return job_id


def test_recent_slots_never_answer_for_a_job_gone_or_replaced():
    # Three IDs in one slot of ``recent`` (the same characters 31 and 32)
    # and one shard (33 and 34); they differ before.
    a, b, c = (_id(bytes([letter]) * 20 + b"XYZW") for letter in b"abc")
    registry = JobRegistry()
    jobs = {job_id: _job(job_id) for job_id in (a, b, c)}
    for job_id in (a, b):
        assert registry.setdefault(job_id, jobs[job_id]) is jobs[job_id]
    # Each found by a fresh bytes object equal to its ID, whichever holds the slot.
    for _ in range(2):
        for job_id in (a, b, a, a, b):
            fresh = bytes(bytearray(job_id))
            assert registry.get(fresh) is jobs[job_id] and fresh in registry
            assert registry[fresh] is jobs[job_id]
        assert registry.get(bytes(bytearray(c))) is None and c not in registry
    # A duplicate ADD answers the job already there.
    assert registry.setdefault(bytes(bytearray(a)), _job(a)) is jobs[a]
    assert registry.get(a) is jobs[a]
    # Gone by pop or del: no longer found, whether it held the slot or not.
    assert registry.get(b) is jobs[b]  # (b holds the slot)
    assert registry.pop(bytes(bytearray(b))) is jobs[b]
    assert registry.get(b) is None and b not in registry and registry.pop(b) is None
    assert registry.get(a) is jobs[a]
    del registry[bytes(bytearray(a))]
    assert registry.get(a) is None and a not in registry
    # Replaced under its ID: the new job is the answer.
    registry[c] = jobs[c]
    assert registry.get(c) is jobs[c]
    other = _job(bytes(bytearray(c)))
    registry[bytes(bytearray(c))] = other
    assert registry.get(c) is other and registry[c] is other
    assert registry.setdefault(c, jobs[c]) is other
    registry.clear()
    assert registry.get(c) is None and c not in registry and not registry
    # IDs of another shape go to the dicts alone.
    odd = b"x" * 39
    registry[odd] = jobs[a]
    assert registry.get(odd) is jobs[a] and odd in registry
    assert registry.pop(odd) is jobs[a] and registry.get(odd) is None


def test_every_job_found_while_many_share_slots(core):
    # 20,000 jobs over 4,096 slots: most slots hold one of several IDs.
    ids = add(core, 20000)
    registry = core.node.jobs
    for _ in range(2):
        for job_id in ids:
            job = registry.get(bytes(bytearray(job_id)))
            assert job is not None and job.id == job_id
    for job_id in ids[::2]:
        assert core("ACKJOB", job_id) == 1
    for n, job_id in enumerate(ids):
        fresh = bytes(bytearray(job_id))
        assert (registry.get(fresh) is None) == (n % 2 == 0)
        assert (fresh in registry) == (n % 2 == 1)
