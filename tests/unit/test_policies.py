"""Delivery policies on a lone node (docs/lifecycle.md): MAXDELIVERIES and
dead-letter queues, REVIVE, NACK DELAY and REASON, BACKOFF, QCONFIG."""

import random

import pytest

from tests.unit.conftest import is_error
from trisque.core.jobs import policy as policy_codec
from trisque.core.jobs.job import deserialize, serialize
from trisque.protocol import jobcodec


def add(core, *opts, queue="q", body="x"):
    return core("ADDJOB", queue, body, 0, *opts)


def take(core, queue="q"):
    reply = core("GETJOB", "NOHANG", "FROM", queue)
    return None if reply is None else reply[0][1]


def test_plain_jobs_carry_no_policy(core):
    job_id = add(core, "RETRY", 5)
    assert core.job(job_id)._rare is None
    assert len(core.show(job_id)) == 15
    job_id = take(core)
    assert core("NACK", job_id) == 1
    assert core.job(job_id).policy is None
    assert len(core.show(job_id)) == 15


def test_nack_past_the_limit_moves_the_job_to_its_dead_letter_queue(core):
    job_id = add(core, "RETRY", 60, "MAXDELIVERIES", 3, "DEADLETTER", "dlq")
    for delivery in range(1, 4):
        assert take(core) == job_id
        assert core("NACK", job_id, "REASON", f"boom {delivery}") == 1
    assert core("QLEN", "q") == 0
    assert core("QLEN", "dlq") == 1
    info = core.show(job_id)
    assert info["queue"] == b"dlq"
    assert info["state"] == b"queued"
    assert info["nacks"] == 3
    assert info["max-deliveries"] == 3
    assert info["dead-from"] == b"q"
    assert info["last-error"] == b"boom 3"
    assert info["dead-letter"] == b"dlq"
    assert core.node.stats.dead_lettered_jobs == 1
    stat = dict(zip(*[iter(core("QSTAT", "q"))] * 2))
    assert stat[b"dead-lettered"] == 1
    # consumers of the dead-letter queue get it like any job
    assert take(core, "dlq") == job_id
    assert core("NACK", job_id) == 1  # a dead job is not limited again
    assert core("QLEN", "dlq") == 1


def test_retry_expiry_counts_too_and_the_default_dead_letter_queue(core):
    job_id = add(core, "RETRY", 1, "MAXDELIVERIES", 2)
    assert take(core) == job_id
    core.advance(2)  # requeued by RETRY: an additional delivery
    assert core.show(job_id)["additional-deliveries"] == 1
    assert take(core) == job_id
    core.advance(2)  # the second delivery failed too: dead
    assert core("QLEN", "q") == 0
    assert core("QLEN", "q:dead") == 1
    assert core.show(job_id)["additional-deliveries"] == 2


def test_revive_puts_it_back_with_counters_reset(core):
    job_id = add(core, "RETRY", 60, "MAXDELIVERIES", 1)
    assert take(core) == job_id
    assert core("NACK", job_id) == 1
    assert core.show(job_id)["queue"] == b"q:dead"
    assert core("REVIVE", job_id) == 1
    info = core.show(job_id)
    assert (info["queue"], info["state"], info["nacks"], info["dead-from"]) == (
        b"q", b"queued", 0, None)
    assert core("REVIVE", job_id) == 0  # not dead any more
    assert take(core) == job_id
    assert core("NACK", job_id) == 1  # its limit holds again
    assert core.show(job_id)["queue"] == b"q:dead"
    assert is_error(core("REVIVE", "foo"), "BADID")


def test_nack_delay_requeues_later_and_counts_a_nack(core):
    job_id = add(core, "RETRY", 60)
    assert take(core) == job_id
    assert core("NACK", job_id, "DELAY", 5) == 1
    assert core("QLEN", "q") == 0
    assert core.show(job_id)["nacks"] == 0
    core.advance(4)
    assert core("QLEN", "q") == 0
    core.advance(1.1)
    assert core("QLEN", "q") == 1
    assert core.show(job_id)["nacks"] == 1
    assert core.node.stats.requeues_postponed == 1


def test_nack_delay_of_an_at_most_once_job_does_nothing(core):
    job_id = add(core, "RETRY", 0)
    assert take(core) == job_id
    assert core("NACK", job_id, "DELAY", 1) == 0  # as NACK: never delivered again
    core.advance(3)
    assert core("QLEN", "q") == 0 and core.show(job_id)["state"] == b"active"


@pytest.mark.parametrize("args, error", [
    (["DELAY"], "ERR syntax error"),
    (["DELAY", "-1"], "ERR DELAY time must be a non negative number"),
    (["DELAY", "x"], "ERR DELAY time must be a non negative number"),
    (["REASON", "r", "foo", "bar"], "BADID"),
])
def test_nack_option_errors(core, args, error):
    job_id = add(core, "RETRY", 60)
    take(core)
    reply = core("NACK", job_id, *args)
    if args == ["DELAY"]:
        # a lone DELAY is an ID, as before these options: a bad one
        assert is_error(reply, "BADID")
    else:
        assert is_error(reply, error)
    assert core.show(job_id)["state"] == b"active"


def test_nack_dead_moves_the_job_to_its_dead_letter_queue_now(core):
    limited = add(core, "RETRY", 60, "MAXDELIVERIES", 5, "DEADLETTER", "dlq")
    plain = add(core, "RETRY", 60)
    assert {take(core), take(core)} == {limited, plain}
    assert core("NACK", limited, plain, "REASON", "corrupt", "DEAD") == 2
    assert core("QLEN", "q") == 0
    assert core("QLEN", "dlq") == 1 and core("QLEN", "q:dead") == 1
    for job_id, dlq in ((limited, b"dlq"), (plain, b"q:dead")):
        info = core.show(job_id)
        assert info["queue"] == dlq and info["dead-from"] == b"q"
        assert info["nacks"] == 1 and info["last-error"] == b"corrupt"
        assert info["state"] == b"queued"
    assert core.node.stats.dead_lettered_jobs == 2
    # dead already, unknown, or at-most-once: not counted
    assert take(core, "dlq") == limited
    assert core("NACK", limited, "DEAD") == 0
    once = add(core, "RETRY", 0, queue="o")
    assert take(core, "o") == once
    assert core("NACK", once, "DEAD") == 0
    assert core.show(once)["state"] == b"active" and core("QLEN", "o:dead") == 0
    # a queue's QCONFIG dead-letter queue is where a plain job goes
    core("QCONFIG", "p", "SET", "DEADLETTER", "p-failed")
    job_id = add(core, queue="p", body="y")
    core("QCONFIG", "p", "SET", "DEADLETTER", "p-failed2")
    assert take(core, "p") == job_id
    assert core("NACK", job_id, "DEAD") == 1
    assert core.show(job_id)["queue"] == b"p-failed"


@pytest.mark.parametrize("args, error", [
    (["DEAD", "DELAY", "5"], "ERR DEAD and DELAY cannot be used together"),
    (["DEAD", "DEAD", "foo"], "BADID"),
    (["DEAD", "REASON"], "ERR syntax error"),
])
def test_nack_dead_errors(core, args, error):
    job_id = add(core, "RETRY", 60)
    take(core)
    assert is_error(core("NACK", job_id, *args), error)
    assert core.show(job_id)["state"] == b"active"


def test_nack_without_ids_but_options_is_badid_as_before(core):
    assert is_error(core("NACK", "DELAY", "5"), "BADID")


@pytest.mark.parametrize("kind, waits_s", [
    ("exponential", [1, 2, 4, 8, 8]),
    ("linear", [1, 2, 3, 4, 5]),
])
def test_backoff_waits_grow_with_jitter(kind, waits_s):
    policy = policy_codec.Policy(backoff=policy_codec.BACKOFF_LINEAR if kind == "linear"
                                 else policy_codec.BACKOFF_EXPONENTIAL,
                                 base_ms=1000, max_ms=8000 if kind == "exponential" else 60000)
    rng = random.Random(3)
    for attempt, wait_s in enumerate(waits_s, 1):
        assert policy.backoff_ms(attempt, 0.0) == wait_s * 500
        assert policy.backoff_ms(attempt, 0.999999) == wait_s * 1000 - 1 or wait_s * 1000
        drawn = policy.backoff_ms(attempt, rng.random())
        assert wait_s * 500 <= drawn <= wait_s * 1000


def test_backoff_postpones_requeues_after_nack_and_retry(core):
    job_id = add(core, "RETRY", 2, "BACKOFF", "exponential", 10, 100)
    assert take(core) == job_id
    assert core("NACK", job_id) == 1
    assert core("QLEN", "q") == 0  # waits 5-10 s first
    core.advance(4.9)
    assert core("QLEN", "q") == 0
    core.advance(5.2)
    assert core("QLEN", "q") == 1
    assert core.show(job_id)["nacks"] == 1
    assert take(core) == job_id
    core.advance(2.5)  # RETRY expired: the second requeue waits 10-20 s
    assert core("QLEN", "q") == 0
    core.advance(9.5)
    assert core("QLEN", "q") == 0
    core.advance(11)
    assert core("QLEN", "q") == 1
    assert core.show(job_id)["additional-deliveries"] == 1
    assert core.show(job_id)["backoff"] == b"exponential 10 100"


@pytest.mark.parametrize("args", [
    ["MAXDELIVERIES", -1], ["MAXDELIVERIES", "x"], ["MAXDELIVERIES", 70000],
    ["DEADLETTER", ""], ["BACKOFF", "cubic", 1, 2], ["BACKOFF", "linear", 0, 2],
    ["BACKOFF", "linear", 5, 2], ["BACKOFF", "linear", 1],
])
def test_addjob_policy_errors(core, args):
    assert is_error(add(core, *args), "ERR")
    assert core("QLEN", "q") == 0


def test_qconfig_defaults_apply_to_new_jobs_only(core):
    old = add(core, "RETRY", 60)
    assert core("QCONFIG", "q", "GET") is None
    assert core("QCONFIG", "q", "SET", "MAXDELIVERIES", 2, "DEADLETTER", "graveyard") == b"OK"
    assert core("QCONFIG", "q", "SET", "BACKOFF", "linear", 1, 30) == b"OK"  # merged
    assert core("QCONFIG", "q", "GET") == [
        b"max-deliveries", 2, b"dead-letter", b"graveyard", b"backoff", b"linear 1 30"]
    new = add(core, "RETRY", 60)
    own = add(core, "RETRY", 60, "MAXDELIVERIES", 5)
    assert core.job(old).policy is None
    assert core.show(new)["max-deliveries"] == 2
    assert core.show(own)["max-deliveries"] == 5
    assert core.show(own)["dead-letter"] == b"graveyard"
    stat = dict(zip(*[iter(core("QSTAT", "q"))] * 2))
    assert stat[b"max-deliveries"] == 2 and stat[b"backoff"] == b"linear 1 30"
    assert core("QCONFIG", "q", "RESET") == b"OK"
    assert core("QCONFIG", "q", "GET") is None
    assert len(core("QSTAT", "q")) == 20  # Disque's 10 fields again
    assert core.job(add(core)).policy is None
    assert is_error(core("QCONFIG", "q", "SET"), "ERR syntax")
    assert is_error(core("QCONFIG", "q", "SET", "FOO", 1), "ERR syntax")


def test_qconfig_entries_are_counted_in_used_memory(core):
    """A queue's defaults take memory, and a reset entry (kept so an older
    setting cannot come back) keeps only its name and version."""
    node = core.node
    base = node.used_memory
    name = "q" * 1000
    assert core("QCONFIG", name, "SET", "MAXDELIVERIES", 3, "DEADLETTER", "d" * 500) == b"OK"
    set_bytes = node.used_memory - base
    assert set_bytes >= 1500
    assert core("QCONFIG", name, "RESET") == b"OK"
    reset_bytes = node.used_memory - base
    assert 1000 <= reset_bytes <= set_bytes - 500
    entry = node.queue_policies[name.encode()]
    assert entry.is_reset() and entry.policy is policy_codec.NO_POLICY  # none of its own
    assert core("QCONFIG", name, "SET", "MAXDELIVERIES", 3, "DEADLETTER", "d" * 500) == b"OK"
    assert node.used_memory - base == set_bytes  # no drift across changes
    assert core("QCONFIG", name, "SET", "MAXDELIVERIES", 0, "DEADLETTER", "") is not None
    assert core("QCONFIG", name, "RESET") == b"OK"
    assert node.used_memory - base == reset_bytes


def _policy(core, *argv):
    """The policy of the job that ``ADDJOB argv`` makes (None: a plain job)."""
    job_id = core("ADDJOB", *argv)
    assert isinstance(job_id, bytes), job_id
    return core.node.jobs[job_id].policy


def test_only_jobs_with_options_or_queue_defaults_have_a_policy(core):
    """A QCONFIG on one queue costs nothing to plain jobs of the others
    (nor of a queue whose defaults were reset)."""
    assert core("QCONFIG", "configured", "SET", "MAXDELIVERIES", 3) == b"OK"
    assert core("QCONFIG", "was-configured", "SET", "PRIORITY", 7) == b"OK"
    assert core("QCONFIG", "was-configured", "RESET") == b"OK"
    assert _policy(core, "plain", "x", 0) is None
    assert _policy(core, "was-configured", "x", 0) is None
    # and the jobs that have one get it
    assert _policy(core, "configured", "x", 0).max_deliveries == 3
    assert _policy(core, "plain", "x", 0, "PRIORITY", 7).priority == 7


def test_jobs_with_the_same_options_share_one_policy(core):
    """A policy that only holds settings is one object for every job that
    has them (policy.shared), not one per job."""
    first = _policy(core, "q", "x", 0, "MAXDELIVERIES", 5, "PRIORITY", 7)
    assert first is not None
    assert _policy(core, "q", "y", 0, "MAXDELIVERIES", 5, "PRIORITY", 7) is first
    assert _policy(core, "other", "z", 0, "PRIORITY", 7, "MAXDELIVERIES", 5) is first
    assert _policy(core, "q", "x", 0, "MAXDELIVERIES", 6, "PRIORITY", 7) is not first
    job_id = core("ADDJOB", "q", "x", 0, "MAXDELIVERIES", 5, "PRIORITY", 7)
    assert core.show(job_id)["max-deliveries"] == 5
    # with defaults, the job gets its own copy: the queue's stays as set
    assert core("QCONFIG", "q", "SET", "MAXDELIVERIES", 2, "DEADLETTER", "graves") == b"OK"
    job_id = core("ADDJOB", "q", "x", 0, "MAXDELIVERIES", 5)
    assert core.show(job_id)["max-deliveries"] == 5
    assert core.show(job_id)["dead-letter"] == b"graves"
    assert core("QCONFIG", "q", "GET")[:2] == [b"max-deliveries", 2]


def test_policy_travels_in_the_job_record():
    from trisque.core.jobs.job import Job
    job = Job(b"D-01234567-0123456789abcdefghijklmn-05a1", b"q", b"body", 1, 1,
              10**15, 10**6, 0, 30)
    job.nodes_delivered = ("b" * 40,)
    plain = serialize(job, 5)
    policy = policy_codec.Policy(3, b"dlq", policy_codec.BACKOFF_LINEAR, 1000, 5000)
    policy.last_error = b"oops"
    job.policy = policy
    record = serialize(job, 5)
    assert record.startswith(plain[:41])
    copy, end = deserialize(record)
    assert end == len(record) and copy.policy == policy
    # a node from before policies gets the plain record
    assert jobcodec.without_policy(record) == plain
    fields, end = jobcodec.decode(record + plain)
    assert fields[-1] == policy_codec.encode(policy) and fields[2] == 0
    with pytest.raises(ValueError):
        jobcodec.decode(record[:-1])
