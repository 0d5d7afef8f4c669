"""FASTACK remembers a freed job's ID (a tombstone, for TOMBSTONE_MS) only
where a copy of it may still be on the way, as ACKJOB's free does: a lone
node FASTACKing 100k jobs a second would otherwise hold a million IDs."""

import gc

from trisque.cluster.acks import TOMBSTONE_MS

from .world import CRON_MS, SimClient, World


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
    ids = [*acks._tombstone_fresh, *(i for _, tick in acks._tombstone_ticks for i in tick)]
    assert shared in ids
    expiries = [ms for ms, _ in acks._tombstone_ticks]
    assert not any(gc.is_tracked(x) for x in [*expiries, *ids])
    # (the containers: a list a tick that freed something, not one a job)
    assert len(acks._tombstone_ticks) <= 1


def test_a_tombstone_lasts_tombstone_ms_from_its_freeing_then_goes():
    """The tick after a freeing dates its tombstone (no clock read on the
    job's turn): it lasts at least TOMBSTONE_MS from the freeing, and goes
    within a tick or two of that."""
    world = _formed(3)
    node = world.nodes[0]
    shared = _call(world, node, "ADDJOB", "q", "on three", 0, "REPLICATE", 3)
    before_ms = world.now_ms
    assert _call(world, node, "FASTACK", shared) == 1
    after_ms = world.now_ms
    assert shared in node.cluster.tombstones
    world.run_until(before_ms + TOMBSTONE_MS - 1)
    assert shared in node.cluster.tombstones  # a late REPLJOB still finds it
    world.run_until(after_ms + TOMBSTONE_MS + 2 * CRON_MS + 1)
    assert shared not in node.cluster.tombstones


def test_tombstones_freed_between_many_ticks_each_last_their_time():
    """Batches of every size between ticks (none, one, past the 64 that
    compact the list): each ID stays from its freeing for TOMBSTONE_MS,
    then goes within two ticks, and nothing is left once all are gone."""
    world = _formed(3)
    node = world.nodes[0]
    acks = node.cluster.acks
    tombstones = node.cluster.tombstones
    freed = []  # (ms, ID)
    for step in range(600):
        if step < 200:
            for _ in range(step % 6 * 19):  # 0 to 95 IDs at once
                job_id = b"D-%08x-%s-0a0b" % (len(freed), b"A" * 24)
                acks.remember_freed(job_id)
                freed.append((world.now_ms, job_id))
        world.run_until(world.now_ms + 37)
        now_ms = world.now_ms
        for ms, job_id in freed:
            if now_ms < ms + TOMBSTONE_MS:
                assert job_id in tombstones
            elif now_ms > ms + TOMBSTONE_MS + 2 * CRON_MS:
                assert job_id not in tombstones
    assert not tombstones
    assert not acks._tombstone_fresh and not acks._tombstone_ticks


def test_an_expired_ticks_ids_are_let_go_of_at_that_tick():
    """A tombstone's ID is held by nothing once it expires, while later
    ones still wait: kept until the list was compacted, 10 s of IDs were
    freed in one tick (2-6 ms on every holder at 12,466 acked jobs/s)."""
    world = _formed(3)
    acks = world.nodes[0].cluster.acks
    early = [b"D-%08x-%s-0a0b" % (i, b"E" * 24) for i in range(300)]
    late = [b"D-%08x-%s-0a0b" % (i, b"L" * 24) for i in range(400)]
    for job_id in early:
        acks.remember_freed(job_id)
    world.run_until(world.now_ms + TOMBSTONE_MS // 2)
    for job_id in late:
        acks.remember_freed(job_id)
    world.run_until(world.now_ms + TOMBSTONE_MS // 2 + 2 * CRON_MS + 1)
    tombstones = world.nodes[0].cluster.tombstones
    assert not any(job_id in tombstones for job_id in early)
    assert all(job_id in tombstones for job_id in late)
    held = [*acks._tombstone_fresh, *(i for _, tick in acks._tombstone_ticks for i in tick)]
    assert not set(early) & set(held)
    assert set(late) <= set(held)
