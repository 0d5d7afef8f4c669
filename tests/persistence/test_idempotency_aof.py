"""Idempotent adds (docs/lifecycle.md) with a real node and its AOF: a key
still answers the first job's ID after kill -9 and restart, whether the
job is still queued or was acked (its tombstone), and after a rewrite."""

from tests.harness import wait_for
from tests.persistence.util import aof_records


def add(c, key, body=b"x", queue="q"):
    return c.execute_command("ADDJOB", queue, body, 0, "TTL", 600, "IDEMPOTENCY", key)


def test_keys_survive_kill9_restart_and_rewrite(make_server):
    server = make_server(config="appendonly yes\nappendfsync always\n")
    c = server.client()
    live = add(c, "live")
    done = add(c, "done")
    assert add(c, "live") == live
    got = c.execute_command("GETJOB", "NOHANG", "FROM", "q")
    assert got[0][1] == live  # FIFO: the first job
    got = c.execute_command("GETJOB", "NOHANG", "FROM", "q")
    assert got[0][1] == done
    assert c.execute_command("ACKJOB", done) == 1
    assert c.execute_command("SHOW", done) is None
    server.kill()
    server.start()
    c = server.client()
    assert add(c, "live", b"retry") == live
    assert add(c, "done", b"retry") == done, "an acked job's key is kept too"
    assert c.execute_command("QLEN", "q") == 0  # (live is active, delivered)
    assert c.info("stats")["idempotency_keys"] == 2
    c.bgrewriteaof()
    wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0, 10,
             message="rewrite done")
    records = aof_records(server)
    assert [r[0] for r in records].count(b"IDEMKEY") == 1  # done's tombstone
    server.kill()
    server.start()
    c = server.client()
    assert add(c, "live") == live
    assert add(c, "done") == done
    other = add(c, "new")
    assert other not in (live, done)
    assert c.info("stats")["deduplicated_adds"] == 2
