"""LATENCY against a real node: what held it up, by event (Redis's
latency monitor), and LATENCY HISTOGRAM's calls by time per command."""

import re

import pytest
import redis

from tests.harness import wait_for


@pytest.fixture
def r(shared):
    client = shared.client()
    client.execute_command("LATENCY", "RESET")
    yield client
    client.config_set("latency-monitor-threshold", 0)
    client.close()


def test_off_by_default_records_nothing(r):
    r.execute_command("DEBUG", "SLEEP", "0.05")
    assert r.execute_command("LATENCY", "LATEST") == []
    assert b"off" in r.execute_command("LATENCY", "DOCTOR")


def test_a_slow_command_is_recorded(r):
    r.config_set("latency-monitor-threshold", 20)
    r.execute_command("DEBUG", "SLEEP", "0.05")
    r.execute_command("DEBUG", "SLEEP", "0.03")  # (likely the same second: one sample)
    (event, at, latest, worst), = r.execute_command("LATENCY", "LATEST")
    assert event == b"command" and worst >= 50 and 30 <= latest <= worst
    history = r.execute_command("LATENCY", "HISTORY", "command")
    assert 1 <= len(history) <= 2 and history[-1] == [at, latest]
    assert r.execute_command("LATENCY", "GRAPH", "command").startswith(b"command - high ")
    assert b"command:" in r.execute_command("LATENCY", "DOCTOR")
    assert r.execute_command("LATENCY", "RESET", "nosuch") == 0
    assert r.execute_command("LATENCY", "HISTORY", "nosuch") == []
    with pytest.raises(redis.ResponseError, match="No samples available for event 'nosuch'"):
        r.execute_command("LATENCY", "GRAPH", "nosuch")
    assert r.execute_command("LATENCY", "RESET") == 1
    assert r.execute_command("LATENCY", "LATEST") == []


def test_the_expiry_of_a_large_value_is_recorded(r):
    """Freeing a 300,000-member set when its key expires holds the cron up:
    "expire-cycle" and "cron" (Redis's unit/latency-monitor does the same
    with a million)."""
    r.config_set("latency-monitor-threshold", 1)
    r.eval("for i = 1, tonumber(ARGV[1]) do redis.call('SADD', KEYS[1], i) end",
           1, "big", 300_000)
    r.execute_command("LATENCY", "RESET")
    r.pexpire("big", 20)
    wait_for(lambda: r.dbsize() == 0, message="the key expired")
    wait_for(lambda: {row[0] for row in r.execute_command("LATENCY", "LATEST")}
             >= {b"expire-cycle", b"cron"}, message="expire-cycle and cron recorded")


def test_histogram_by_command_and_subcommand(r):
    r.config_resetstat()
    r.set("a", "b")
    r.set("c", "d")
    r.execute_command("CLIENT", "ID")
    histograms = _pairs(r.execute_command("LATENCY", "HISTOGRAM"))
    assert set(histograms) == {b"config|resetstat", b"set", b"client|id"}
    fields = _pairs(histograms[b"set"])
    assert fields[b"calls"] == 2
    bounds = _pairs(fields[b"histogram_usec"])
    assert list(bounds) == sorted(bounds) and bounds[max(bounds)] == 2
    assert list(_pairs(r.execute_command("LATENCY", "HISTOGRAM", "client"))) == [b"client|id"]
    assert list(_pairs(r.execute_command("LATENCY", "HISTOGRAM", "client|id", "blabla",
                                         "get"))) == [b"client|id"]
    assert r.execute_command("LATENCY", "HISTOGRAM", "blabla") == []


def test_histogram_over_resp3_is_maps(shared):
    client = shared.client(protocol=3)
    try:
        client.config_resetstat()
        client.set("a", "b")
        reply = client.execute_command("LATENCY", "HISTOGRAM", "set")
        assert reply[b"set"][b"calls"] == 1
        assert sum(1 for _ in reply[b"set"][b"histogram_usec"]) >= 1
    finally:
        client.close()


def test_bad_input_gets_errors_and_the_connection_stays(r):
    with pytest.raises(redis.ResponseError, match=re.escape("wrong number of arguments for 'latency|help'")):
        r.execute_command("LATENCY", "HELP", "xxx")
    with pytest.raises(redis.ResponseError, match="unknown subcommand 'NOSUCH'"):
        r.execute_command("LATENCY", "NOSUCH")
    with pytest.raises(redis.ResponseError):
        r.config_set("latency-monitor-threshold", -1)
    assert r.execute_command("LATENCY", "HELP")[0].startswith(b"LATENCY <subcommand>")
    assert r.ping()


def _pairs(flat):
    """A RESP2 map (a flat array) as a dict."""
    if isinstance(flat, dict):
        return flat
    return dict(zip(flat[::2], flat[1::2]))
