"""Federation rules on in-process nodes with a fake clock (see inproc.py):
exact backoffs, counts, who answers and who stays silent."""

import pytest

from trisque.cluster import federation as fed

from .inproc import Net


def needjobs(net, src=None, dst=None, since=0):
    return net.sent("NEEDJOBS", src, dst, since)


def yourjobs(net, src=None, dst=None, since=0):
    return net.sent("YOURJOBS", src, dst, since)


def add(net, i, queue, n=1, *opts):
    return [net.run(i, "ADDJOB", queue, "job%d" % k, 0, "REPLICATE", 1, *opts)
            for k in range(n)]


def times(entries):
    return sorted({e[0] for e in entries})


def test_getjob_on_empty_queue_broadcasts_one_job_request_to_all():
    net = Net(3)
    assert net.run(0, "GETJOB", "NOHANG", "FROM", "q") is None
    sent = needjobs(net, src=0)
    assert sorted(e[2] for e in sent) == [1, 2]
    assert all(e[4] == (1, b"q") for e in sent), "discovery asks for one job"
    # A second GETJOB right away is within the 2 s backoff: silent.
    net.run(0, "GETJOB", "NOHANG", "FROM", "q")
    assert len(needjobs(net, src=0)) == 2


def test_broadcast_backoff_doubles_from_2s_to_30s_while_blocked():
    net = Net(2)
    client = net.new_client(0)
    assert net.run(0, "GETJOB", "FROM", "q", client=client) is None  # blocks
    net.advance(200_000)
    at = times(needjobs(net, src=0))
    gaps = [b - a for a, b in zip(at, at[1:])]
    # As Disque: the first broadcast counts as attempt 0 (2 s), so the
    # next waits 2 s x 2, then x 4... up to 30 s.
    expected = [4000, 8000, 16000, 30000, 30000, 30000, 30000]
    assert len(gaps) >= len(expected), at
    for gap, delay in zip(gaps, expected + [30000] * len(gaps)):
        # strictly more than the delay, found by the next 100 ms cron tick
        assert delay < gap <= delay + 100, (gaps, expected)


def test_no_ask_without_blocked_clients_or_when_leaving():
    net = Net(2)
    net.run(0, "GETJOB", "NOHANG", "FROM", "q")
    net.advance(10_000)
    assert len(needjobs(net, src=0)) == 1, "nobody waits: the cron stays silent"
    net.run(1, "CLUSTER", "LEAVING", "yes") if False else None
    net.clusters[1].membership.myself.leaving = True
    client = net.new_client(1)
    net.run(1, "GETJOB", "NOHANG", "FROM", "q", client=client)
    net.advance(5_000)
    assert needjobs(net, src=1) == [], "a leaving node never asks"


def test_yourjobs_makes_a_source_then_adhoc_backoff_25ms_to_2s():
    net = Net(2)
    add(net, 1, "q", 1)
    client = net.new_client(0)
    reply = net.run(0, "GETJOB", "FROM", "q", client=client)
    assert reply is None  # blocked: the job is on node 1
    # The broadcast reached node 1, which answered with its only job.
    assert len(yourjobs(net, src=1, dst=0)) == 1
    got = net.take(client)
    assert got[0][2] == b"job0"
    stat = net.qstat(0, "q")
    assert stat["import-from"] == [net.nodes[1].id.encode()]
    assert stat["import-rate"] > 0
    # Block again: node 0 now asks its source at the ad-hoc backoff.
    start = net.ms()
    net.run(0, "GETJOB", "FROM", "q", client=client)
    net.advance(5_500)
    adhoc = [e for e in needjobs(net, src=0, dst=1, since=start) if e[4][0] >= fed.MIN_REQUEST]
    at = times(adhoc)
    gaps = [b - a for a, b in zip(at, at[1:])]
    # The drain asked at once (attempt 0 -> 1); then 50, 100, 200 ... ms
    # up to 2 s, each seen by the first 100 ms cron tick strictly after it.
    delays = [min(25 << k, 2000) for k in range(1, 10)]
    expected = [(d // 100 + 1) * 100 for d in delays]
    # Asks at 0, 100, 300, 600, 1100, 2000, 3700 ms; the next would be at
    # 5800, past the 5 s the source stays valid without sending jobs.
    assert gaps == expected[:6], (gaps, expected)
    # The source is valid 5 s after its last YOURJOBS: then ad-hoc asks stop.
    last = at[-1]
    net.advance(5_000)
    later = [e for e in needjobs(net, src=0, dst=1, since=last + 1) if e[4][0] >= fed.MIN_REQUEST]
    assert later == [], "an expired source is not asked"
    assert net.qstat(0, "q")["import-rate"] == 0


def test_count_is_import_rate_over_sources_clamped_5_to_100():
    net = Net(3)
    queue = net.nodes[0].get_queue(b"q")
    federation = net.clusters[0].federation
    now = net.nodes[0].now_ms()
    # 3000 jobs/s imported from two sources: 1500 each, clamped to 100.
    queue.import_buckets = [now - 1000, 1500, now - 10, 1500]
    queue.import_from = {net.nodes[1].id: now, net.nodes[2].id: now}
    assert federation.import_rate(queue) == 3000
    net.run(0, "GETJOB", "NOHANG", "FROM", "q")
    asks = [e[4][0] for e in needjobs(net, src=0) if e[4][0] != 1]
    assert asks == [100, 100]
    # 6 jobs/s over two sources: 3 each, raised to 5.
    net.now += 1
    queue.import_buckets = [now - 1000, 3, now, 3]
    queue.import_from = {net.nodes[1].id: net.nodes[0].now_ms(),
                         net.nodes[2].id: net.nodes[0].now_ms()}
    queue.needjobs_adhoc_attempt = 0
    before = len(net.log)
    net.run(0, "GETJOB", "NOHANG", "FROM", "q")
    asks = [e[4][0] for e in net.log[before:] if e[3] == "NEEDJOBS"]
    assert asks == [5, 5]


@pytest.mark.parametrize("have,asked,given", [
    (10, 5, 5), (9, 5, 4), (3, 5, 1), (1, 5, 1), (1, 1, 1), (250, 100, 100),
    (50, 1, 1), (300, 500, 100)])
def test_answer_size_count_if_twice_as_many_else_half_at_least_one(have, asked, given):
    net = Net(2)
    add(net, 1, "q", have)
    net.clusters[0].federation._send([net.nodes[1].id], b"q", asked)
    net.deliver()
    answers = yourjobs(net, src=1, dst=0)
    assert len(answers) == 1, "one YOURJOBS message carries them all"
    assert len(answers[0][4]) == given
    assert net.run(1, "QLEN", "q") == have - given
    assert net.run(0, "QLEN", "q") == given
    # The giver keeps its copies (active, with a requeue timer).
    for record in answers[0][4]:
        info = net.run(1, "SHOW", record[0])
        assert info[info.index(b"state") + 1] == b"active"
    net.check()


def test_retry0_jobs_sent_are_deleted_at_the_giver():
    net = Net(2)
    ids = add(net, 1, "q", 4, "RETRY", 0)
    net.clusters[0].federation._send([net.nodes[1].id], b"q", 5)
    net.deliver()
    moved = [r[0] for r in yourjobs(net, src=1)[0][4]]
    assert len(moved) == 2
    for job_id in moved:
        assert net.run(1, "SHOW", job_id) is None
        assert net.run(0, "SHOW", job_id) is not None
    assert net.run(1, "QLEN", "q") == 2
    # Queued once at the receiver: delivered once, never again.
    job = net.run(0, "GETJOB", "FROM", "q")
    assert job[0][1] in moved and job[0][1] in [i for i in ids]
    net.check()


def test_silent_when_paused_out_or_importing():
    net = Net(3)
    add(net, 1, "q", 4)
    net.run(1, "PAUSE", "q", "out")
    net.clusters[0].federation._send([net.nodes[1].id], b"q", 5)
    net.deliver()
    assert yourjobs(net, src=1) == []
    assert net.clusters[1].federation.open_asks == {}, "paused: not even kept open"
    net.run(1, "PAUSE", "q", "none")
    # Node 1 imports q from node 2: it stays silent while its rate is > 0.
    add(net, 2, "q", 4)
    net.clusters[1].federation._send([net.nodes[2].id], b"q", 5)
    net.deliver()
    assert len(yourjobs(net, src=2, dst=1)) == 1
    assert net.qstat(1, "q")["import-rate"] > 0
    net.clusters[0].federation._send([net.nodes[1].id], b"q", 5)
    net.deliver()
    assert yourjobs(net, src=1) == []
    # Once the import rate is back to 0 (5 s without imports) it answers.
    net.advance(5_100, cron=False)
    net.clusters[0].federation._send([net.nodes[1].id], b"q", 5)
    net.deliver()
    assert len(yourjobs(net, src=1, dst=0)) == 1


def test_open_ask_is_answered_once_when_jobs_arrive():
    net = Net(2)
    client = net.new_client(0)
    net.run(0, "GETJOB", "FROM", "q", client=client)  # blocks, asks everyone
    assert yourjobs(net) == []
    assert net.clusters[1].federation.open_asks
    net.advance(1000)
    add(net, 1, "q", 1)  # ... and the job leaves node 1 this turn
    answers = yourjobs(net, src=1, dst=0)
    assert len(answers) == 1
    assert net.take(client)[0][2] == b"job0"
    # The ask was answered: later jobs stay until someone asks again.
    add(net, 1, "q", 1)
    assert len(yourjobs(net, src=1)) == 1
    assert net.run(1, "QLEN", "q") == 1
    net.check()


def test_open_ask_expires():
    net = Net(2)
    client = net.new_client(0)
    net.run(0, "GETJOB", "TIMEOUT", 1000, "FROM", "q", client=client)
    net.advance(fed.ASK_OPEN_MS + 100)
    assert net.clusters[1].federation.open_asks == {}
    add(net, 1, "q", 1)
    assert yourjobs(net) == []


def test_local_consumer_first_then_open_ask():
    net = Net(2)
    remote = net.new_client(0)
    net.run(0, "GETJOB", "FROM", "q", client=remote)
    local = net.new_client(1)
    net.run(1, "GETJOB", "FROM", "q", client=local)
    add(net, 1, "q", 1)
    assert net.take(local)[0][2] == b"job0", "the local consumer is served first"
    assert yourjobs(net, src=1) == []
    add(net, 1, "q", 1)
    assert len(yourjobs(net, src=1, dst=0)) == 1
    assert net.take(remote)[0][2] == b"job0"


def test_a_burst_leaves_in_one_yourjobs_and_drain_asks_once():
    net = Net(2)
    consumers = [net.new_client(0) for _ in range(10)]
    for c in consumers:
        net.run(0, "GETJOB", "FROM", "q", client=c)
    # Node 1 gets 10 jobs in one turn (a pipeline): one open ask, count 1.
    node1 = net.nodes[1]
    for k in range(10):
        node1.execute(net.clients[1], [b"ADDJOB", b"q", b"j%d" % k, b"0", b"REPLICATE", b"1"])
    net.clients[1].out.clear()
    net.deliver()
    assert [len(e[4]) for e in yourjobs(net, src=1)] == [1], "discovery asked for one"
    # The drain after importing asks the source (once), which now gives
    # half of what it has, in one message.
    start = len(net.log)
    net.advance(100)
    msgs = [(e[3], e[4] if e[3] == "NEEDJOBS" else len(e[4])) for e in net.log[start:]
            if e[3] in ("NEEDJOBS", "YOURJOBS")]
    assert msgs[0][0] == "NEEDJOBS"
    served = sum(1 for c in consumers if net.take(c))
    assert served == 10 and net.run(1, "QLEN", "q") == 0, msgs
    # However many consumers a YOURJOBS batch served, the queue drained
    # once per turn: one ad-hoc ask per batch.
    for k, (kind, _) in enumerate(msgs):
        if kind == "YOURJOBS" and k + 1 < len(msgs):
            assert msgs[k + 1][0] == "NEEDJOBS" and (k + 2 >= len(msgs) or msgs[k + 2][0] == "YOURJOBS"), msgs
    net.check()


def test_qscan_importrate_and_qstat():
    net = Net(2)
    add(net, 1, "q1", 4)
    add(net, 1, "q2", 4)
    add(net, 0, "local", 1)
    for q in ("q1", "q2"):
        assert net.run(0, "GETJOB", "NOHANG", "FROM", q) is None
    reply = net.run(0, "QSCAN", "BUSYLOOP", "IMPORTRATE", 1)
    assert sorted(reply[1]) == [b"q1", b"q2"]
    stat = net.qstat(0, "q1")
    assert stat["import-from"] == [net.nodes[1].id.encode()]
    assert stat["import-rate"] >= 1
    assert net.qstat(0, "local")["import-from"] == []


def test_new_source_resets_broadcast_backoff_to_2s():
    net = Net(3)
    client = net.new_client(0)
    net.run(0, "GETJOB", "FROM", "q", client=client)  # broadcast at 0
    net.advance(4100)  # second broadcast at 4100 (attempt 1: 4 s)
    assert times(needjobs(net, src=0, dst=2)) == [0, 4100]
    add(net, 2, "q", 1)  # node 2 answers the still open ask: a new source
    assert net.take(client)[0][2] == b"job0"
    net.run(0, "GETJOB", "FROM", "q", client=client)
    net.advance(3000)
    # Attempt back to 0: the next broadcast 2 s after the last one.
    assert times(needjobs(net, src=0, dst=1)) == [0, 4100, 6200]


def test_open_ask_of_a_node_now_leaving_is_not_answered():
    net = Net(2)
    net.run(0, "GETJOB", "NOHANG", "FROM", "q")
    assert net.clusters[1].federation.open_asks
    net.clusters[1].membership.nodes[net.nodes[0].id].leaving = True
    add(net, 1, "q", 1)
    assert yourjobs(net) == []
    assert net.run(1, "QLEN", "q") == 1
