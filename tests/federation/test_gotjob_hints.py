"""The origin matches a GOTJOB item with the next job it sent that peer
(replication.py, SentJobs) before looking its ID up: a hint only.  GOTJOBs
out of order, twice, or missing for a job the peer refused must answer
every ADDJOB exactly as the lookups alone did, and the hints of a peer
that answers nothing stay bounded."""

import random

import hiredis

from trisque.cluster.replication import SENT_HINTS_MAX
from trisque.protocol import bus

from .inproc import Net


def _add(net, client, n, tag, queue=b"q", timeout=b"10000"):
    for i in range(n):
        net.nodes[0].execute(client, [b"ADDJOB", queue, b"%s-%d" % (tag, i), timeout,
                                      b"REPLICATE", b"3"])


def _gotjob_frames(net, frames):
    """The GOTJOB frames among ``frames`` (to node 0): (sender index, items)."""
    found = []
    for frame in frames:
        msg = bus.decode(frame)
        if msg.type == bus.GOTJOB:
            found.append((net.index_of[msg.sender], msg.body))
    return found


def _send_gotjob(net, sender, items):
    header = net.clusters[sender].membership.header()
    net.clusters[0].receive(bus.jobids(header, bus.GOTJOB, items), None)
    net.deliver()


def test_gotjobs_reordered_and_repeated_answer_every_addjob_once():
    net = Net(3)
    client = net.new_client(0)
    replication = net.clusters[0].replication
    frames = net.hold(0)  # the replicas' GOTJOBs, for the test to hand over
    _add(net, client, 200, b"a")
    net.deliver()
    got = _gotjob_frames(net, frames)
    assert {sender for sender, _ in got} == {1, 2}
    assert sum(len(items) for _, items in got) == 400
    net.release(0)
    rng = random.Random(7)
    for sender, items in got:
        shuffled = list(items)
        rng.shuffle(shuffled)
        half = len(shuffled) // 2
        _send_gotjob(net, sender, shuffled[:half])
        _send_gotjob(net, sender, shuffled[:half] + shuffled[half:])  # again, then the rest
    replies = Net.take_all(client)
    assert len(replies) == 200 and all(r[:2] == b"D-" for r in replies)
    assert len(set(replies)) == 200
    assert not replication.replicating
    for sender, items in got:  # the whole lot once more: nothing left to answer
        _send_gotjob(net, sender, items)
    assert Net.take_all(client) == []
    assert all(not sent.jobs for sent in replication.sent.values())
    for job_id in replies:
        assert net.show(0, job_id)["nodes-delivered"] and net.show(0, job_id)["state"] == b"queued"
    net.check()


def test_a_job_one_peer_refused_does_not_hold_up_the_others():
    """Node 2 refuses the jobs of a queue paused IN there: no GOTJOB for
    them, while the jobs of another queue, sent to it after, are
    confirmed as they come; the refused ones time out (NOREPL)."""
    net = Net(3)
    replication = net.clusters[0].replication
    assert net.run(2, "PAUSE", "p", "in") == b"in"
    paused = net.new_client(0)
    plain = net.new_client(0)
    for round_ in range(3):
        _add(net, paused, 2, b"p%d" % round_, queue=b"p", timeout=b"500")
        _add(net, plain, 100, b"q%d" % round_)
        net.deliver()
        replies = Net.take_all(plain)
        assert len(replies) == 100 and all(r[:2] == b"D-" for r in replies)
        assert Net.take_all(paused) == []  # still waiting for node 2
    net.advance(600)
    refused = Net.take_all(paused)
    assert len(refused) == 6 and all(isinstance(r, hiredis.ReplyError)
                                     and str(r).startswith("NOREPL") for r in refused)
    assert not replication.replicating
    _add(net, plain, 10, b"after")
    net.deliver()
    assert len(Net.take_all(plain)) == 10
    assert all(len(sent.jobs) - sent.head <= 8 for sent in replication.sent.values())
    net.check()


def test_the_hints_of_a_peer_that_answers_nothing_stay_bounded():
    net = Net(3)
    client = net.new_client(0)
    replication = net.clusters[0].replication
    frames = net.hold(2)  # node 2 hears nothing (and so answers nothing)
    _add(net, client, SENT_HINTS_MAX + 100, b"b", timeout=b"0")
    net.deliver()
    silent = replication.sent[net.clusters[2].node.id]
    assert 0 < len(silent.jobs) - silent.head <= SENT_HINTS_MAX
    net.release(2)
    for frame in frames:
        net.clusters[2].receive(frame, None)
    net.deliver()
    replies = Net.take_all(client)
    assert len(replies) == SENT_HINTS_MAX + 100 and all(r[:2] == b"D-" for r in replies)
    assert not replication.replicating
    assert all(not sent.jobs for sent in replication.sent.values())
    net.check()


def test_the_hints_of_a_peer_that_never_answers_go_with_its_jobs():
    """A peer that stopped answering keeps no job alive here: once the
    ADDJOBs waiting for it gave up (NOREPL, the jobs deleted), the cron
    drops its hints, though no GOTJOB or link change came."""
    net = Net(3)
    client = net.new_client(0)
    replication = net.clusters[0].replication
    net.hold(2)  # node 2 hears nothing (and so answers nothing)
    _add(net, client, 50, b"gone", timeout=b"1000")
    net.deliver()
    silent = replication.sent[net.clusters[2].node.id]
    assert len(silent.jobs) - silent.head == 50
    net.advance(2000)
    replies = Net.take_all(client)
    assert len(replies) == 50 and all("NOREPL" in str(r) for r in replies)
    assert not replication.replicating
    assert silent.jobs == [] and silent.head == 0


def test_a_job_acked_while_it_waits_is_passed_over():
    """ACKJOB of a job still waiting for copies frees it here (its ADDJOB
    gets NOREPL): node 2's GOTJOBs, the acked job's first, still answer
    the jobs sent after it."""
    net = Net(3)
    client = net.new_client(0)
    replication = net.clusters[0].replication
    frames = net.hold(2)
    _add(net, client, 1, b"acked")
    net.deliver()
    (first,) = replication.replicating
    assert net.run(0, "ACKJOB", first) == 1
    _add(net, client, 20, b"later")
    net.deliver()
    assert Net.take_all(client) == []  # (the first, unanswered, holds the others back)
    net.release(2)
    for frame in frames:
        net.clusters[2].receive(frame, None)
    net.deliver()
    net.advance(1000)
    replies = Net.take_all(client)
    assert len(replies) == 21
    assert isinstance(replies[0], hiredis.ReplyError) and "NOREPL" in str(replies[0])
    assert all(isinstance(r, bytes) and r[:2] == b"D-" for r in replies[1:])
    assert not replication.replicating
    net.check()


def test_a_leaving_origin_hands_each_job_to_a_holder():
    """A leaving node keeps no copy (external replication): each ADDJOB
    is answered once both peers confirmed, and one of them queues it."""
    net = Net(3)
    membership = net.clusters[0].membership
    membership.myself.leaving = True  # (CLUSTER LEAVING yes, which inproc's table lacks)
    membership.update_reachable()
    assert net.nodes[0].leaving
    client = net.new_client(0)
    for i in range(20):
        net.nodes[0].execute(client, [b"ADDJOB", b"q", b"away-%d" % i, b"10000",
                                      b"REPLICATE", b"2"])
    net.deliver()
    replies = Net.take_all(client)
    assert len(replies) == 20 and all(r[:2] == b"D-" for r in replies)
    assert not net.clusters[0].replication.replicating
    for job_id in replies:
        assert job_id not in net.nodes[0].jobs
        states = [net.nodes[i].jobs[job_id].state for i in (1, 2)]
        assert sorted(states) == [1, 2], states  # (active, queued: one holder queued it)
    net.check()


def test_lone_jobs_answered_one_by_one_leave_no_job_in_the_hints():
    """ADDJOBs one at a time (each its own REPLJOB and GOTJOBs, as at a
    low rate): each is answered, the hints keep none of them once
    answered, and a batch after them, then one more lone job, still
    match (a peer's lone hint is let go of in place: SentJobs.passed)."""
    net = Net(3)
    client = net.new_client(0)
    replication = net.clusters[0].replication
    answered = []
    for i in range(5):
        _add(net, client, 1, b"lone%d" % i)
        net.deliver()
        replies = Net.take_all(client)
        assert len(replies) == 1 and replies[0][:2] == b"D-"
        answered += replies
        for sent in replication.sent.values():
            assert len(sent.jobs) - sent.head == 0
            assert not any(job.id in answered for job in sent.jobs)
    frames = net.hold(2)
    _add(net, client, 10, b"batch")
    _add(net, client, 1, b"last")
    net.deliver()
    assert Net.take_all(client) == []  # (node 2's GOTJOBs held)
    net.release(2)
    for frame in frames:
        net.clusters[2].receive(frame, None)
    net.deliver()
    replies = Net.take_all(client)
    assert len(replies) == 11 and all(r[:2] == b"D-" for r in replies)
    assert not replication.replicating
    for sent in replication.sent.values():
        assert not any(job.id in answered + replies for job in sent.jobs)
    net.check()
