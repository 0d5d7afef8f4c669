"""A client's replies stay in request order behind ADDJOBs waiting for
their copies (node.py: ``client.slots`` from ``slots_head``, the sent
ones cut from the front of a long pipeline): replies known at once (PING)
wait behind pending ones, and a client that leaves with replies still
pending cancels exactly those."""

from trisque.core.client import FunctionWaker
from trisque.core.node import SLOTS_COMPACT
from trisque.protocol import bus

from .inproc import Net


def _pipeline(net, client, n, tag, ping_every):
    """n ADDJOBs on node 0, a PING after every ``ping_every``-th; returns
    what each reply must be in order (the job's body, or b"PONG")."""
    expected = []
    node = net.nodes[0]
    for i in range(n):
        body = b"%s-%d" % (tag, i)
        node.execute(client, [b"ADDJOB", b"q", body, b"10000", b"REPLICATE", b"3"])
        expected.append(body)
        if i % ping_every == ping_every - 1:
            node.execute(client, [b"PING"])
            expected.append(b"PONG")
    return expected


def _bodies(net, replies):
    jobs = net.nodes[0].jobs
    return [r if r == b"PONG" else jobs[r].body for r in replies]


def test_long_pipeline_answers_in_order():
    net = Net(3)
    client = net.new_client(0)
    n = 3 * SLOTS_COMPACT  # past the compaction bound while replies are pending
    expected = _pipeline(net, client, n, b"a", 97)
    assert not client.out  # the first ADDJOB waits: nothing goes before it
    assert len(client.slots) == len(expected)
    net.deliver()
    replies = Net.take_all(client)
    assert _bodies(net, replies) == expected
    assert client.slots is None and client.slots_head == 0
    assert not net.clusters[0].replication.replicating
    # and the next pipeline starts afresh
    expected = _pipeline(net, client, 40, b"b", 7)
    net.deliver()
    assert _bodies(net, Net.take_all(client)) == expected


def test_replies_released_in_part_then_the_client_leaves():
    net = Net(3)
    client = net.new_client(0)
    node = net.nodes[0]
    frames = net.hold(0)  # the replicas' GOTJOBs, handed over below
    expected = _pipeline(net, client, 2 * SLOTS_COMPACT, b"c", 50)
    net.deliver()
    net.release(0)
    # The first half of each replica's GOTJOB items: part of the pipeline
    # is answered.
    items = {}
    for frame in frames:
        msg = bus.decode(frame)
        if msg.type == bus.GOTJOB:
            items.setdefault(msg.sender, []).extend(msg.body)
    assert len(items) == 2
    for sender, got in items.items():
        header = net.clusters[net.index_of[sender]].membership.header()
        net.clusters[0].receive(bus.jobids(header, bus.GOTJOB, got[:len(got) // 2]), None)
    net.deliver()
    replies = Net.take_all(client)
    assert 0 < len(replies) < len(expected)
    assert _bodies(net, replies) == expected[:len(replies)]
    waiting = [s for s in client.slots[client.slots_head:] if s.__class__ is not bytes]
    assert waiting and all(s.data is None for s in waiting)
    pending_ids = {s.job.id for s in waiting}
    assert pending_ids <= set(net.clusters[0].replication.replicating)
    node.remove_client(client)
    # Every ADDJOB still waiting was given up (its copies deleted); those
    # answered before are kept.
    assert not net.clusters[0].replication.replicating
    assert not pending_ids & set(node.jobs)
    assert all(r == b"PONG" or r in node.jobs for r in replies)


def test_a_blocked_getjob_is_answered_before_the_addjob():
    """The copies confirmed, the job is queued before the ADDJOB is
    answered: a client blocked in GETJOB on its queue is woken (its reply
    written by the loop) first, as Disque C writes it, so the consumer's
    reply leaves before a write that may wake the producer onto our core."""
    net = Net(3)
    node = net.nodes[0]
    consumer = net.new_client(0)
    producer = net.new_client(0)
    node.execute(consumer, [b"GETJOB", b"TIMEOUT", b"10000", b"FROM", b"q"])
    assert not consumer.out  # blocked
    woken = []
    node.on_wake = FunctionWaker(woken.append)
    node.execute(producer, [b"ADDJOB", b"q", b"body", b"10000", b"REPLICATE", b"3"])
    assert not producer.out  # waits for its two copies
    net.deliver()
    assert woken == [consumer, producer]
    job_id = Net.take_all(producer)[0]
    [[queue, got_id, body]] = Net.take_all(consumer)[0]
    assert (queue, got_id, body) == (b"q", job_id, b"body")
