"""Requeue rules on in-process nodes with a fake clock (see inproc.py):
what a holder does when its requeue time passed while it could not run."""

from trisque.protocol import bus

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
    frozen = net.hold(2)

    assert net.run(0, "GETJOB", "FROM", "q")[0][1] == job_id
    assert net.run(0, "ACKJOB", job_id) == 1
    # 4 s: past node 2's requeue time (2 s + jitter); node 2 runs nothing.
    net.advance(4000, cron=False, running=(0, 1))
    assert frozen, "the SETACK waits for node 2"
    willqueue_before = len(net.sent("WILLQUEUE", src=2))

    # Node 2 runs again, its timers before the frames waiting for it.
    net.release(2)
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


def no_federation(net):
    """NEEDJOBS lost everywhere: only the requeue rules can move a job."""
    for cluster in net.clusters:
        cluster.handlers[bus.NEEDJOBS] = lambda sender, msg: None


def queued_at(net, job_id):
    return [i for i in range(len(net.nodes))
            if (net.show(i, job_id) or {}).get("state") == b"queued"]


def test_a_job_queued_where_nobody_consumes_moves_to_a_holder_whose_consumers_wait():
    """Liveness without federation (issue 13): the job is queued on node 0,
    where no consumer asks, and a consumer waits on node 1, another
    holder. Node 1's WILLQUEUE says its consumers wait; node 0, whose queue
    no consumer asked in the last second, lets go of its queued copy instead
    of answering QUEUED, so node 1 queues the job and its consumer gets it
    within about one RETRY. (Before: node 0 answered QUEUED every RETRY and
    the job stayed queued where nobody took it.)"""
    net = Net(3)
    no_federation(net)
    job_id = addjob(net, 0, "q", "body", 0, "REPLICATE", 3, "RETRY", 1)
    assert queued_at(net, job_id) == [0]
    consumer = net.new_client(1)
    assert net.run(1, "GETJOB", "TIMEOUT", 0, "FROM", "q", client=consumer) is None
    reply = None
    for _ in range(20):  # 2 s: RETRY, its jitter and the WILLQUEUE advance
        net.advance(100)
        reply = net.take(consumer)
        if reply is not None:
            break
    assert reply is not None and reply[0][1] == job_id
    assert queued_at(net, job_id) == []  # delivered once, queued nowhere
    assert dict(net.nodes[0].cluster.info_fields())["cluster_stats_jobs_let_go"] == 1
    net.check()


def test_a_job_nobody_consumes_stays_queued_where_it_is():
    """Disque's rule holds when no consumer waits anywhere: a job not
    consumed is not requeued (its holders' WILLQUEUE get QUEUED)."""
    net = Net(3)
    job_id = addjob(net, 0, "q", "body", 0, "REPLICATE", 3, "RETRY", 1)
    for _ in range(6):
        net.advance(500)
        assert queued_at(net, job_id) == [0]
    assert net.show(0, job_id)["additional-deliveries"] == 0
    net.check()


def test_a_holder_whose_consumers_asked_lately_keeps_the_job():
    """Node 0 works through a backlog, one job per GETJOB every 250 ms:
    its queue had a consumer in the last second, so it can deliver the
    jobs and still answers QUEUED; node 1's waiting consumer gets none."""
    net = Net(2)
    no_federation(net)
    jobs = [addjob(net, 0, "q", f"body{n}", 0, "REPLICATE", 2, "RETRY", 1)
            for n in range(4)]
    consumer = net.new_client(1)
    assert net.run(1, "GETJOB", "TIMEOUT", 0, "FROM", "q", client=consumer) is None
    taken = []
    for _ in range(4):
        reply = net.run(0, "GETJOB", "NOHANG", "FROM", "q")
        taken.append(reply[0][1])
        net.run(0, "ACKJOB", reply[0][1])
        net.advance(250)
    assert taken == jobs
    assert net.take(consumer) is None
    net.check()
