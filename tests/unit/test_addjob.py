"""ADDJOB on a lone node: defaults, argument checks (Disque's exact error
texts), job ID format, replication level refusals, MAXLEN and PAUSED."""

import re

import pytest

from trisque.core.jobs.commands_jobs import _ADDJOB_OPTIONS, _addjob_option
from trisque.core.jobs.job import serialize

from tests.unit.conftest import NODE_ID, START, is_error

ID_RE = re.compile(rb"^D-aaaaaaaa-[A-Za-z0-9+/]{24}-[0-9a-f]{4}$")


def ttl_digits(job_id):
    return int(job_id[-4:], 16)


def test_defaults(core):
    job_id = core("ADDJOB", "q", "body", 0)
    assert ID_RE.match(job_id), job_id
    info = core.show(job_id)
    assert info["id"] == job_id
    assert info["queue"] == b"q"
    assert info["state"] == b"queued"
    assert info["repl"] == 1  # min(3, cluster size) on a lone node
    assert info["ttl"] == 86400
    assert info["delay"] == 0
    assert info["retry"] == 300  # TTL/10 capped at 300 s
    assert info["nacks"] == 0
    assert info["additional-deliveries"] == 0
    assert info["nodes-delivered"] == [NODE_ID.encode()]
    assert info["nodes-confirmed"] == []
    assert info["ctime"] == int(START * 1000) * 1000000
    assert info["body"] == b"body"
    # 24 h = 1440 min = 0x5a0, odd because the job has a RETRY
    assert job_id.endswith(b"-05a1")


@pytest.mark.parametrize("ttl,expected_retry", [
    (100, 10), (3000, 300), (5000, 300), (5, 1), (9, 1), (10, 1), (19, 1),
    (20, 2), (1, 1),
])
def test_default_retry_is_ttl_tenth_capped(core, ttl, expected_retry):
    job_id = core("ADDJOB", "q", "x", 0, "TTL", ttl)
    assert core.show(job_id)["retry"] == expected_retry
    assert core.show(job_id)["ttl"] == ttl


@pytest.mark.parametrize("args,digits", [
    (("TTL", 3600), 0x3D),  # 60 minutes, odd: has retry
    (("TTL", 3600, "RETRY", 0), 0x3C),  # even: at-most-once
    (("TTL", 59), 0x1),  # 0 minutes, odd
    (("TTL", 59, "RETRY", 0), 0x0),
    (("TTL", 120, "RETRY", 0, "REPLICATE", 1), 0x2),
    (("TTL", 61 * 60), 0x3D),  # 61 is odd already
    (("TTL", 61 * 60, "RETRY", 0), 0x3C),  # 61 -> even
    (("TTL", 65535 * 60 * 2), 0xFFFF),  # capped at 65535 minutes
    (("TTL", 65535 * 60 * 2, "RETRY", 0), 0xFFFE),
    (("RETRY", 5), 0x5A1),
])
def test_id_ttl_digits(core, args, digits):
    job_id = core("ADDJOB", "q", "x", 0, *args)
    assert ID_RE.match(job_id), job_id
    assert ttl_digits(job_id) == digits


def test_ids_unique_and_ctime_strictly_increasing(core):
    ids = [core("ADDJOB", "q", "x", 0) for _ in range(2000)]
    assert len(set(ids)) == 2000
    ctimes = [core.job(i).ctime for i in ids]
    assert ctimes == sorted(ctimes) and len(set(ctimes)) == 2000


def test_options_case_insensitive_and_last_wins(core):
    job_id = core("ADDJOB", "q", "x", 0, "ttl", 100, "TtL", 200, "retry", 7,
                  "delay", 3, "replicate", 1, "maxlen", 10, "async")
    info = core.show(job_id)
    assert (info["ttl"], info["retry"], info["delay"]) == (200, 7, 3)
    assert info["state"] == b"active"  # delayed


@pytest.mark.parametrize("name", [b"REPLICATE", b"TTL", b"RETRY", b"DELAY", b"MAXLEN",
                                  b"ASYNC", b"PRIORITY", b"MAXDELIVERIES", b"IDEMPOTENCY"])
def test_option_names_any_case(name):
    # capitals are compared one by one; other spellings go through upper()
    code = _addjob_option(name)
    assert code == _ADDJOB_OPTIONS[name] != 0
    assert _addjob_option(name.lower()) == _addjob_option(name.capitalize()) == code
    assert _addjob_option(name + b"X") == _addjob_option(name[:-1]) == 0


def test_binary_and_empty_body(core):
    body = bytes(range(256)) * 4 + b"\r\n*1\r\n$3\r\n"
    job_id = core("ADDJOB", "q", body, 0)
    assert core.show(job_id)["body"] == body
    job_id2 = core("ADDJOB", "", b"", 0)
    assert core.show(job_id2)["body"] == b""
    assert core.show(job_id2)["queue"] == b""
    [[q, jid, got]] = core("GETJOB", "NOHANG", "FROM", "q")
    assert (q, jid, got) == (b"q", job_id, body)


@pytest.mark.parametrize("args,error", [
    ((), "ERR wrong number of arguments for 'addjob' command"),
    (("q",), "ERR wrong number of arguments for 'addjob' command"),
    (("q", "b"), "ERR wrong number of arguments for 'addjob' command"),
    (("q", "b", "abc"), "ERR timeout is not an integer or out of range"),
    (("q", "b", "1.5"), "ERR timeout is not an integer or out of range"),
    (("q", "b", "99999999999999999999"), "ERR timeout is not an integer or out of range"),
    (("q", "b", "-1"), "ERR timeout is negative"),
    (("q", "b", 0, "REPLICATE", 0), "ERR REPLICATE must be between 1 and 65535"),
    (("q", "b", 0, "REPLICATE", 65536), "ERR REPLICATE must be between 1 and 65535"),
    (("q", "b", 0, "REPLICATE", "x"), "ERR REPLICATE must be between 1 and 65535"),
    (("q", "b", 0, "TTL", 0), "ERR TTL must be a number > 0"),
    (("q", "b", 0, "TTL", -1), "ERR TTL must be a number > 0"),
    (("q", "b", 0, "TTL", "x"), "ERR TTL must be a number > 0"),
    (("q", "b", 0, "RETRY", -1), "ERR RETRY time must be a non negative number"),
    (("q", "b", 0, "RETRY", "x"), "ERR RETRY time must be a non negative number"),
    (("q", "b", 0, "DELAY", -1), "ERR DELAY time must be a non negative number"),
    (("q", "b", 0, "DELAY", "x"), "ERR DELAY time must be a non negative number"),
    (("q", "b", 0, "DELAY", 100, "TTL", 50),
     "ERR The specified DELAY is greater than TTL. Job refused since would never be delivered"),
    (("q", "b", 0, "DELAY", 50, "TTL", 50),
     "ERR The specified DELAY is greater than TTL. Job refused since would never be delivered"),
    (("q", "b", 0, "MAXLEN", 0), "ERR MAXLEN must be a positive number"),
    (("q", "b", 0, "MAXLEN", -1), "ERR MAXLEN must be a positive number"),
    (("q", "b", 0, "MAXLEN", "x"), "ERR MAXLEN must be a positive number"),
    (("q", "b", 0, "FOO"), "ERR syntax error"),
    (("q", "b", 0, "TTL"), "ERR syntax error"),
    (("q", "b", 0, "ASYNC", "DELAY"), "ERR syntax error"),
    (("q", "b", 0, "REPLICATE", 2),
     "NOREPL Not enough reachable nodes for the requested replication level"),
    (("q", "b", 0, "REPLICATE", 3, "ASYNC"),
     "NOREPL Not enough reachable nodes for the requested replication level"),
    (("q", "b", 0, "REPLICATE", 2, "RETRY", 0),
     "ERR With RETRY set to 0 please explicitly set  REPLICATE to 1 (at-most-once delivery)"),
])
def test_argument_errors(core, args, error):
    reply = core("ADDJOB", *args)
    assert is_error(reply), reply
    assert str(reply) == error
    assert core("INFO", "jobs").count(b"registered_jobs:0") == 1
    assert not core.node.jobs


def test_retry_zero_allowed_on_lone_node(core):
    # REPLICATE defaults to 1 here, so RETRY 0 is not refused.
    job_id = core("ADDJOB", "q", "x", 0, "RETRY", 0)
    assert core.show(job_id)["retry"] == 0
    assert core.show(job_id)["next-requeue-within"] is None


def test_maxlen(core):
    for _ in range(3):
        assert not is_error(core("ADDJOB", "q", "x", 0, "MAXLEN", 3))
    reply = core("ADDJOB", "q", "x", 0, "MAXLEN", 3)
    assert str(reply) == "MAXLEN Queue is already longer than the specified MAXLEN count"
    assert core("QLEN", "q") == 3
    assert not is_error(core("ADDJOB", "q", "x", 0, "MAXLEN", 4))
    assert not is_error(core("ADDJOB", "other", "x", 0, "MAXLEN", 1))


def test_paused_in_refuses_addjob(core):
    assert core("PAUSE", "q", "in") == b"in"
    reply = core("ADDJOB", "q", "x", 0)
    assert str(reply) == "PAUSED Queue paused in input, try later"
    assert core("PAUSE", "q", "out") == b"out"
    assert not is_error(core("ADDJOB", "q", "x", 0))
    assert core("PAUSE", "q", "all") == b"all"
    assert is_error(core("ADDJOB", "q", "x", 0), "PAUSED")
    assert core("PAUSE", "q", "none") == b"none"
    assert not is_error(core("ADDJOB", "q", "x", 0))
    assert core("QLEN", "q") == 2


def test_async_on_lone_node_is_immediate(core):
    job_id = core("ADDJOB", "q", "x", 0, "ASYNC")
    assert ID_RE.match(job_id)
    assert core("QLEN", "q") == 1


def test_timeout_is_irrelevant_on_lone_node(core):
    job_id = core("ADDJOB", "q", "x", 5000, "REPLICATE", 1)
    assert ID_RE.match(job_id)


def test_huge_values_do_not_break_the_node(core):
    # Disque stores these in 32-bit fields and wraps; we keep them as given
    # but must neither crash nor refuse them.
    for opt in ("TTL", "RETRY"):
        reply = core("ADDJOB", "q", "x", 0, opt, 2**40)
        assert not is_error(reply), reply
        job = core.job(reply)
        serialize(job, job.etime_ms)  # fits the bus/AOF record
    reply = core("ADDJOB", "q", "x", 0, "DELAY", 2**40)
    assert str(reply).startswith("ERR The specified DELAY is greater than TTL")
    core.advance(10)
    assert core("QLEN", "q") == 2
