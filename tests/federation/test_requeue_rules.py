"""Requeue rules on in-process nodes with a fake clock (see inproc.py):
what a holder does when its requeue time passed while it could not run."""

from .inproc import Net


def addjob(net, i, *args):
    """ADDJOB on node i; its reply comes once the copies are confirmed."""
    reply = net.run(i, "ADDJOB", *args)
    return reply if reply is not None else net.take(net.clients[i])


def test_a_node_woken_past_the_requeue_time_waits_for_answers_to_willqueue():
    """Node 2 is frozen (no timers, no frames) while the job is delivered
    elsewhere, acked, and its own requeue time passes.  When it runs again
    its timers may come before the frames waiting for it: it sends
    WILLQUEUE but keeps the job out of its queue for the WILLQUEUE advance,
    so the SETACK that was waiting reaches it first and the acked job is
    not delivered again."""
    net = Net(3)
    job_id = addjob(net, 0, "q", "body", 0, "REPLICATE", 3, "RETRY", 2)
    assert [net.show(i, job_id) is not None for i in range(3)] == [True] * 3
    frozen = []
    net.clusters[2].receive = lambda frame, link: frozen.append(frame)

    assert net.run(0, "GETJOB", "FROM", "q")[0][1] == job_id
    assert net.run(0, "ACKJOB", job_id) == 1
    # 4 s: past node 2's requeue time (2 s + jitter); node 2 runs nothing.
    net.advance(4000, cron=False, running=(0, 1))
    assert frozen, "the SETACK waits for node 2"
    willqueue_before = len(net.sent("WILLQUEUE", src=2))

    # Node 2 runs again, its timers before the frames waiting for it.
    del net.clusters[2].receive
    net.nodes[2].run_timers()
    # (net.run runs the command, then moves the bus.)
    assert net.run(2, "QLEN", "q") == 0, "not queued before the holders answer"
    assert len(net.sent("WILLQUEUE", src=2)) > willqueue_before
    for frame in frozen:
        net.clusters[2].receive(frame, None)
    net.deliver()
    net.advance(1000)
    assert net.run(2, "QLEN", "q") == 0
    assert net.run(2, "GETJOB", "NOHANG", "FROM", "q") is None
    net.advance(5000)  # the ack GC ends everywhere
    assert [net.show(i, job_id) for i in range(3)] == [None] * 3
    net.check()


def test_a_node_on_time_requeues_at_the_retry_time():
    """The usual case is unchanged: WILLQUEUE 500 ms before the requeue
    time, the job queued at it (no holder objected)."""
    net = Net(2)
    job_id = addjob(net, 0, "q", "body", 0, "REPLICATE", 2, "RETRY", 2)
    assert net.run(0, "GETJOB", "FROM", "q")[0][1] == job_id
    start = net.ms()
    net.advance(4000)
    willqueue = net.sent("WILLQUEUE", since=start)
    queued = net.sent("QUEUED", since=start)
    assert willqueue and queued
    # Whoever requeued it announced it first, then queued it ~500 ms later
    # (within the 100 ms steps the test clock moves in).
    assert 400 <= queued[0][0] - willqueue[0][0] <= 600
    assert sum(net.run(i, "QLEN", "q") for i in range(2)) == 1
    net.check()
