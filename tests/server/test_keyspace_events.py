"""Keyspace notifications on a real node beyond what the differential
test (test_keyspace_events_vs_redis.py) can compare at once: expired
events from the cron and from a lookup, "new" before a command's own
event, and silence with the option empty."""

import time

import pytest

from tests.harness import wait_for


def _messages(pubsub, count, timeout=10):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        assert time.monotonic() < deadline, f"only {got}"
        msg = pubsub.get_message(timeout=0.2)
        if msg is not None and msg["type"] == "pmessage":
            got.append((msg["channel"], msg["data"]))
    return got


@pytest.fixture
def events(shared, c):
    sub = shared.client().pubsub()
    sub.psubscribe("__key*")
    assert sub.get_message(timeout=5)["type"] == "psubscribe"
    yield sub
    c.config_set("notify-keyspace-events", "")
    sub.close()


def test_expired_by_the_cron_and_by_a_lookup(c, events):
    c.config_set("notify-keyspace-events", "Ex")
    c.set("cron", "v", px=50)
    assert _messages(events, 1) == [(b"__keyevent@0__:expired", b"cron")]
    c.config_set("hz", 1)  # the cron comes rarely: the GET finds it first
    try:
        c.set("lazy", "v", px=30)
        time.sleep(0.05)
        assert c.get("lazy") is None
        assert _messages(events, 1) == [(b"__keyevent@0__:expired", b"lazy")]
    finally:
        c.config_set("hz", 10)


def test_new_comes_before_the_command_event(c, events):
    c.config_set("notify-keyspace-events", "KEA" + "n")
    c.rpush("l", "x")
    assert _messages(events, 4) == [
        (b"__keyspace@0__:l", b"new"), (b"__keyevent@0__:new", b"l"),
        (b"__keyspace@0__:l", b"rpush"), (b"__keyevent@0__:rpush", b"l")]
    c.rpop("l")
    assert _messages(events, 4) == [
        (b"__keyspace@0__:l", b"rpop"), (b"__keyevent@0__:rpop", b"l"),
        (b"__keyspace@0__:l", b"del"), (b"__keyevent@0__:del", b"l")]


def test_nothing_when_empty(c, events):
    c.config_set("notify-keyspace-events", "")
    c.set("quiet", "v")
    c.config_set("notify-keyspace-events", "E$")
    c.set("loud", "v")
    assert _messages(events, 1) == [(b"__keyevent@0__:set", b"loud")]
    assert c.config_get("notify-keyspace-events") == {"notify-keyspace-events": "$E"}
    wait_for(lambda: events.get_message(timeout=0.1) is None, message="nothing more")
