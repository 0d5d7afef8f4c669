"""The one timer that watches every ADDJOB's first 50 ms (replication.py,
AddJobTimer): hundreds watched at once, answered ones dropped unseen, the
rest going on with a deadline each, and the timer still right after it
dropped the ones it passed."""

from .inproc import Net


def _add(net, client, n, tag):
    """n ADDJOBs in one turn: even ones REPLICATE 2 (to node 1 or 2), odd
    ones REPLICATE 3."""
    for i in range(n):
        net.nodes[0].execute(client, [b"ADDJOB", b"q", b"%s-%d" % (tag, i), b"10000",
                                      b"REPLICATE", b"3" if i % 2 else b"2"])
    net.deliver()


def test_many_addjobs_waiting_for_a_silent_node_all_answered_once_it_speaks():
    net = Net(3)
    timer = net.clusters[0].replication.add_timer
    client = net.new_client(0)
    for round_ in range(3):  # (each round passes the whole list: it is dropped)
        frames = net.hold(2)  # node 2 hears nothing for now
        _add(net, client, 300, b"r%d" % round_)
        # (replies leave in order: the first job that waits for node 2
        # holds back the replies of the jobs after it)
        replies = Net.take_all(client)
        net.advance(60)  # the timer's turn: the answered dropped, the rest on their own
        assert len(timer.waiting) - timer.head == 0 and timer.wake_ms is None
        assert len(net.clusters[0].replication.replicating) >= 150
        replies += Net.take_all(client)
        assert len(replies) < 300
        net.release(2)
        for frame in frames:
            net.clusters[2].receive(frame, None)
        net.deliver()
        replies += Net.take_all(client)
        assert len(replies) == 300 and all(r[:2] == b"D-" for r in replies)
        assert not net.clusters[0].replication.replicating
        net.advance(2000)  # (what the held ones scheduled runs and finds nothing)
        assert Net.take_all(client) == []
    assert len(net.nodes[0].jobs) == 900 and len(net.nodes[2].jobs) >= 450


def test_a_timer_that_passed_some_keeps_the_rest_in_order():
    net = Net(3)
    timer = net.clusters[0].replication.add_timer
    client = net.new_client(0)
    net.hold(2)
    _add(net, client, 200, b"a")  # all due at +50 ms
    net.now += 0.030
    _add(net, client, 200, b"b")  # due at +80 ms
    net.advance(25)  # +55 ms: passes the first 200 (more than half, past 64: dropped)
    assert len(timer.waiting) == 200 and timer.head == 0  # (the passed ones dropped)
    assert timer.wake_ms is not None and timer.wake_ms == timer.waiting[timer.head].sent_ms + 50
    net.advance(40)
    assert len(timer.waiting) == 0 and timer.head == 0 and timer.wake_ms is None
    # Every REPLICATE 3 job still waits (on a deadline of its own), none lost.
    assert len(net.clusters[0].replication.replicating) == 200
