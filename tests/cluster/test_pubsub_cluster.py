"""Pub/Sub across a cluster: as Redis Cluster does, a PUBLISH on any node
reaches the subscribers of every node (over the bus, PUBLISH frames), in
the order it was published; its reply counts the receivers of the node it
ran on.  A node that does not read PUBLISH frames (an older version) is not
sent them."""

import time

from tests.harness import wait_for


def _messages(pubsub, count, timeout=10):
    """The next ``count`` messages (not confirmations) of ``pubsub``."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        assert time.monotonic() < deadline, f"only {len(got)} of {count}: {got}"
        msg = pubsub.get_message(timeout=0.2)
        if msg is not None and msg["type"] in ("message", "pmessage", "smessage"):
            got.append(msg)
    return got


def _until_heard(publisher, subscribers, channel):
    """Publish probes until every subscriber hears one (the peers' links
    and flags are up), then a marker each reads up to: nothing older is
    left to read."""
    for pubsub in subscribers:
        def heard():
            publisher.publish(channel, "probe")
            msg = pubsub.get_message(timeout=0.2)
            return msg is not None and msg["type"] in ("message", "pmessage")
        wait_for(heard, 10, message="a subscriber on another node to hear a PUBLISH")
    publisher.publish(channel, "marker")
    for pubsub in subscribers:
        while _messages(pubsub, 1)[0]["data"] != b"marker":
            pass


def test_publish_on_a_reaches_subscribers_on_b_and_c_in_order(cluster3):
    a, b, c = cluster3[0], cluster3[1], cluster3[2]
    on_b = b.pubsub()
    on_b.subscribe("events")
    on_c = c.pubsub()
    on_c.psubscribe("ev*")
    _until_heard(a, [on_b, on_c], "events")
    sent = [f"m{i}".encode() for i in range(200)]
    for body in sent:
        assert a.publish("events", body) == 0  # nobody on A: A's count is 0
    assert [m["data"] for m in _messages(on_b, len(sent))] == sent
    got = _messages(on_c, len(sent))
    assert [m["data"] for m in got] == sent
    assert {(m["pattern"], m["channel"]) for m in got} == {(b"ev*", b"events")}
    # a subscriber on A too: A's reply counts it alone
    on_a = a.pubsub()
    on_a.subscribe("events")
    assert on_a.get_message(timeout=5)["type"] == "subscribe"
    assert a.publish("events", "local") == 1
    assert _messages(on_b, 1)[0]["data"] == b"local"
    assert _messages(on_a, 1)[0]["data"] == b"local"
    # SPUBLISH goes around too (a node is a shard of every slot)
    on_b.execute_command("SSUBSCRIBE", "shard")
    wait_for(lambda: b.execute_command("PUBSUB", "SHARDNUMSUB", "shard")[1] == 1,
             message="ssubscribed")
    assert c.execute_command("SPUBLISH", "shard", "s") == 0
    assert _messages(on_b, 1)[0]["data"] == b"s"
    for p in (on_a, on_b, on_c):
        p.close()


def test_publishers_on_two_nodes_keep_their_own_order(cluster3):
    a, b, c = cluster3[0], cluster3[1], cluster3[2]
    on_c = c.pubsub()
    on_c.subscribe("mixed")
    _until_heard(a, [on_c], "mixed")
    _until_heard(b, [on_c], "mixed")
    for i in range(100):
        a.publish("mixed", f"a{i}")
        b.publish("mixed", f"b{i}")
    got = [m["data"].decode() for m in _messages(on_c, 200)]
    assert [x for x in got if x[0] == "a"] == [f"a{i}" for i in range(100)]
    assert [x for x in got if x[0] == "b"] == [f"b{i}" for i in range(100)]
    on_c.close()


def test_a_message_over_the_bus_frame_limit_stays_local(make_cluster):
    cluster = make_cluster(2, config="cluster-bus-max-frame 1mb\n")
    a, b = cluster[0], cluster[1]
    on_b = b.pubsub()
    on_b.subscribe("big")
    _until_heard(a, [on_b], "big")
    assert a.publish("big", b"x" * (2 * 1024 * 1024)) == 0
    assert a.publish("big", "small") == 0
    assert _messages(on_b, 1)[0]["data"] == b"small"  # the big one never came
    fields = dict(line.split(":", 1) for line in
                  a.execute_command("CLUSTER", "INFO").decode().split("\r\n") if ":" in line)
    assert fields["cluster_stats_publish_too_big"] == "1"
    # and the link stayed up: jobs still replicate
    assert a.execute_command("ADDJOB", "q", "job", 5000, "REPLICATE", 2)
    on_b.close()
