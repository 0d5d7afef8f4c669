"""WAITJOB across three real nodes (docs/lifecycle.md, "WAITJOB"): a job
added with REPLICATE 2, so one node holds no copy, waited on from its
creator, from the other holder and from the node without a copy, each
answered by an ACKJOB on another node; the state at the timeout; a job no
node knows; a waiter that disconnects leaves no watch on the holders."""

import pytest

from tests.harness import wait_for
from tests.server.util import Raw
from trisque.core.jobs.waits import ANSWER_BYTES, ENTRY_BYTES, WAITER_BYTES

from .conftest import addjob

UNKNOWN_ID = "D-00000000-AAAAAAAAAAAAAAAAAAAAAAAA-05a1"


def _roles(c, job_id):
    """(creator, other holder, non-holder) of a REPLICATE 2 job added on 0."""
    holders = c.job_holders(job_id)
    assert len(holders) == 2 and 0 in holders, holders
    other = [i for i in holders if i != 0][0]
    [outside] = [i for i in c.alive() if i not in holders]
    return 0, other, outside


def _watches(c):
    return [c[i].info("stats")["waitjob_watches"] for i in c.alive()]


# (waiting node, acking node), by role
CASES = {
    "creator-waits-other-holder-acks": ("creator", "other"),
    "other-holder-waits-non-holder-acks": ("other", "outside"),
    "non-holder-waits-creator-acks": ("outside", "creator"),
    "non-holder-waits-other-holder-acks": ("outside", "other"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_waitjob_answered_by_an_ack_elsewhere(cluster3, case):
    c = cluster3
    job_id = addjob(c[0], "q", "body", "REPLICATE", 2, "RETRY", 30)
    roles = dict(zip(("creator", "other", "outside"), _roles(c, job_id)))
    waiter_node, acker_node = (roles[r] for r in CASES[case])
    with Raw(c.servers[waiter_node].port) as waiter:
        waiter.send_command("WAITJOB", job_id, "TIMEOUT", 20000)
        wait_for(lambda: c[waiter_node].info("stats")["waitjob_waiting_clients"] == 1,
                 message="waiter blocked")
        if waiter_node == roles["outside"]:
            # the holders were asked, and keep a watch for it
            wait_for(lambda: sum(_watches(c)) == 2, message="both holders watch")
        assert waiter.pending() == b""
        assert c[acker_node].execute_command("ACKJOB", job_id) == (
            1 if acker_node != roles["outside"] else 0)
        waiter.sock.settimeout(15)
        assert waiter.read_line() == b"+acked\r\n"
    wait_for(lambda: not c.job_holders(job_id), 10, message="the ack garbage-collected")
    wait_for(lambda: sum(_watches(c)) == 0, message="no watch left")


def test_acked_a_moment_ago_answers_acked_on_any_node(cluster3):
    c = cluster3
    job_id = addjob(c[0], "q", "body", "REPLICATE", 2)
    _, _, outside = _roles(c, job_id)
    c[0].execute_command("ACKJOB", job_id)
    wait_for(lambda: not c.job_holders(job_id), 10, message="the ack garbage-collected")
    # the holders remember it (their ack GC's tombstones): no wait to the timeout
    for i in c.alive():
        assert c[i].execute_command("WAITJOB", job_id, "TIMEOUT", 20000) == b"acked", i


def test_timeout_on_a_non_holder_answers_the_holders_state(cluster3):
    c = cluster3
    job_id = addjob(c[0], "q", "body", "REPLICATE", 2, "RETRY", 30)
    creator, other, outside = _roles(c, job_id)
    assert c[outside].execute_command("WAITJOB", job_id, "TIMEOUT", 500) == b"queued"
    got = c[creator].execute_command("GETJOB", "FROM", "q")
    assert got[0][1].decode() == job_id
    wait_for(lambda: c[creator].execute_command("WAITJOB", job_id, "TIMEOUT", 10) == b"active",
             message="delivered on its creator")
    # the other holder's copy is a replica (active), not queued anywhere now
    assert c[outside].execute_command("WAITJOB", job_id, "TIMEOUT", 500) == b"active"
    assert c[outside].info("stats")["waitjob_timeouts"] >= 2
    wait_for(lambda: sum(_watches(c)) == 0, message="timed-out waits forgotten")


def test_a_job_no_node_knows_answers_null_without_waiting_out(cluster3):
    c = cluster3
    for i in c.alive():
        assert c[i].execute_command("WAITJOB", UNKNOWN_ID, "TIMEOUT", 20000) is None


def test_a_non_holder_waiter_that_disconnects_drops_the_holders_watches(cluster3):
    c = cluster3
    job_id = addjob(c[0], "q", "body", "REPLICATE", 2)
    _, _, outside = _roles(c, job_id)
    waiter = Raw(c.servers[outside].port)
    waiter.send_command("WAITJOB", job_id)
    wait_for(lambda: sum(_watches(c)) == 2, message="both holders watch")
    waiter.close()
    wait_for(lambda: c[outside].info("stats")["waitjob_waiting_clients"] == 0,
             message="the wait dropped")
    wait_for(lambda: sum(_watches(c)) == 0, message="the holders forgot it")
    assert c[0].execute_command("SHOW", job_id) is not None  # the job itself is untouched


@pytest.mark.parametrize("end", ["disconnect", "ack"])
def test_the_holders_answers_count_in_used_memory(cluster3, end):
    """A non-holder's wait keeps each holder's answer: counted by maxmemory
    while the client waits, given back when it stops waiting."""
    c = cluster3
    job_id = addjob(c[0], "q", "body", "REPLICATE", 2)
    _, _, outside = _roles(c, job_id)

    def used():
        return c[outside].info("memory")["used_memory"]

    before = used()
    waiting = ENTRY_BYTES + WAITER_BYTES
    waiter = Raw(c.servers[outside].port)
    waiter.send_command("WAITJOB", job_id, "TIMEOUT", 20000)
    wait_for(lambda: sum(_watches(c)) == 2, message="both holders watch")
    wait_for(lambda: used() - before == waiting + 2 * ANSWER_BYTES,
             message=f"the wait and both answers counted (used {before} + ...)")
    if end == "disconnect":
        waiter.close()
    else:
        assert c[0].execute_command("ACKJOB", job_id) == 1
        waiter.sock.settimeout(15)
        assert waiter.read_line() == b"+acked\r\n"
        waiter.close()
    wait_for(lambda: c[outside].info("stats")["waitjob_waiting_clients"] == 0,
             message="the wait dropped")
    wait_for(lambda: used() == before, message="the wait and its answers given back")
