"""The client's pure parts, without a node: address forms, the order of
failover, the ACK routing table learnt from HELLO, the consumer rule."""

import pytest

from trisque.client.base import node_list
from trisque.client.nodes import ConsumerAffinity, NodeAddress, Topology, parse_address
from trisque.client.replies import Hello, HelloNode


def test_address_forms():
    assert parse_address("h:7712") == NodeAddress("h", 7712)
    assert parse_address("h") == NodeAddress("h", 7711)
    assert parse_address("trisque://:p%40ss@h:1") == NodeAddress("h", 1, False, "p@ss")
    assert parse_address("trisques://h") == NodeAddress("h", 7711, True)
    assert node_list("trisque://a:1,b:2") == [NodeAddress("a", 1), NodeAddress("b", 2)]
    assert node_list("a:1,b") == [NodeAddress("a", 1), NodeAddress("b", 7711)]
    for bad in ("redis://h:1", "trisque://:1", "h:notaport"):
        with pytest.raises(ValueError):
            parse_address(bad)


def hello(me, *nodes):
    return Hello(me, [HelloNode(i, "127.0.0.1", port, prio) for i, port, prio in nodes])


def test_failover_order_and_routing():
    a, b = NodeAddress("127.0.0.1", 1), NodeAddress("127.0.0.1", 2)
    t = Topology([a, b])
    assert t.order() == [a, b]
    t.answered(b)
    assert t.order() == [b, a]
    c_id, d_id = "c" * 40, "d" * 40
    t.learn(a, hello("a" * 40, ("a" * 40, 1, 1), (c_id, 3, 1), (d_id, 4, 100)), tls=False)
    c = NodeAddress("127.0.0.1", 3)
    d = NodeAddress("127.0.0.1", 4)
    assert t.order() == [b, c, d, a]  # the seeds, then HELLO's, from the preferred on
    assert t.owner("cccccccc") == c
    assert t.owner("dddddddd") is None  # failing: not a route
    assert t.owner("aaaaaaaa") == a
    assert t.order(first=c)[0] == c
    t2 = Topology([a])
    t2.learn(a, hello("a" * 40, ("a" * 40, 1, 1), (c_id, 3, 1)), tls=True)
    assert t2.owner("cccccccc") is None and t2.nodes == [a]  # TLS: seeds only


def test_consumer_affinity_window():
    rule = ConsumerAffinity(window=4)
    assert rule.record(["x", "x", "y"], serving="s") is None  # window not full
    assert rule.record(["x"], serving="s") == "x"  # 3 of 4 from x
    assert rule.record(["x", "x", "y", "y"], serving="s") is None  # half is not most
    assert rule.record(["s", "s", "s", "x"], serving="s") is None  # already there
    assert ConsumerAffinity(window=0).record(["x"] * 10, serving="s") is None
