"""WAITJOB on one real node (docs/lifecycle.md, "WAITJOB"): answered by an
ACKJOB or FASTACK from another client, the state at the timeout, a null
for a job nobody knows, errors, and a client that goes away while it
waits (the cluster cases: tests/cluster/test_waitjob_cluster.py)."""

import time

import pytest
import redis

from tests.harness import wait_for
from tests.server.util import Raw

UNKNOWN_ID = "D-00000000-AAAAAAAAAAAAAAAAAAAAAAAA-05a1"


def blocked(client):
    return client.info("clients")["blocked_clients"]


def waiting(client):
    return client.info("stats")["waitjob_waiting_clients"]


@pytest.mark.parametrize("ack", ["ACKJOB", "FASTACK"])
def test_waitjob_answered_by_an_ack_from_another_client(c, shared, ack):
    job_id = c.execute_command("ADDJOB", "q", "body", 0)
    with Raw(shared.port) as waiter:
        waiter.send_command("WAITJOB", job_id)
        wait_for(lambda: blocked(c) == 1, message="waiter blocked")
        assert waiter.pending() == b""
        assert c.execute_command("SHOW", job_id)[-2:] == [b"waiters", 1]
        assert c.execute_command(ack, job_id) == 1
        assert waiter.read_line() == b"+acked\r\n"
        assert waiter.call("PING") == b"PONG"
    assert waiting(c) == 0
    assert c.info("stats")["waitjob_acked"] >= 1


def test_waitjob_of_a_job_given_to_a_consumer(c, shared):
    job_id = c.execute_command("ADDJOB", "q", "body", 0)
    with Raw(shared.port) as waiter:
        waiter.send_command("WAITJOB", job_id, "TIMEOUT", 10000)
        wait_for(lambda: blocked(c) == 1, message="waiter blocked")
        [[_, got, _]] = c.execute_command("GETJOB", "FROM", "q")
        assert got == job_id
        assert waiter.pending() == b""  # delivered is not done
        c.execute_command("ACKJOB", job_id)
        assert waiter.read_line() == b"+acked\r\n"


def test_timeout_answers_the_state(c, shared):
    job_id = c.execute_command("ADDJOB", "q", "body", 0)
    start = time.monotonic()
    assert c.execute_command("WAITJOB", job_id, "TIMEOUT", 150) == b"queued"
    assert time.monotonic() - start >= 0.14
    c.execute_command("GETJOB", "FROM", "q")
    assert c.execute_command("WAITJOB", job_id, "TIMEOUT", 50) == b"active"
    assert c.info("stats")["waitjob_timeouts"] >= 2
    assert waiting(c) == 0


def test_known_outcomes_return_at_once(c):
    # a job nobody knows (on a node alone): a null, at once, like SHOW's
    assert c.execute_command("WAITJOB", UNKNOWN_ID) is None
    assert c.execute_command("SHOW", UNKNOWN_ID) is None
    # a job deleted here is unknown from then on
    job_id = c.execute_command("ADDJOB", "q", "body", 0)
    c.execute_command("DELJOB", job_id)
    assert c.execute_command("WAITJOB", job_id) is None


def test_deleted_while_waiting_answers_null(c, shared):
    job_id = c.execute_command("ADDJOB", "q", "body", 0)
    with Raw(shared.port) as waiter:
        waiter.send_command("WAITJOB", job_id)
        wait_for(lambda: blocked(c) == 1, message="waiter blocked")
        c.execute_command("DELJOB", job_id)
        assert waiter.read_line() == b"$-1\r\n"


def test_expired_while_waiting_answers_null(c, shared):
    job_id = c.execute_command("ADDJOB", "q", "body", 0, "TTL", 1)
    with Raw(shared.port) as waiter:
        waiter.send_command("WAITJOB", job_id)
        wait_for(lambda: blocked(c) == 1, message="waiter blocked")
        waiter.sock.settimeout(5)
        assert waiter.read_line() == b"$-1\r\n"


def test_resp3_null(shared):
    with Raw(shared.port) as r3:
        r3.call("HELLO", 3)
        assert r3.call("WAITJOB", UNKNOWN_ID, "TIMEOUT", 10) is None


def test_bad_arguments(c):
    job_id = c.execute_command("ADDJOB", "q", "body", 0)
    errors = [
        (("WAITJOB", "not-an-id"), "BADID"),
        (("WAITJOB", job_id, "TIMEOUT"), "ERR syntax error"),
        (("WAITJOB", job_id, "TIMEOUT", "x"), "ERR timeout is not an integer or out of range"),
        (("WAITJOB", job_id, "TIMEOUT", "-1"), "ERR timeout is negative"),
        (("WAITJOB", job_id, "NOHANG"), "ERR syntax error"),
        (("WAITJOB",), "ERR wrong number of arguments for 'waitjob' command"),
    ]
    for args, error in errors:
        with pytest.raises(redis.ResponseError) as exc:
            c.execute_command(*args)
        assert str(exc.value).startswith(error.removeprefix("ERR ")), (args, exc.value)
    assert c.execute_command("PING") is True
    assert waiting(c) == 0
    assert c.execute_command("QLEN", "q") == 1  # nothing changed


def test_inside_multi_answers_at_once(c):
    job_id = c.execute_command("ADDJOB", "q", "body", 0)
    pipe = c.pipeline(transaction=True)
    pipe.execute_command("WAITJOB", job_id)
    pipe.execute_command("ACKJOB", job_id)
    pipe.execute_command("WAITJOB", job_id)
    assert pipe.execute() == [b"queued", 1, None]


@pytest.mark.parametrize("how", ["disconnect", "client kill"])
def test_a_client_that_goes_drops_its_wait(c, shared, how):
    job_id = c.execute_command("ADDJOB", "q", "body", 0)
    memory = c.info("memory")["used_memory"]
    waiter = Raw(shared.port)
    waiter.call("CLIENT", "SETNAME", "waiter")
    waiter.send_command("WAITJOB", job_id)
    wait_for(lambda: waiting(c) == 1, message="waiter blocked")
    assert c.info("memory")["used_memory"] > memory  # a wait is counted
    if how == "disconnect":
        waiter.close()
    else:
        [line] = [cl for cl in c.client_list() if cl["name"] == "waiter"]
        c.execute_command("CLIENT", "KILL", "ID", line["id"])
        waiter.close()
    wait_for(lambda: waiting(c) == 0, message="the wait dropped")
    assert blocked(c) == 0
    assert c.info("memory")["used_memory"] == memory
    assert c.execute_command("SHOW", job_id)[-2:] != [b"waiters", 1]
    assert c.execute_command("ACKJOB", job_id) == 1  # and nothing breaks after
