"""Every job and queue command against a real server, through redis-py over
RESP2 and RESP3 (``any_c``), with the reply shapes clients see: Disque's
on both (test_resp3_replies.py has the RESP3 opt-in)."""

import re
import time

import pytest
import redis

from tests.harness import wait_for
from tests.server.util import Raw

ID_RE = re.compile(rb"^D-[0-9a-f]{8}-[A-Za-z0-9+/]{24}-[0-9a-f]{4}$")
UNKNOWN = "D-12345678-aaaaaaaaaaaaaaaaaaaaaaaa-0001"


def as_dict(reply):
    """Disque's flat field/value array (on RESP3 connections too)."""
    assert isinstance(reply, list), reply
    return dict(zip(reply[::2], reply[1::2]))


def show(client, job_id):
    reply = client.execute_command("SHOW", job_id)
    return None if reply is None else as_dict(reply)


def add(client, queue="q", body="x", *opts):
    return client.execute_command("ADDJOB", queue, body, 0, *opts)


def test_addjob_show_getjob_ackjob(any_c):
    c = any_c
    job_id = add(c, "q", "hello", "TTL", 100, "RETRY", 10)
    assert ID_RE.match(job_id), job_id
    assert job_id.endswith(b"-0001")  # 1 minute, odd: has retry
    info = show(c, job_id)
    assert len(c.execute_command("SHOW", job_id)) == 30  # RESP2 and RESP3
    assert info[b"id"] == job_id and info[b"queue"] == b"q"
    assert info[b"state"] == b"queued" and info[b"repl"] == 1
    assert info[b"ttl"] == 100 and info[b"retry"] == 10
    assert info[b"body"] == b"hello"
    assert c.execute_command("QLEN", "q") == 1
    [[queue, got_id, body]] = c.execute_command("GETJOB", "FROM", "q")
    assert (queue, got_id, body) == (b"q", job_id, b"hello")
    assert show(c, job_id)[b"state"] == b"active"
    assert c.execute_command("ACKJOB", job_id) == 1
    assert show(c, job_id) is None
    assert c.info("jobs")["registered_jobs"] == 0


@pytest.mark.parametrize("getjob", ["GETJOB", "GETJOBS"])
def test_getjob_nohang_empty_is_nil(any_c, getjob):
    assert any_c.execute_command(getjob, "NOHANG", "FROM", "q") is None
    assert any_c.execute_command("QSTAT", "nope") is None
    assert any_c.execute_command("SHOW", UNKNOWN) is None


@pytest.mark.parametrize("getjob", ["GETJOB", "GETJOBS"])
def test_getjob_withcounters_and_count(any_c, getjob):
    c = any_c
    ids = [add(c, "a", "a%d" % i) for i in range(3)] + [add(c, "b", "b0")]
    assert c.execute_command("NACK", ids[0]) == 0  # queued
    reply = c.execute_command(getjob, "COUNT", 10, "WITHCOUNTERS", "FROM", "a", "b")
    assert [j[1] for j in reply] == [ids[0], ids[3], ids[1], ids[2]]
    assert reply[0][3:] == [b"nacks", 0, b"additional-deliveries", 0]
    assert c.execute_command("NACK", ids[0]) == 1
    assert c.execute_command("ENQUEUE", ids[1]) == 1
    reply = c.execute_command(getjob, "COUNT", 2, "WITHCOUNTERS", "FROM", "a")
    assert reply[0][1] == ids[0] and reply[0][4] == 1 and reply[0][6] == 0
    assert reply[1][1] == ids[1] and reply[1][4] == 0 and reply[1][6] == 1


def test_everything_after_from_is_a_queue(any_c):
    add(any_c, "TIMEOUT", "t")
    [[queue, _, body]] = any_c.execute_command("GETJOB", "NOHANG", "FROM", "x", "TIMEOUT")
    assert (queue, body) == (b"TIMEOUT", b"t")


def test_multi_id_commands(any_c):
    c = any_c
    a, b, d = add(c), add(c), add(c, "q", "x", "DELAY", 100)
    for cmd in ("ACKJOB", "FASTACK", "NACK", "ENQUEUE", "DEQUEUE", "DELJOB"):
        assert c.execute_command(cmd) == 0
        with pytest.raises(redis.ResponseError, match="^BADID Invalid Job ID format"):
            c.execute_command(cmd, a, "bad")
    assert c.execute_command("DEQUEUE", a, b) == 2
    assert c.execute_command("QLEN", "q") == 0
    assert c.execute_command("ENQUEUE", a, d, UNKNOWN) == 2
    assert [j[1] for j in c.execute_command("QPEEK", "q", 10)] == [a, d]
    assert [j[1] for j in c.execute_command("QPEEK", "q", -10)] == [d, a]
    assert c.execute_command("DELJOB", a) == 1
    assert c.execute_command("FASTACK", d, b) == 2
    assert c.info("jobs")["registered_jobs"] == 0


def test_error_replies(any_c):
    c = any_c
    cases = [
        (("ADDJOB", "q", "x", 0, "REPLICATE", 2),
         "NOREPL Not enough reachable nodes for the requested replication level"),
        (("ADDJOB", "q", "x", 0, "TTL", 0), "TTL must be a number > 0"),
        (("ADDJOB", "q", "x", 0, "FOO"), "syntax error"),
        (("GETJOB", "COUNT", 0, "FROM", "q"), "COUNT must be a number greater than zero"),
        (("GETJOBS", "COUNT", 0, "FROM", "q"), "COUNT must be a number greater than zero"),
        (("GETJOBS", "FROM"), "syntax error"),
        (("GETJOBS",), "wrong number of arguments for 'getjobs' command"),
        (("WORKING", UNKNOWN), "NOJOB Job not known in the context of this node."),
        (("SHOW", "nope"), "BADID Invalid Job ID format."),
        (("QPEEK", "q", "x"), "value is not an integer or out of range"),
        (("JSCAN", "0", "STATE", "foo"), "Invalid job state name"),
        (("QSCAN", "x"), "invalid cursor or option name"),
        (("PAUSE", "q", "foo"), "syntax error"),
        (("LOADJOB", "x"), "LOADJOB is a special command only processed from AOF"),
    ]
    for args, message in cases:
        with pytest.raises(redis.ResponseError) as info:
            c.execute_command(*args)
        assert str(info.value) == message, args
    assert c.ping()


def test_error_prefixes_on_the_wire(shared):
    with Raw(shared.port) as raw:
        raw.call("DEBUG", "FLUSHALL")
        checks = [
            (("ADDJOB", "q", "x", 0, "REPLICATE", 3), "NOREPL "),
            (("WORKING", UNKNOWN), "NOJOB "),
            (("ACKJOB", "x"), "BADID "),
            (("ADDJOB", "q", "x", 0, "TTL", "x"), "ERR "),
        ]
        for args, prefix in checks:
            reply = raw.call(*args)
            assert str(reply).startswith(prefix), (args, reply)
        raw.call("PAUSE", "p", "in")
        assert str(raw.call("ADDJOB", "p", "x", 0)).startswith("PAUSED ")
        raw.call("ADDJOB", "m", "x", 0)
        assert str(raw.call("ADDJOB", "m", "x", 0, "MAXLEN", 1)).startswith("MAXLEN ")
        # ADDJOB answers with a status reply, not a bulk
        raw.send_command("ADDJOB", "q", "x", 0)
        line = raw.read_line()
        assert line.startswith(b"+D-") and len(line) == 43
        assert raw.call("WORKING", line[1:41]) == 300


def test_working(any_c):
    c = any_c
    job_id = add(c, "q", "x", "RETRY", 7)
    c.execute_command("GETJOB", "FROM", "q")
    assert c.execute_command("WORKING", job_id) == 7
    within = show(c, job_id)[b"next-requeue-within"]
    assert 6000 <= within <= 7300


def test_working_toolate(c):
    job_id = add(c, "q", "x", "TTL", 2)
    time.sleep(1.05)
    with pytest.raises(redis.ResponseError, match="^TOOLATE Half of job TTL already elapsed"):
        c.execute_command("WORKING", job_id)


def test_qstat_and_pause(any_c):
    c = any_c
    add(c, "q")
    stat = as_dict(c.execute_command("QSTAT", "q"))
    assert stat[b"name"] == b"q" and stat[b"len"] == 1 and stat[b"pause"] == b"none"
    assert stat[b"import-from"] == [] and stat[b"jobs-in"] == 1
    assert c.execute_command("PAUSE", "q", "in", "out") == b"all"
    assert c.execute_command("PAUSE", "q", "state") == b"all"
    assert as_dict(c.execute_command("QSTAT", "q"))[b"pause"] == b"all"
    with pytest.raises(redis.ResponseError, match="^PAUSED Queue paused in input"):
        add(c, "q")
    assert c.execute_command("GETJOB", "NOHANG", "FROM", "q") is None
    assert c.execute_command("PAUSE", "q", "none") == b"none"
    assert len(c.execute_command("GETJOB", "NOHANG", "FROM", "q")) == 1


def test_qscan_jscan_loops(any_c):
    c = any_c
    ids = {add(c, "q%d" % (i % 20)) for i in range(300)}
    cursor, seen = 0, set()
    while True:
        cursor, items = c.execute_command("JSCAN", cursor, "COUNT", 17)
        seen.update(items)
        if cursor == b"0":
            break
    assert seen == ids
    cursor, queues = 0, set()
    while True:
        cursor, items = c.execute_command("QSCAN", cursor, "COUNT", 3, "MINLEN", 15)
        queues.update(items)
        if cursor == b"0":
            break
    assert queues == {b"q%d" % i for i in range(20)}
    cursor, items = c.execute_command("JSCAN", "BUSYLOOP", "QUEUE", "q3", "REPLY", "all")
    assert cursor == b"0" and len(items) == 15
    assert all(as_dict(i)[b"queue"] == b"q3" for i in items)


def test_jscan_over_the_registry_shards_with_jobs_deleted_and_added(c):
    # Enough jobs for every shard of the registry (core/jobs/registry.py);
    # between JSCAN calls some are deleted and new ones land in shards
    # already walked and not yet; halfway, 65 other scans push this one's
    # snapshot out, so it goes on by position.  Every job present for the
    # whole scan comes back.
    pipe = c.pipeline(transaction=False)
    for i in range(4000):
        pipe.execute_command("ADDJOB", "q", "j%d" % i, 0)
    ids = pipe.execute()
    doomed = ids[1::3]
    survivors = set(ids) - set(doomed)
    cursor, seen, calls = 0, set(), 0
    while True:
        cursor, items = c.execute_command("JSCAN", cursor, "COUNT", 60)
        seen.update(items)
        calls += 1
        if cursor == b"0":
            break
        if calls == 30:
            for _ in range(65):
                assert int(c.execute_command("JSCAN", 0, "COUNT", 10)[0]) >> 52
        for _ in range(20):
            if doomed:
                assert c.execute_command("DELJOB", doomed.pop()) == 1
        add(c, "later")
    assert calls > 60
    assert c.info("jobs")["registered_jobs"] == len(survivors) + calls - 1 + len(doomed)
    assert survivors <= seen


def test_delay_and_retry_with_real_time(c):
    delayed = add(c, "d", "x", "DELAY", 1)
    assert c.execute_command("QLEN", "d") == 0
    retried = add(c, "r", "y", "RETRY", 1)
    c.execute_command("GETJOB", "FROM", "r")
    wait_for(lambda: c.execute_command("QLEN", "d") == 1, timeout=5,
             message="delayed job queued")
    wait_for(lambda: c.execute_command("QLEN", "r") == 1, timeout=5,
             message="job requeued after RETRY")
    assert show(c, retried)[b"additional-deliveries"] == 1
    assert show(c, delayed)[b"additional-deliveries"] == 0


def test_ttl_expiry_with_real_time(c):
    job_id = add(c, "q", "x", "TTL", 1)
    wait_for(lambda: show(c, job_id) is None, timeout=5, message="job expired")
    assert c.execute_command("QLEN", "q") == 0
    assert c.info("stats")["expired_jobs"] >= 1


def test_jobs_survive_many_clients(shared):
    clients = [shared.client() for _ in range(20)]
    try:
        ids = [cl.execute_command("ADDJOB", "many", "x%d" % i, 0)
               for i, cl in enumerate(clients)]
        got = clients[0].execute_command("GETJOB", "COUNT", 100, "FROM", "many")
        assert [j[1] for j in got] == ids  # FIFO across clients
    finally:
        for cl in clients:
            cl.close()
