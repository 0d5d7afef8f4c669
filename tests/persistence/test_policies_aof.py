"""Delivery policies (docs/lifecycle.md) with a real node and its AOF:
counts, dead jobs and queue defaults come back after kill -9 and after an
AOF rewrite; plain jobs' records are unchanged."""

from tests.harness import wait_for
from tests.persistence.util import aof_records


def show(c, job_id):
    reply = c.execute_command("SHOW", job_id)
    return None if reply is None else {k.decode(): v for k, v in zip(reply[::2], reply[1::2])}


def take(c, queue="q"):
    got = c.execute_command("GETJOB", "NOHANG", "FROM", queue)
    return None if got is None else got[0][1]


def test_limit_dead_letters_and_defaults_survive_kill9_and_rewrite(make_server):
    server = make_server(config="appendonly yes\nappendfsync always\n")
    c = server.client()
    assert c.execute_command("QCONFIG", "q", "SET", "MAXDELIVERIES", 4,
                             "DEADLETTER", "graveyard") == b"OK"
    job_id = c.execute_command("ADDJOB", "q", "poison", 0, "RETRY", 1)
    plain = c.execute_command("ADDJOB", "plain", "body", 0, "RETRY", 60)
    for attempt in range(2):
        assert take(c) == job_id
        assert c.execute_command("NACK", job_id, "REASON", f"attempt {attempt}") == 1
    server.kill()
    server.start()
    c = server.client()
    info = show(c, job_id)
    assert info["nacks"] == 2, "the count is durable: the limit is not reset by a crash"
    assert info["last-error"] == b"attempt 1"
    assert info["max-deliveries"] == 4
    # reloaded active, requeued by RETRY: an additional delivery (Disque's count)
    wait_for(lambda: c.execute_command("QLEN", "q") == 1, 5, message="requeued")
    assert show(c, job_id)["additional-deliveries"] == 1
    assert take(c) == job_id
    assert c.execute_command("NACK", job_id, "REASON", "last") == 1
    assert c.execute_command("QLEN", "graveyard") == 1
    assert show(c, plain)["queue"] == b"plain"
    # the defaults and the dead job come back from a rewritten file too
    c.bgrewriteaof()
    wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0, 10,
             message="rewrite done")
    records = aof_records(server)
    assert [r[0] for r in records].count(b"QCONFIG") == 1
    server.kill()
    server.start()
    c = server.client()
    info = show(c, job_id)
    assert (info["queue"], info["dead-from"], info["nacks"], info["last-error"]) == (
        b"graveyard", b"q", 3, b"last")
    assert c.execute_command("QCONFIG", "q", "GET") == [
        b"max-deliveries", 4, b"dead-letter", b"graveyard", b"backoff", b"none"]
    assert len(c.execute_command("SHOW", plain)) == 30  # Disque's 15 fields
    # REVIVE survives a restart too
    assert c.execute_command("REVIVE", job_id) == 1
    server.kill()
    server.start()
    c = server.client()
    info = show(c, job_id)
    assert (info["queue"], info["dead-from"], info["nacks"]) == (b"q", None, 0)
    assert c.info("stats")["dead_lettered_jobs"] == 0  # (counters are per process)


def test_nack_delay_and_backoff_on_a_real_node(make_server):
    server = make_server()
    c = server.client()
    job_id = c.execute_command("ADDJOB", "q", "x", 0, "RETRY", 60,
                               "BACKOFF", "linear", 1, 1)
    assert take(c) == job_id
    assert c.execute_command("NACK", job_id) == 1
    assert c.execute_command("QLEN", "q") == 0  # waits 0.5-1 s
    wait_for(lambda: c.execute_command("QLEN", "q") == 1, 5, message="back after the backoff")
    assert take(c) == job_id
    assert c.execute_command("NACK", job_id, "DELAY", 1) == 1
    assert c.execute_command("QLEN", "q") == 0
    wait_for(lambda: c.execute_command("QLEN", "q") == 1, 5, message="back after DELAY")
    assert show(c, job_id)["nacks"] == 2
    stats = c.info("stats")
    assert stats["postponed_requeues"] == 2
    metrics = server.client().execute_command("INFO", "stats")
    assert metrics["dead_lettered_jobs"] == 0
