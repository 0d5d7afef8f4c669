"""Keyspace notifications stay on their node, as in Redis Cluster: a
subscriber on B hears PUBLISH from A (over the bus) but none of A's
keyspace events; it hears B's own."""

import time

from tests.harness import wait_for


def _next_message(pubsub, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        assert time.monotonic() < deadline, "no message"
        msg = pubsub.get_message(timeout=0.2)
        if msg is not None and msg["type"] in ("message", "pmessage"):
            return msg


def test_keyspace_events_are_node_local(cluster3):
    a, b = cluster3[0], cluster3[1]
    for node in (a, b):
        node.config_set("notify-keyspace-events", "KEA")
    on_b = b.pubsub()
    on_b.psubscribe("__key*")
    on_b.subscribe("sync")

    def heard():
        a.publish("sync", "probe")
        msg = on_b.get_message(timeout=0.2)
        return msg is not None and msg["type"] == "message"
    wait_for(heard, 10, message="B to hear A's PUBLISH over the bus")
    a.publish("sync", "before")
    while _next_message(on_b)["data"] != b"before":
        pass
    a.set("on-a", "1")
    a.lpush("list-on-a", "x")
    a.publish("sync", "after")  # reaches B after anything A sent before it
    msg = _next_message(on_b)
    assert (msg["channel"], msg["data"]) == (b"sync", b"after"), msg
    b.set("on-b", "1")
    msg = _next_message(on_b)
    assert (msg["channel"], msg["data"]) == (b"__keyspace@0__:on-b", b"set")
    for node in (a, b):
        node.config_set("notify-keyspace-events", "")
    on_b.close()
