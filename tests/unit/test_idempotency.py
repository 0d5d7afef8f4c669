"""Idempotent adds on a lone node (docs/lifecycle.md): ADDJOB ... IDEMPOTENCY
key answers the first job's ID within its TTL, live or gone; the key
travels in the job's policy record."""

import pytest

from tests.unit.conftest import is_error
from trisque.core.jobs import idempotency
from trisque.core.jobs import policy as policy_codec
from trisque.core.jobs.job import deserialize, serialize


def add(core, *opts, queue="q", body="x"):
    return core("ADDJOB", queue, body, 0, *opts)


def take(core, queue="q"):
    reply = core("GETJOB", "NOHANG", "FROM", queue)
    return None if reply is None else reply[0][1]


def test_same_key_same_id_one_job(core):
    first = add(core, "IDEMPOTENCY", "order-1", "TTL", 100)
    again = add(core, "IDEMPOTENCY", "order-1", "TTL", 100, body="other body")
    assert again == first
    assert core("QLEN", "q") == 1
    assert core.node.stats.deduplicated_adds == 1
    assert core.show(first)["body"] == b"x"
    assert core.show(first)["idempotency-key"] == b"order-1"
    # another key, another queue, or no key: new jobs
    assert add(core, "IDEMPOTENCY", "order-2") != first
    assert add(core, "IDEMPOTENCY", "order-1", queue="other") != first
    assert add(core) != first
    assert core("QLEN", "q") == 3


def test_plain_and_keyed_jobs_show(core):
    plain = add(core)
    assert core.job(plain)._rare is None
    assert len(core.show(plain)) == 15
    keyed = add(core, "IDEMPOTENCY", "k")
    info = core.show(keyed)
    assert len(info) == 16  # Disque's 15 and the key, no delivery fields
    assert "max-deliveries" not in info


def test_after_ack_a_tombstone_until_the_ttl_ends(core):
    first = add(core, "IDEMPOTENCY", "k", "TTL", 10)
    assert take(core) == first
    assert core("ACKJOB", first) == 1
    assert core.job(first) is None
    used = core.node.used_memory
    assert add(core, "IDEMPOTENCY", "k", "TTL", 10) == first  # completed: still the same
    assert core("QLEN", "q") == 0
    assert len(core.node.idempotency.gone) == 1
    core.advance(11)
    core.node.cron()
    assert len(core.node.idempotency.gone) == 0
    assert core.node.used_memory < used  # the tombstone's bytes given back
    fresh = add(core, "IDEMPOTENCY", "k", "TTL", 10)
    assert fresh != first


def test_deljob_leaves_a_tombstone_and_expiry_does_not(core):
    first = add(core, "IDEMPOTENCY", "a", "TTL", 5)
    assert core("DELJOB", first) == 1
    assert add(core, "IDEMPOTENCY", "a", "TTL", 5) == first
    other = add(core, "IDEMPOTENCY", "b", "TTL", 2)
    core.advance(3)  # expired: its key with it
    assert core.job(other) is None
    assert add(core, "IDEMPOTENCY", "b", "TTL", 2) != other


def test_dead_lettered_job_keeps_its_key_in_its_first_queue(core):
    first = add(core, "IDEMPOTENCY", "k", "RETRY", 60, "MAXDELIVERIES", 1)
    assert take(core) == first
    assert core("NACK", first) == 1
    assert core.show(first)["queue"] == b"q:dead"
    assert add(core, "IDEMPOTENCY", "k") == first
    assert core("QLEN", "q") == 0


def test_memory_counts_index_entries(core):
    add(core)  # (the queue's own bytes counted before)
    before = core.node.used_memory
    job_id = add(core, "IDEMPOTENCY", "x" * 100)
    job = core.job(job_id)
    assert core.node.used_memory - before == (
        job.memory() + idempotency.ENTRY_OVERHEAD + 1 + 100)


def test_bad_keys(core):
    assert is_error(add(core, "IDEMPOTENCY", ""), "ERR IDEMPOTENCY key")
    assert is_error(add(core, "IDEMPOTENCY", "k" * 1025), "ERR IDEMPOTENCY key")
    assert is_error(add(core, "IDEMPOTENCY"), "ERR syntax")
    assert core("QLEN", "q") == 0


def test_key_travels_in_the_record_and_old_policies_still_decode():
    policy = policy_codec.Policy(max_deliveries=3)
    old = policy_codec.encode(policy)  # no tag: the bytes of before
    policy.idempotency_key = b"k1"
    new = policy_codec.encode(policy)
    assert new.startswith(old) and len(new) == len(old) + 3 + 2
    assert policy_codec.decode(new).idempotency_key == b"k1"
    assert policy_codec.decode(old).idempotency_key == b""
    # an unknown tag (a newer node's) is skipped
    assert policy_codec.decode(new + b"\x09\x02\x00zz").idempotency_key == b"k1"
    with pytest.raises(ValueError):
        policy_codec.decode(new[:-1])


def test_serialized_job_carries_the_key(core):
    job_id = add(core, "IDEMPOTENCY", "k")
    job = core.job(job_id)
    copy, _ = deserialize(serialize(job, job.etime_ms))
    assert copy.policy.idempotency_key == b"k"


def test_concurrent_keys_keep_the_first_indexed():
    index = idempotency.IdempotencyIndex()
    assert index.add_live(b"q", b"k", b"A") > 0
    assert index.add_live(b"q", b"k", b"B") == 0
    assert index.find(b"q", b"k", 0) == b"A"
    assert index.remove_live(b"q", b"k", b"B") == 0  # not the indexed one
    assert index.find(b"q", b"k", 0) == b"A"
