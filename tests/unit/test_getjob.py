"""GETJOB: options, FROM, round robin, blocking, fairness, timeouts, PAUSE.
GETJOBS is another name of it: the tests marked ``both_names`` run with
each."""

import pytest

from tests.unit.conftest import is_error


def add(core, queue, body="x", *opts):
    return core("ADDJOB", queue, body, 0, *opts)


both_names = pytest.mark.parametrize("getjob", ["GETJOB", "GETJOBS"])


@both_names
@pytest.mark.parametrize("args,error", [
    ((), "ERR wrong number of arguments for '{name}' command"),
    (("FROM",), "ERR syntax error"),
    (("NOHANG",), "ERR syntax error"),
    (("NOHANG", "FROM"), "ERR syntax error"),
    (("TIMEOUT", "x", "FROM", "q"), "ERR timeout is not an integer or out of range"),
    (("TIMEOUT", "-1", "FROM", "q"), "ERR timeout is negative"),
    (("COUNT", "0", "FROM", "q"), "ERR COUNT must be a number greater than zero"),
    (("COUNT", "-1", "FROM", "q"), "ERR COUNT must be a number greater than zero"),
    (("COUNT", "x", "FROM", "q"), "ERR COUNT must be a number greater than zero"),
    (("FOO", "FROM", "q"), "ERR syntax error"),
    (("TIMEOUT",), "ERR syntax error"),
    (("COUNT",), "ERR syntax error"),
])
def test_argument_errors(core, getjob, args, error):
    add(core, "q")
    reply = core(getjob, *args)
    assert str(reply) == error.format(name=getjob.lower())
    assert core("QLEN", "q") == 1
    assert core.default.blocked is None


def test_getjob_makes_missing_queues(core):
    """As Disque: the queues a GETJOB names exist afterwards, empty (until
    idle queues are collected), whether it found jobs or not."""
    add(core, "full")
    assert core("QSTAT", "missing") is None
    assert len(core("GETJOB", "NOHANG", "COUNT", 5, "FROM", "full", "missing")) == 1
    stat = core("QSTAT", "missing")
    assert dict(zip(stat[::2], stat[1::2]))[b"len"] == 0
    assert sorted(core("QSCAN", "BUSYLOOP")[1]) == [b"full", b"missing"]


@both_names
def test_nohang_empty_is_null_array(core, getjob):
    assert core(getjob, "NOHANG", "FROM", "nope") is None
    assert core.node.execute(core.default, [getjob.encode(), b"NOHANG", b"FROM", b"q"]) is None
    assert core.default.out == [b"*-1\r\n"]
    core.default.out.clear()
    c3 = core.client(proto=3)  # RESP3: RESP3's null (a RESP3 parser may not read *-1)
    core.node.execute(c3, [getjob.encode(), b"NOHANG", b"FROM", b"q"])
    assert c3.out == [b"_\r\n"]
    maps = core.client(proto=3, disque_resp3=True)
    core.node.execute(maps, [getjob.encode(), b"NOHANG", b"FROM", b"q"])
    assert maps.out == [b"_\r\n"]


@both_names
def test_reply_shape_and_withcounters(core, getjob):
    job_id = add(core, "q", "body")
    assert core(getjob, "FROM", "q") == [[b"q", job_id, b"body"]]
    assert core("NACK", job_id) == 1
    reply = core(getjob, "WITHCOUNTERS", "FROM", "q")
    assert reply == [[b"q", job_id, b"body", b"nacks", 1,
                      b"additional-deliveries", 0]]


@both_names
def test_everything_after_from_is_a_queue_name(core, getjob):
    add(core, "COUNT", "in-count")
    add(core, "NOHANG", "in-nohang")
    reply = core(getjob, "NOHANG", "FROM", "x", "NOHANG", "COUNT")
    assert reply[0][0] == b"NOHANG"
    reply = core(getjob, "FROM", "COUNT", "5")
    assert reply[0][:1] == [b"COUNT"] and reply[0][2] == b"in-count"


@both_names
def test_count_round_robin_left_to_right(core, getjob):
    a = [add(core, "a", "a%d" % i) for i in range(3)]
    b = [add(core, "b", "b%d" % i) for i in range(1)]
    c = [add(core, "c", "c%d" % i) for i in range(2)]
    reply = core(getjob, "COUNT", 5, "FROM", "a", "b", "c", "empty")
    assert [j[1] for j in reply] == [a[0], b[0], c[0], a[1], c[1]]
    reply = core(getjob, "COUNT", 10, "FROM", "c", "a")
    assert [j[1] for j in reply] == [a[2]]


def test_count_larger_than_available(core):
    ids = [add(core, "q") for _ in range(3)]
    reply = core("GETJOB", "NOHANG", "COUNT", 100, "FROM", "q")
    assert [j[1] for j in reply] == ids


def test_fifo_by_creation_time_even_after_requeue(core):
    first = add(core, "q", "first", "RETRY", 1)
    second = add(core, "q", "second", "RETRY", 100)
    core.advance(0.5)
    [[_, got, _]] = core("GETJOB", "FROM", "q")
    assert got == first
    core.advance(1.5)  # first is requeued after RETRY 1
    assert core("QLEN", "q") == 2
    # it keeps its place: created before "second"
    assert [j[1] for j in core("QPEEK", "q", 10)] == [first, second]
    assert core("GETJOB", "FROM", "q")[0][1] == first


@both_names
def test_blocking_getjob_served_by_addjob(core, getjob):
    consumer = core.client()
    assert core(getjob, "FROM", "q", client=consumer) is None
    assert consumer.blocked is not None
    assert core("QSTAT", "q")[core("QSTAT", "q").index(b"blocked") + 1] == 1
    job_id = add(core, "q", "hello")
    assert core.replies(consumer) == [[[b"q", job_id, b"hello"]]]
    assert consumer.blocked is None
    assert core("QLEN", "q") == 0
    assert core.show(job_id)["state"] == b"active"


def test_blocking_on_several_queues(core):
    consumer = core.client()
    core("GETJOB", "TIMEOUT", 0, "FROM", "a", "b", "a", client=consumer)
    job_id = add(core, "b", "x")
    assert core.replies(consumer) == [[[b"b", job_id, b"x"]]]
    # no longer waiting on "a"
    add(core, "a", "y")
    assert core.replies(consumer) == []
    assert core("QLEN", "a") == 1
    assert not core.node.queues[b"a"].blocked


@both_names
def test_blocking_timeout_returns_null(core, getjob):
    consumer = core.client(proto=3)  # RESP3: RESP3's null, with or without the opt-in
    maps = core.client(proto=3, disque_resp3=True)
    core(getjob, "TIMEOUT", 1000, "FROM", "q", client=consumer)
    core(getjob, "TIMEOUT", 1500, "FROM", "q", client=maps)
    core.advance(0.999)
    assert consumer.out == [] and consumer.blocked is not None
    core.advance(0.001)
    assert consumer.out == [b"_\r\n"] and consumer.blocked is None
    assert maps.out == []
    core.advance(0.5)
    assert maps.out == [b"_\r\n"]
    assert not core.node.queues[b"q"].blocked
    # a job arriving later stays queued
    add(core, "q")
    assert core("QLEN", "q") == 1


def test_timeout_zero_blocks_forever(core):
    consumer = core.client()
    core("GETJOB", "FROM", "q", client=consumer)
    core.advance(7 * 86400)
    assert consumer.blocked is not None and consumer.out == []
    job_id = add(core, "q")
    assert core.replies(consumer)[0][0][1] == job_id


def test_fair_service_in_arrival_order(core):
    consumers = [core.client() for _ in range(5)]
    for c in consumers:
        core("GETJOB", "FROM", "q", client=c)
    ids = [add(core, "q", "job%d" % i) for i in range(5)]
    for c, job_id in zip(consumers, ids):
        assert core.replies(c) == [[[b"q", job_id, b"job%d" % ids.index(job_id)]]]


def test_fairness_with_one_job_at_a_time_and_rejoining(core):
    consumers = [core.client() for _ in range(3)]
    for c in consumers:
        core("GETJOB", "FROM", "q", client=c)
    order = []
    for i in range(9):
        add(core, "q", str(i))
        for n, c in enumerate(consumers):
            got = core.replies(c)
            if got:
                order.append(n)
                core("GETJOB", "FROM", "q", client=c)  # back in line
    assert order == [0, 1, 2] * 3


def test_blocked_getjob_with_count_gets_one_job(core):
    consumer = core.client()
    core("GETJOB", "COUNT", 5, "FROM", "q", client=consumer)
    add(core, "q")
    add(core, "q")
    assert len(core.replies(consumer)[0]) == 1
    assert core("QLEN", "q") == 1


def test_200_blocked_consumers_all_served(core):
    consumers = [core.client() for _ in range(200)]
    for c in consumers:
        core("GETJOB", "TIMEOUT", 60000, "FROM", "q", client=c)
    assert core.node.blocked_clients() == 200
    ids = [add(core, "q", str(i)) for i in range(200)]
    got = [core.replies(c)[0][0][1] for c in consumers]
    assert got == ids
    assert core.node.blocked_clients() == 0
    assert core("QLEN", "q") == 0


def test_disconnected_blocked_client_is_forgotten(core):
    gone = core.client()
    stays = core.client()
    core("GETJOB", "TIMEOUT", 500, "FROM", "q", client=gone)
    core("GETJOB", "FROM", "q", client=stays)
    core.node.remove_client(gone)
    job_id = add(core, "q")
    assert core.replies(stays)[0][0][1] == job_id
    core.advance(1)  # its timeout must not fire on a removed client
    assert gone.out == []


def test_paused_out_blocks_until_unpaused(core):
    add(core, "q", "x")
    assert core("PAUSE", "q", "out") == b"out"
    assert core("GETJOB", "NOHANG", "FROM", "q") is None
    consumer = core.client()
    core("GETJOB", "FROM", "q", client=consumer)
    assert consumer.blocked is not None and consumer.out == []
    job2 = add(core, "q", "y")  # paused out: still not served
    assert consumer.out == [] and core("QLEN", "q") == 2
    assert core("PAUSE", "q", "none") == b"none"
    [[[_, got, _]]] = core.replies(consumer)
    assert got != job2  # the oldest one
    assert core("QLEN", "q") == 1


def test_paused_all_then_in_only_serves_blocked(core):
    consumer = core.client()
    core("PAUSE", "q", "all")
    core("GETJOB", "FROM", "q", client=consumer)
    core("PAUSE", "q", "in")
    assert consumer.blocked is not None  # nothing to serve yet
    assert is_error(core("ADDJOB", "q", "x", 0), "PAUSED")
    core("PAUSE", "q", "none")
    add(core, "q")
    assert len(core.replies(consumer)) == 1


def test_delayed_job_not_delivered_before_delay(core):
    job_id = add(core, "q", "later", "DELAY", 5)
    assert core("QLEN", "q") == 0
    assert core.show(job_id)["state"] == b"active"
    assert core("GETJOB", "NOHANG", "FROM", "q") is None
    consumer = core.client()
    core("GETJOB", "FROM", "q", client=consumer)
    core.advance(4.9)
    assert consumer.out == []
    core.advance(0.2)
    assert core.replies(consumer) == [[[b"q", job_id, b"later"]]]
    assert core.show(job_id)["additional-deliveries"] == 0


def test_queue_counters(core):
    for _ in range(3):
        add(core, "q")
    core("GETJOB", "COUNT", 2, "FROM", "q")
    stat = core("QSTAT", "q")
    fields = dict(zip(stat[::2], stat[1::2]))
    assert fields[b"jobs-in"] == 3 and fields[b"jobs-out"] == 2
    assert fields[b"len"] == 1


def test_flushall_unblocks_getjob_with_null(core):
    consumer = core.client()
    c3 = core.client(proto=3)
    maps = core.client(proto=3, disque_resp3=True)
    core("GETJOB", "TIMEOUT", 5000, "FROM", "q", client=consumer)
    core("GETJOB", "FROM", "q", "r", client=c3)
    core("GETJOB", "FROM", "q", client=maps)
    add(core, "other")
    assert core("DEBUG", "FLUSHALL") == b"OK"
    assert consumer.out == [b"*-1\r\n"] and c3.out == [b"_\r\n"]
    assert maps.out == [b"_\r\n"]
    assert core.node.blocked_clients() == 0
    assert not core.node.queues and not core.node.jobs
    core.advance(10)  # the old timeout does not fire again
    assert consumer.out == [b"*-1\r\n"]


def test_idle_client_timeout(make_core):
    core = make_core(timeout=2)
    idle = core.client()
    busy = core.client()
    blocked = core.client()
    core("GETJOB", "FROM", "q", client=blocked)
    core.advance(1.5)
    busy.last_ms = core.node.now_ms()  # (the shell stamps it on each request)
    core.advance(1.0)
    core.cron()
    assert idle.killed and not busy.killed and not blocked.killed
    core.advance(30)
    core.cron()
    assert not blocked.killed  # blocked clients are never idle
    add(core, "q")
    assert len(core.replies(blocked)) == 1
    core.advance(1)
    core.cron()
    assert not blocked.killed  # served a moment ago


def test_timeout_zero_never_closes(core):
    idle = core.client()
    core.advance(100000)
    core.cron()
    assert not idle.killed
