"""FASTACK remembers a freed job's ID (a tombstone, for TOMBSTONE_MS) only
where a copy of it may still be on the way, as ACKJOB's free does: a lone
node FASTACKing 100k jobs a second would otherwise hold a million IDs."""

import gc

from .world import SimClient, World


def _formed(nodes):
    world = World(1, nodes=nodes)
    world.start_cluster()
    if nodes > 1:
        world.run_until(20000, stop=world.cluster_formed)
        assert world.cluster_formed()
    else:
        world.run_until(1000)
    return world


def _call(world, sim_node, *argv):
    replies = []
    SimClient(world, sim_node).call(list(argv), replies.append)
    world.run_until(world.now_ms + 2000, stop=lambda: bool(replies))
    assert replies, argv
    return replies[0]


def test_fastack_on_a_lone_node_leaves_no_tombstone():
    world = _formed(1)
    node = world.nodes[0]
    job_id = _call(world, node, "ADDJOB", "q", "body", 0)
    unknown = job_id[:-4] + b"0000" if not job_id.endswith(b"0000") else job_id[:-4] + b"1111"
    assert _call(world, node, "FASTACK", job_id, unknown) == 1
    assert not node.cluster.tombstones


def test_fastack_of_a_replicated_job_leaves_a_tombstone():
    world = _formed(3)
    node = world.nodes[0]
    alone = _call(world, node, "ADDJOB", "q", "only here", 0, "REPLICATE", 1)
    shared = _call(world, node, "ADDJOB", "q", "on three", 0, "REPLICATE", 3)
    assert _call(world, node, "FASTACK", alone) == 1
    assert not node.cluster.tombstones  # nobody else ever had it
    assert _call(world, node, "FASTACK", shared) == 1
    assert set(node.cluster.tombstones) == {shared}  # its copies' messages may still come
    # an ID we never saw: its REPLJOB may be on the way from a peer
    other = world.nodes[1]
    assert _call(world, other, "FASTACK", alone) == 0
    assert alone in other.cluster.tombstones


def test_a_tombstone_leaves_nothing_the_collector_counts():
    """A freed job's remembered ID and its expiry are no container the
    cyclic collector walks: an (ms, id) tuple each made a young collection
    (1-3 ms) every ~2 s on every node at 9,200 acked jobs/s (bench/README.md,
    "Tails below saturation, twenty-third session")."""
    world = _formed(3)
    node = world.nodes[0]
    shared = _call(world, node, "ADDJOB", "q", "on three", 0, "REPLICATE", 3)
    assert _call(world, node, "FASTACK", shared) == 1
    acks = node.cluster.acks
    held = [*acks._tombstone_until, *acks._tombstone_ids]
    assert shared in held
    assert not any(gc.is_tracked(x) for x in held)
