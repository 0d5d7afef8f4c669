"""Pub/Sub across the simulated cluster (the real cores and cluster rules,
frames through the real codec): a PUBLISH reaches the subscribers of the
other nodes, and only peers whose frames carry F_PUBSUB are sent PUBLISH
frames (a node older than them drops a link on a type it does not know)."""

from trisque.protocol import bus

from .world import World


def _formed(nodes):
    world = World(1, nodes=nodes)
    world.start_cluster()
    world.run_until(20000, stop=world.cluster_formed)
    assert world.cluster_formed()
    # every node hears from every other (a PING or PONG: their flags)
    world.run_until(world.now_ms + 5000)
    return world


def _subscriber(sim_node, channel):
    client = sim_node.node.add_client(addr="subscriber")
    sim_node.node.execute(client, [b"SUBSCRIBE", channel])
    assert client.out, "the subscribe confirmation"
    client.out.clear()
    return client


def _message(channel, data):
    return (b"*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
            % (len(channel), channel, len(data), data))


def _publish(world, sim_node, publisher, channel, data):
    sim_node.node.execute(publisher, [b"PUBLISH", channel, data])
    sim_node.after_event()
    world.run_until(world.now_ms + 500)


def test_publish_reaches_peers_that_read_publish_frames_only():
    world = _formed(3)
    a, b, c = world.nodes
    for sim_node in world.nodes:  # every header carries the flag, every peer read it
        membership = sim_node.cluster.membership
        assert membership.header().flags & bus.F_PUBSUB
        assert all(other.reads_publish for other in membership.others())
    on_b, on_c = _subscriber(b, b"ch"), _subscriber(c, b"ch")
    publisher = a.node.add_client(addr="publisher")
    _publish(world, a, publisher, b"ch", b"one")
    assert publisher.out[-1] == b":0\r\n"  # nobody on A
    assert b"".join(on_b.out) == _message(b"ch", b"one")
    assert b"".join(on_c.out) == _message(b"ch", b"one")
    on_b.out.clear()
    on_c.out.clear()
    # C as A would see a node older than PUBLISH frames: nothing is sent to it
    a.cluster.membership.nodes[c.id].reads_publish = False
    _publish(world, a, publisher, b"ch", b"two")
    assert b"".join(on_b.out) == _message(b"ch", b"two")
    assert on_c.out == []
    assert world.cluster_formed()  # no link was dropped
