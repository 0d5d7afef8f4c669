"""Jobs reloaded from the AOF (its log, and a rewritten file) count their
own policy data in used_memory as they did before the restart: a NACK
... REASON text and an IDEMPOTENCY key (docs/lifecycle.md)."""

from tests.harness import wait_for

N = 100


def used(c):
    return c.info("memory")["used_memory"]


def restart(server):
    server.kill()
    server.start()
    return server.client()


def test_reloaded_jobs_count_their_reasons_and_keys(make_server):
    server = make_server(config="appendonly yes\nappendfsync always\n")
    c = server.client()
    ids = [c.execute_command("ADDJOB", "q", "x", 0, "RETRY", 600, "IDEMPOTENCY", f"{i:0500}")
           for i in range(N)]
    got = c.execute_command("GETJOB", "NOHANG", "COUNT", N, "FROM", "q")
    assert {job[1] for job in got} == set(ids)
    for job_id in ids:
        assert c.execute_command("NACK", job_id, "REASON", "e" * 1000) == 1
    before = used(c)
    c = restart(server)
    logged = used(c)
    c.bgrewriteaof()
    wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0, 10,
             message="rewrite done")
    c = restart(server)
    rewritten = used(c)
    reply = c.execute_command("SHOW", ids[-1])
    shown = dict(zip(reply[::2], reply[1::2]))
    assert (shown[b"last-error"], shown[b"idempotency-key"]) == (b"e" * 1000, b"%0500d" % (N - 1))
    for job_id in ids:
        assert c.execute_command("DELJOB", job_id) == 1
    # (the keys' tombstones stay: 500-byte keys and their entries)
    emptied = used(c)
    for loaded in (logged, rewritten):
        assert loaded - emptied >= N * (1000 + 500), "each reason and key counted after load"
        assert abs(loaded - before) < N * 100, "as before the restart"
