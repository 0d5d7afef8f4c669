"""QLEN, QPEEK, QSTAT, PAUSE, QSCAN and JSCAN."""

import random

import pytest

from tests.unit.conftest import is_error


def add(core, queue="q", body="x", *opts):
    return core("ADDJOB", queue, body, 0, *opts)


def as_dict(flat):
    return dict(zip(flat[::2], flat[1::2]))


# ---------------------------------------------------------------- QLEN

def test_qlen(core):
    assert core("QLEN", "q") == 0
    for _ in range(3):
        add(core)
    assert core("QLEN", "q") == 3
    assert str(core("QLEN")) == "ERR wrong number of arguments for 'qlen' command"
    assert str(core("QLEN", "a", "b")) == "ERR wrong number of arguments for 'qlen' command"


# --------------------------------------------------------------- QPEEK

def test_qpeek(core):
    ids = [add(core, "q", "b%d" % i) for i in range(5)]
    assert core("QPEEK", "q", 2) == [[b"q", ids[0], b"b0"], [b"q", ids[1], b"b1"]]
    assert [j[1] for j in core("QPEEK", "q", -2)] == [ids[4], ids[3]]
    assert [j[1] for j in core("QPEEK", "q", 100)] == ids
    assert [j[1] for j in core("QPEEK", "q", -100)] == ids[::-1]
    assert [j[1] for j in core("QPEEK", "q", -5)] == ids[::-1]
    assert core("QPEEK", "q", 0) == []
    assert core("QPEEK", "nope", 3) == []
    assert core("QPEEK", "q", -(2**63)) and core("QPEEK", "q", 2**63 - 1)
    assert core("QLEN", "q") == 5  # peeking takes nothing


@pytest.mark.parametrize("count", ["x", "1.5", "", "9223372036854775808"])
def test_qpeek_bad_count(core, count):
    assert str(core("QPEEK", "q", count)) == "ERR value is not an integer or out of range"


# --------------------------------------------------------------- QSTAT

def test_qstat(core):
    assert core("QSTAT", "nope") is None
    add(core)
    add(core)
    core("GETJOB", "FROM", "q")
    consumer = core.client()
    core.advance(5)
    stat = core("QSTAT", "q")
    assert stat[::2] == [b"name", b"len", b"age", b"idle", b"blocked",
                         b"import-from", b"import-rate", b"jobs-in",
                         b"jobs-out", b"pause"]
    fields = as_dict(stat)
    assert fields == {b"name": b"q", b"len": 1, b"age": 5, b"idle": 5,
                      b"blocked": 0, b"import-from": [], b"import-rate": 0,
                      b"jobs-in": 2, b"jobs-out": 1, b"pause": b"none"}
    core("GETJOB", "COUNT", 2, "FROM", "q")
    core("GETJOB", "FROM", "q", client=consumer)
    core("PAUSE", "q", "out")
    fields = as_dict(core("QSTAT", "q"))
    assert fields[b"blocked"] == 1 and fields[b"idle"] == 0
    assert fields[b"pause"] == b"out"
    c3 = core.client(proto=3)  # RESP3 alone: Disque's flat array, RESP3's null
    assert core("QSTAT", "q", client=c3) == core("QSTAT", "q")
    assert core.node.execute(c3, [b"QSTAT", b"nope"]) is None
    assert c3.out.pop() == b"_\r\n"
    maps = core.client(proto=3, disque_resp3=True)
    stat3 = core("QSTAT", "q", client=maps)
    assert isinstance(stat3, dict) and stat3 == as_dict(core("QSTAT", "q"))
    assert core.node.execute(maps, [b"QSTAT", b"nope"]) is None
    assert maps.out.pop() == b"_\r\n"


# --------------------------------------------------------------- PAUSE

@pytest.mark.parametrize("args,state", [
    (("in",), b"in"), (("out",), b"out"), (("all",), b"all"),
    (("none",), b"none"), (("state",), b"none"), (("in", "out"), b"all"),
    (("all", "none"), b"none"), (("none", "in"), b"in"), (("IN", "State"), b"in"),
    (("bcast",), b"none"), (("out", "bcast"), b"out"),
])
def test_pause_states(core, args, state):
    assert core("PAUSE", "q", *args) == state
    assert core("PAUSE", "q", "state") == state


def test_pause_is_sticky_and_creates_queue(core):
    assert core("PAUSE", "q", "state") == b"none"
    assert b"q" not in core.node.queues  # no queue made just to ask
    assert core("PAUSE", "q", "none") == b"none"
    assert b"q" not in core.node.queues
    assert core("PAUSE", "q", "in") == b"in"
    assert b"q" in core.node.queues
    assert core("PAUSE", "q", "out") == b"out"  # replaces, not adds
    assert as_dict(core("QSTAT", "q"))[b"pause"] == b"out"


def test_pause_errors(core):
    assert str(core("PAUSE", "q", "foo")) == "ERR syntax error"
    assert str(core("PAUSE", "q", "in", "foo")) == "ERR syntax error"
    assert core("PAUSE", "q", "state") == b"none"  # the bad call changed nothing
    assert str(core("PAUSE", "q")) == "ERR wrong number of arguments for 'pause' command"


# --------------------------------------------------------------- QSCAN

def qscan_all(core, *opts):
    cursor, seen, calls = b"0", [], 0
    while True:
        cursor, items = core("QSCAN", cursor, *opts)
        seen += items
        calls += 1
        assert calls < 10000
        if cursor == b"0":
            return seen, calls


def test_qscan_returns_every_queue(core):
    names = {b"q%d" % i for i in range(250)}
    for name in names:
        add(core, name)
    seen, calls = qscan_all(core, "COUNT", 10)
    assert set(seen) == names and calls > 10
    seen, calls = qscan_all(core, "BUSYLOOP")
    assert set(seen) == names and len(seen) == 250 and calls == 1
    cursor, items = core("QSCAN")
    assert cursor != b"0" and len(items) == 100  # default COUNT


def test_qscan_filters(core):
    for i in range(10):
        for _ in range(i):
            add(core, "q%d" % i)
    core("PAUSE", "empty", "in")
    seen, _ = qscan_all(core, "MINLEN", 3, "MAXLEN", 5)
    assert sorted(seen) == [b"q3", b"q4", b"q5"]
    seen, _ = qscan_all(core, "MAXLEN", 0)
    assert seen == [b"empty"]
    seen, _ = qscan_all(core, "IMPORTRATE", 1)
    assert seen == []  # nothing is imported on a lone node
    seen, _ = qscan_all(core, "IMPORTRATE", 0, "COUNT", 1)
    assert len(seen) == 10
    # -1 is Disque's "no filter", given or not; -2 filters everything
    seen, _ = qscan_all(core, "MINLEN", -1, "MAXLEN", -1, "IMPORTRATE", -1)
    assert len(seen) == 10
    seen, _ = qscan_all(core, "MAXLEN", -2)
    assert seen == []


@pytest.mark.parametrize("args,error", [
    (("x",), "ERR invalid cursor or option name"),
    (("0", "FOO"), "ERR syntax error"),
    (("0", "0"), "ERR syntax error"),
    (("0", "COUNT", "x"), "ERR value is not an integer or out of range"),
    (("0", "MINLEN", "x"), "ERR value is not an integer or out of range"),
    (("0", "MAXLEN", "x"), "ERR value is not an integer or out of range"),
    (("0", "IMPORTRATE", "x"), "ERR value is not an integer or out of range"),
    ((" 1",), "ERR invalid cursor or option name"),
    (("18446744073709551616",), "ERR invalid cursor or option name"),
    # an option without its value is read as the cursor
    (("0", "COUNT"), "ERR syntax error"),
    (("MINLEN",), "ERR invalid cursor or option name"),
    (("0", "BUSYLOOP", "IMPORTRATE"), "ERR syntax error"),
    # the first bad argument is the one reported
    (("0", "MINLEN", "x", "1"), "ERR value is not an integer or out of range"),
    (("0", "1", "MINLEN", "x"), "ERR syntax error"),
])
def test_qscan_errors(core, args, error):
    assert str(core("QSCAN", *args)) == error


def test_qscan_count_zero_and_negative(core):
    for i in range(30):
        add(core, "q%d" % i)
    seen, calls = qscan_all(core, "COUNT", 0)
    assert len(set(seen)) == 30
    seen, calls = qscan_all(core, "COUNT", -1)
    assert len(set(seen)) == 30 and calls == 1


def test_qscan_with_deletions_in_between(make_core):
    core = make_core()
    rng = random.Random(7)
    names = [b"q%03d" % i for i in range(300)]
    for name in names:
        add(core, name, "x", "RETRY", 0)
    cursor, seen = b"0", set()
    deleted = set()
    while True:
        cursor, items = core("QSCAN", cursor, "COUNT", 7)
        seen.update(items)
        # empty and evict some queues, seen or not
        victims = rng.sample(sorted(set(names) - deleted), min(5, len(set(names) - deleted)))
        for name in victims:
            job_id = core("GETJOB", "NOHANG", "FROM", name)[0][1]
            core("ACKJOB", job_id)
            core.node.drop_queue(core.node.queues[name])
            deleted.add(name)
        if cursor == b"0":
            break
    survivors = set(names) - deleted
    assert survivors <= seen  # never skipped


# --------------------------------------------------------------- JSCAN

def jscan_all(core, *opts):
    cursor, seen, calls = b"0", [], 0
    while True:
        cursor, items = core("JSCAN", cursor, *opts)
        seen += items
        calls += 1
        assert calls < 100000
        if cursor == b"0":
            return seen, calls


def test_jscan_returns_every_job(core):
    ids = {add(core, "q%d" % (i % 7)) for i in range(1000)}
    seen, calls = jscan_all(core, "COUNT", 33)
    assert set(seen) == ids and calls >= 30
    seen, calls = jscan_all(core, "BUSYLOOP")
    assert set(seen) == ids and len(seen) == 1000 and calls == 1
    seen, calls = jscan_all(core)
    assert set(seen) == ids and calls == 10  # default COUNT 100


def test_jscan_ids_are_status_replies(core):
    job_id = add(core)
    core.node.execute(core.default, [b"JSCAN"])
    assert b"".join(core.default.out) == b"*2\r\n$1\r\n0\r\n*1\r\n+%s\r\n" % job_id
    core.default.out.clear()


def test_jscan_filters(core):
    queued = {add(core, "a") for _ in range(5)}
    active = set()
    for _ in range(3):
        job_id = add(core, "b")
        core("DEQUEUE", job_id)
        active.add(job_id)
    delayed = {add(core, "a", "x", "DELAY", 100) for _ in range(2)}
    assert set(jscan_all(core, "STATE", "queued")[0]) == queued
    assert set(jscan_all(core, "STATE", "active")[0]) == active | delayed
    assert set(jscan_all(core, "STATE", "active", "STATE", "queued")[0]) == queued | active | delayed
    assert set(jscan_all(core, "QUEUE", "b")[0]) == active
    assert set(jscan_all(core, "QUEUE", "a", "STATE", "active")[0]) == delayed
    assert jscan_all(core, "QUEUE", "nope", "BUSYLOOP")[0] == []
    assert jscan_all(core, "STATE", "acked")[0] == []
    assert jscan_all(core, "STATE", "wait-repl")[0] == []


def test_jscan_reply_all(core):
    job_id = add(core, "q", "body")
    cursor, [info] = core("JSCAN", "0", "REPLY", "all")
    assert cursor == b"0"
    assert info == core("SHOW", job_id)  # same 15 fields as SHOW
    assert as_dict(info)[b"id"] == job_id and len(info) == 30
    cursor, items = core("JSCAN", "REPLY", "id")
    assert items == [job_id]
    c3 = core.client(proto=3)
    assert core("JSCAN", "REPLY", "ALL", client=c3) == [b"0", [info]]
    maps = core.client(proto=3, disque_resp3=True)
    cursor, [info3] = core("JSCAN", "REPLY", "ALL", client=maps)
    assert isinstance(info3, dict) and info3 == as_dict(info)


@pytest.mark.parametrize("args,error", [
    (("x",), "ERR invalid cursor or option name"),
    (("0", "COUNT", "x"), "ERR value is not an integer or out of range"),
    (("0", "STATE", "foo"), "ERR Invalid job state name"),
    (("0", "REPLY", "foo"), "ERR Invalid REPLY type, try ID or ALL"),
    (("0", "QUEUE"), "ERR syntax error"),
    (("0", "0"), "ERR syntax error"),
    (("0", "FOO"), "ERR syntax error"),
    (("0", "REPLY"), "ERR syntax error"),
    (("STATE",), "ERR invalid cursor or option name"),
    (("COUNT",), "ERR invalid cursor or option name"),
    (("0", "STATE", "queued", "STATE"), "ERR syntax error"),
    (("0", "STATE", "foo", "1"), "ERR Invalid job state name"),
    (("0", "1", "REPLY", "foo"), "ERR syntax error"),
    (("0", "count", "x"), "ERR value is not an integer or out of range"),
])
def test_jscan_errors(core, args, error):
    assert str(core("JSCAN", *args)) == error


def test_jscan_negative_and_empty_cursor_accepted(core):
    job_id = add(core)
    reply = core("JSCAN", "-1")  # strtoul wraps it, as in Disque
    assert not is_error(reply)
    assert core("JSCAN", "") == [b"0", [job_id]]  # strtoul("") is 0
    assert core("QSCAN", "", "COUNT", 5) == [b"0", [b"q"]]


def test_jscan_with_deletions_and_additions_in_between(core):
    rng = random.Random(3)
    ids = [add(core, "q", str(i)) for i in range(500)]
    alive = set(ids)
    added = set()
    cursor, seen = b"0", set()
    while True:
        cursor, items = core("JSCAN", cursor, "COUNT", 13)
        seen.update(items)
        for job_id in rng.sample(sorted(alive), min(7, len(alive))):
            core(rng.choice(["ACKJOB", "DELJOB", "FASTACK"]), job_id)
            alive.discard(job_id)
        added.add(add(core, "q"))
        if cursor == b"0":
            break
    assert alive <= seen  # every job alive for the whole scan was returned
    assert not (seen - set(ids) - added)


def test_jscan_busyloop_with_count_returns_everything(core):
    ids = {add(core) for _ in range(300)}
    cursor, items = core("JSCAN", "COUNT", 5, "BUSYLOOP")
    assert cursor == b"0" and set(items) == ids
