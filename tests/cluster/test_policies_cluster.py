"""Delivery policies across a cluster of real nodes (docs/lifecycle.md):
every holder's copy goes to the dead-letter queue with the same last
error, REVIVE brings them all
back, QCONFIG reaches every node (and one that restarts), the delivery
bound holds with RETRY racing on three holders."""

import time

from tests.harness import wait_for

from .conftest import addjob, show


def _copies(c, job_id):
    return {i: show(c[i], job_id) for i in c.alive() if show(c[i], job_id)}


def test_dead_letter_and_revive_reach_every_holder(cluster3):
    c = cluster3
    job_id = addjob(c[0], "q", "poison", "REPLICATE", 3, "RETRY", 60,
                    "MAXDELIVERIES", 2, "DEADLETTER", "dlq")
    wait_for(lambda: len(_copies(c, job_id)) == 3, 5, message="3 copies")
    assert all(info["max-deliveries"] == 2 for info in _copies(c, job_id).values())
    for _ in range(2):
        got = c[0].execute_command("GETJOB", "TIMEOUT", 5000, "FROM", "q")
        assert got[0][1].decode() == job_id
        assert c[0].execute_command("NACK", job_id, "REASON", "bad input") == 1
    wait_for(lambda: all(info["queue"] == "dlq" and info["dead-from"] == "q"
                         for info in _copies(c, job_id).values()), 5,
             message="every copy dead-lettered")
    assert sum(c[i].execute_command("QLEN", "dlq") for i in c.alive()) == 1
    assert sum(c[i].execute_command("QLEN", "q") for i in c.alive()) == 0
    assert _copies(c, job_id)[0]["last-error"] == "bad input"
    # the other holders' dead copies got it with DEADJOB (bus LASTERROR)
    wait_for(lambda: [info["last-error"] for info in _copies(c, job_id).values()]
             == ["bad input"] * 3, 5, message="the last error on every copy")
    assert c[1].execute_command("REVIVE", job_id) == 1
    wait_for(lambda: all(info["queue"] == "q" and info["dead-from"] is None
                         and info["nacks"] == 0 for info in _copies(c, job_id).values()), 5,
             message="every copy revived")
    got = c[2].execute_command("GETJOB", "TIMEOUT", 5000, "FROM", "q")
    assert got[0][1].decode() == job_id
    assert c[2].execute_command("ACKJOB", job_id) == 1


def test_qconfig_reaches_every_node_and_a_restarted_one(make_cluster):
    c = make_cluster(3, config="appendonly yes\n")
    assert c[1].execute_command("QCONFIG", "jobs", "SET", "MAXDELIVERIES", 5,
                                "BACKOFF", "exponential", 2, 60) == b"OK"
    expected = [b"max-deliveries", 5, b"dead-letter", b"", b"backoff", b"exponential 2 60"]
    wait_for(lambda: all(c[i].execute_command("QCONFIG", "jobs", "GET") == expected
                         for i in c.alive()), 5, message="QCONFIG everywhere")
    # a job added anywhere gets the defaults
    job_id = addjob(c[2], "jobs", "x", "REPLICATE", 2)
    assert show(c[2], job_id)["max-deliveries"] == 5
    # a node down while the setting changes gets it when it is back
    c.kill(0)
    assert c[2].execute_command("QCONFIG", "jobs", "SET", "MAXDELIVERIES", 7) == b"OK"
    c.restart(0)
    c.wait_mesh()
    wait_for(lambda: c[0].execute_command("QCONFIG", "jobs", "GET")[1] == 7, 10,
             message="the restarted node has the newer setting")
    # and the older one it reloaded from its AOF does not come back elsewhere
    time.sleep(0.5)
    assert all(c[i].execute_command("QCONFIG", "jobs", "GET")[1] == 7 for i in c.alive())


def test_deliveries_stay_within_the_bound_with_three_holders(cluster3):
    """RETRY 1 on three holders, a consumer that never acks: the job is
    delivered at most k * n times (k = 3 copies, n = 3) before it is dead
    on every holder (docs/lifecycle.md, "The guarantee")."""
    c = cluster3
    job_id = addjob(c[0], "q", "x", "REPLICATE", 3, "RETRY", 1, "MAXDELIVERIES", 3)
    deliveries = 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for i in c.alive():
            got = c[i].execute_command("GETJOB", "NOHANG", "FROM", "q")
            if got:
                assert got[0][1].decode() == job_id
                deliveries += 1
        copies = _copies(c, job_id)
        if all(info["queue"] == "q:dead" for info in copies.values()):
            break
        time.sleep(0.05)
    assert all(info["queue"] == "q:dead" for info in _copies(c, job_id).values())
    assert 1 <= deliveries <= 3 * 3
    assert sum(c[i].execute_command("QLEN", "q:dead") for i in c.alive()) >= 1


def test_nack_dead_moves_every_copy_and_it_is_not_delivered_again(cluster3):
    """NACK ... DEAD on a plain job (no limit): every holder's copy goes to
    <queue>:dead with the reason, and no holder's RETRY brings it back."""
    c = cluster3
    job_id = addjob(c[0], "q", "broken", "REPLICATE", 3, "RETRY", 1)
    wait_for(lambda: len(_copies(c, job_id)) == 3, 5, message="3 copies")
    got = c[1].execute_command("GETJOB", "TIMEOUT", 5000, "FROM", "q")
    assert got[0][1].decode() == job_id
    assert c[1].execute_command("NACK", job_id, "REASON", "cannot parse", "DEAD") == 1
    wait_for(lambda: all(info["queue"] == "q:dead" and info["dead-from"] == "q"
                         and info["last-error"] == "cannot parse"
                         for info in _copies(c, job_id).values())
             and len(_copies(c, job_id)) == 3, 5, message="every copy dead")
    time.sleep(3)  # three RETRY periods: a copy left alive would be queued again
    assert sum(c[i].execute_command("QLEN", "q") for i in c.alive()) == 0
    assert all(c[i].execute_command("GETJOB", "NOHANG", "FROM", "q") is None
               for i in c.alive())
    assert sum(c[i].execute_command("QLEN", "q:dead") for i in c.alive()) == 1
    assert c[1].info("stats")["dead_lettered_jobs"] >= 1
