"""A job's life on a lone node: ack, fast ack, nack, working, enqueue,
dequeue, deljob, show, retry requeue, TTL expiry, idle queue eviction."""

import pytest

from tests.unit.conftest import is_error

UNKNOWN = "D-12345678-aaaaaaaaaaaaaaaaaaaaaaaa-0001"


def add(core, queue="q", body="x", *opts):
    return core("ADDJOB", queue, body, 0, *opts)


def registered(core):
    return len(core.node.jobs)


# --------------------------------------------------------------- bad IDs

@pytest.mark.parametrize("command", ["ACKJOB", "FASTACK", "NACK", "ENQUEUE",
                                     "DEQUEUE", "DELJOB"])
def test_multi_id_commands_without_ids_return_zero(core, command):
    assert core(command) == 0


@pytest.mark.parametrize("command", ["ACKJOB", "FASTACK", "NACK", "ENQUEUE",
                                     "DEQUEUE", "DELJOB", "WORKING", "SHOW"])
@pytest.mark.parametrize("bad", [
    "foo", "", UNKNOWN[:-1], UNKNOWN + "0",
    "X" + UNKNOWN[1:],  # no D
    UNKNOWN[:10] + "+" + UNKNOWN[11:],  # no '-' at offset 10
    UNKNOWN[:35] + "+" + UNKNOWN[36:],  # no '-' at offset 35
])
def test_bad_ids(core, command, bad):
    job_id = add(core)
    args = [bad] if command in ("WORKING", "SHOW") else [job_id, bad]
    reply = core(command, *args)
    assert str(reply) == "BADID Invalid Job ID format."
    # nothing was acted on, even the valid ID before the bad one
    assert core.show(job_id)["state"] == b"queued"
    assert core("QLEN", "q") == 1


@pytest.mark.parametrize("command", ["ACKJOB", "FASTACK", "NACK", "ENQUEUE",
                                     "DEQUEUE", "DELJOB"])
def test_unknown_ids_count_zero(core, command):
    assert core(command, UNKNOWN, UNKNOWN[:-1] + "2") == 0


def test_show_and_working_unknown(core):
    assert core("SHOW", UNKNOWN) is None
    assert str(core("WORKING", UNKNOWN)) == "NOJOB Job not known in the context of this node."
    c3 = core.client(proto=3)
    core.node.execute(c3, [b"SHOW", UNKNOWN.encode()])
    assert c3.out == [b"_\r\n"]  # RESP3's null (a RESP3 parser may not read $-1)
    maps = core.client(proto=3, disque_resp3=True)
    core.node.execute(maps, [b"SHOW", UNKNOWN.encode()])
    assert maps.out == [b"_\r\n"]


# ----------------------------------------------------------------- acks

def test_ackjob_frees_job_on_lone_node(core):
    a, b = add(core), add(core)
    core("GETJOB", "FROM", "q")
    assert core("ACKJOB", a, b, a, UNKNOWN) == 2
    assert registered(core) == 0
    assert core("QLEN", "q") == 0
    assert core.show(a) is None
    assert core("ACKJOB", a) == 0


def test_ackjob_of_queued_job_removes_it_from_queue(core):
    a = add(core)
    assert core("ACKJOB", a) == 1
    assert core("GETJOB", "NOHANG", "FROM", "q") is None


def test_fastack(core):
    a, b = add(core), add(core, "other")
    core("GETJOB", "FROM", "q")
    assert core("FASTACK", a, b, UNKNOWN) == 2
    assert registered(core) == 0
    assert core("QLEN", "other") == 0
    assert core("FASTACK", a) == 0


def test_deljob(core):
    a, b = add(core), add(core, "q", "y", "DELAY", 10)
    assert core("DELJOB", a, b, UNKNOWN) == 2
    assert registered(core) == 0 and core("QLEN", "q") == 0
    core.advance(20)  # b's delay timer must not resurrect it
    assert core("QLEN", "q") == 0
    assert len(core.node.deadlines) == 0


# ------------------------------------------------- nack, enqueue, dequeue

def test_nack_requeues_and_counts(core):
    a = add(core)
    assert core("NACK", a) == 0  # queued: nothing to do
    core("GETJOB", "FROM", "q")
    assert core("NACK", a, a) == 1
    info = core.show(a)
    assert info["state"] == b"queued" and info["nacks"] == 1
    assert info["additional-deliveries"] == 0
    core("GETJOB", "FROM", "q")
    core("NACK", a)
    assert core.show(a)["nacks"] == 2
    [[_, _, _, _, nacks, _, deliveries]] = core("GETJOB", "WITHCOUNTERS", "FROM", "q")
    assert (nacks, deliveries) == (2, 0)


def test_enqueue_counts_additional_delivery(core):
    a = add(core)
    assert core("ENQUEUE", a) == 0  # already queued
    core("GETJOB", "FROM", "q")
    assert core("ENQUEUE", a) == 1
    info = core.show(a)
    assert (info["state"], info["nacks"], info["additional-deliveries"]) == (b"queued", 0, 1)


def test_enqueue_delayed_job_now(core):
    a = add(core, "q", "x", "DELAY", 100)
    assert core("ENQUEUE", a) == 1
    assert core("QLEN", "q") == 1
    # first time queued: not a redelivery
    assert core.show(a)["additional-deliveries"] == 0


def test_enqueue_retry_zero_job(core):
    # ENQUEUE moves an active job to queued even with RETRY 0 if it was
    # never delivered; once delivered, never again (at most once).
    a = add(core, "q", "x", "RETRY", 0, "DELAY", 10)
    assert core("ENQUEUE", a) == 1
    core("GETJOB", "FROM", "q")
    assert core("ENQUEUE", a) == 0
    assert core("NACK", a) == 0
    assert core.show(a)["state"] == b"active"


def test_dequeue(core):
    a = add(core)
    assert core("DEQUEUE", a, a) == 1
    assert core("QLEN", "q") == 0
    assert core.show(a)["state"] == b"active"
    assert core("DEQUEUE", a) == 0
    assert core("ENQUEUE", a) == 1
    assert core("QLEN", "q") == 1


# --------------------------------------------------------------- working

def test_working_postpones_requeue(core):
    a = add(core, "q", "x", "RETRY", 10, "TTL", 100)
    core("GETJOB", "FROM", "q")
    core.advance(8)
    assert core("WORKING", a) == 10
    requeue_ms = core.show(a)["next-requeue-within"]
    assert 9700 <= requeue_ms <= 10300
    core.advance(9.7)
    assert core.show(a)["state"] == b"active"
    core.advance(0.6)
    assert core.show(a)["state"] == b"queued"


def test_working_on_queued_job_dequeues_it(core):
    a = add(core, "q", "x", "RETRY", 10)
    assert core("WORKING", a) == 10
    assert core("QLEN", "q") == 0
    assert core.show(a)["state"] == b"active"


def test_working_returns_retry_zero(core):
    a = add(core, "q", "x", "RETRY", 0)
    core("GETJOB", "FROM", "q")
    assert core("WORKING", a) == 0
    core.advance(1000)
    assert core.show(a)["state"] == b"active"  # never requeued


def test_working_toolate_past_half_ttl(core):
    a = add(core, "q", "x", "TTL", 100, "RETRY", 10)
    core("GETJOB", "FROM", "q")
    core.advance(49)
    assert core("WORKING", a) == 10
    core.advance(1.001)
    reply = core("WORKING", a)
    assert str(reply) == ("TOOLATE Half of job TTL already elapsed, you are no "
                          "longer allowed to postpone the next delivery.")


# ------------------------------------------------------ retry and expiry

def test_retry_requeue_counts_additional_deliveries(core):
    a = add(core, "q", "x", "RETRY", 2, "TTL", 60)
    for n in range(1, 4):
        core("GETJOB", "FROM", "q")
        assert core.show(a)["state"] == b"active"
        core.advance(1.9)
        assert core.show(a)["state"] == b"active"
        core.advance(0.2)
        info = core.show(a)
        assert info["state"] == b"queued"
        assert info["additional-deliveries"] == n
        assert info["nacks"] == 0


def test_retry_requeue_serves_blocked_consumer(core):
    a = add(core, "q", "x", "RETRY", 1)
    core("GETJOB", "FROM", "q")
    consumer = core.client()
    core("GETJOB", "FROM", "q", client=consumer)
    core.advance(1.1)
    assert core.replies(consumer)[0][0][1] == a


def test_retry_zero_never_requeued(core):
    a = add(core, "q", "x", "RETRY", 0, "TTL", 100)
    core("GETJOB", "FROM", "q")
    core.advance(99)
    assert core.show(a)["state"] == b"active"
    assert core("QLEN", "q") == 0


def test_requeue_postponed_while_paused_in(core):
    a = add(core, "q", "x", "RETRY", 2)
    core("GETJOB", "FROM", "q")
    core("PAUSE", "q", "in")
    core.advance(2.5)
    assert core.show(a)["state"] == b"active"
    core("PAUSE", "q", "none")
    core.advance(2.5)
    assert core.show(a)["state"] == b"queued"


def test_ttl_expiry_in_every_state(core):
    queued = add(core, "q", "x", "TTL", 10)
    active = add(core, "q", "y", "TTL", 10, "RETRY", 100)
    delayed = add(core, "d", "z", "TTL", 10, "DELAY", 9)
    core("DEQUEUE", active)
    core.advance(9.5)
    assert core.show(delayed)["state"] == b"queued"
    assert registered(core) == 3
    core.advance(0.6)
    for job_id in (queued, active, delayed):
        assert core.show(job_id) is None
    assert core("QLEN", "q") == 0 and core("QLEN", "d") == 0
    assert b"expired_jobs:3" in core("INFO", "stats")
    assert len(core.node.deadlines) == 0


def test_ttl_shown_counts_down(core):
    a = add(core, "q", "x", "TTL", 100)
    assert core.show(a)["ttl"] == 100
    core.advance(30.5)
    assert core.show(a)["ttl"] == 70
    assert core.show(a)["next-awake-within"] is not None


def test_show_requeue_fields(core):
    a = add(core, "q", "x", "RETRY", 10, "TTL", 100)
    info = core.show(a)
    assert 9000 <= info["next-requeue-within"] <= 10300  # queued jobs too
    core("GETJOB", "FROM", "q")
    info = core.show(a)
    assert info["next-requeue-within"] == 10000
    assert 9000 <= info["next-awake-within"] <= 10000
    core.advance(3)
    assert core.show(a)["next-requeue-within"] == 7000


def test_show_is_flat_in_resp3_and_a_map_on_request(core):
    a = add(core)
    c3 = core.client(proto=3)
    assert core("SHOW", a, client=c3) == core("SHOW", a)
    maps = core.client(proto=3, disque_resp3=True)
    info = core("SHOW", a, client=maps)
    assert isinstance(info, dict)
    assert list(info) == [b"id", b"queue", b"state", b"repl", b"ttl", b"ctime",
                          b"delay", b"retry", b"nacks", b"additional-deliveries",
                          b"nodes-delivered", b"nodes-confirmed",
                          b"next-requeue-within", b"next-awake-within", b"body"]
    flat = core("SHOW", a)
    assert len(flat) == 30 and flat[::2] == list(info)


# ------------------------------------------------------- idle queues

def test_idle_empty_queue_evicted_after_300s(core):
    add(core, "q")
    [[_, job_id, _]] = core("GETJOB", "FROM", "q")
    core("ACKJOB", job_id)
    core("QLEN", "never-created")
    assert set(core.node.queues) == {b"q"}
    core.advance(299)
    core.cron()
    assert b"q" in core.node.queues
    core.advance(1.5)
    core.cron()
    assert b"q" not in core.node.queues
    assert core("QSTAT", "q") is None
    assert b"registered_queues:0" in core("INFO", "queues")


def test_non_empty_blocked_or_paused_queues_are_kept(core):
    add(core, "full")
    core("PAUSE", "paused", "in")
    consumer = core.client()
    core("GETJOB", "FROM", "waited", client=consumer)
    core.advance(1000)
    core.cron()
    assert {b"full", b"paused", b"waited"} <= set(core.node.queues)


def test_access_refreshes_idle_time(core):
    add(core, "q")
    core("GETJOB", "FROM", "q")
    core.advance(200)
    a = add(core, "q")
    core("ACKJOB", a)
    core.advance(200)
    core.cron()
    assert b"q" in core.node.queues  # idle 200 s since last ADDJOB


def test_idle_eviction_faster_under_memory_pressure(make_core):
    core = make_core()
    add(core, "q")
    core("GETJOB", "FROM", "q")
    used = core.node.used_memory
    core.node.config.maxmemory = int(used / 0.8)  # level 1: above 75%
    core.advance(10.5)
    core.cron()
    assert b"q" not in core.node.queues


# ----------------------------------------------------------- memory

def test_used_memory_tracks_jobs_and_queues(core):
    base = core.node.used_memory
    ids = [add(core, "q", "x" * 1000) for _ in range(100)]
    grown = core.node.used_memory - base
    assert grown >= 100 * 1000
    core("ACKJOB", *ids)
    core.advance(301)
    core.cron()
    assert core.node.used_memory == base


def test_memory_levels_on_lone_node(make_core):
    core = make_core()
    used = core.node.used_memory
    core.node.config.maxmemory = int(used / 0.74)
    assert not is_error(add(core))
    core.node.config.maxmemory = int(core.node.used_memory / 0.76)
    reply = add(core)
    # above 75% Disque keeps no local copy, and alone it has nobody to
    # hand the job to
    assert str(reply) == (
        "NOREPL Not enough reachable nodes for the requested replication "
        "level, since I'm unable to hold a copy of the message for the "
        "following reason: I'm out of memory")
    core.node.config.maxmemory = core.node.used_memory
    reply = add(core)
    assert str(reply) == "OOM command not allowed when used memory > 'maxmemory'."
    # commands that free memory still work
    assert core("QLEN", "q") == 1
    job_id = core("GETJOB", "FROM", "q")[0][1]
    assert core("ACKJOB", job_id) == 1
    assert core.node.memory_level() < 3


def test_maxmemory_zero_means_no_limit(make_core):
    core = make_core(maxmemory=0)
    assert core.node.memory_level() == 0
    assert not is_error(add(core))
