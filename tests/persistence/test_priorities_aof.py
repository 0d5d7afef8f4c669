"""Priority levels with a real node and its AOF: after kill -9 and restart
(and after a rewrite) the jobs come back at their levels (reloaded active,
queued again by their RETRY)."""

from tests.harness import wait_for


def test_levels_survive_kill9_and_rewrite(make_server):
    server = make_server(config="appendonly yes\nappendfsync always\n")
    c = server.client()
    low = c.execute_command("ADDJOB", "q", "low", 0, "RETRY", 1, "PRIORITY", 2)
    plain = c.execute_command("ADDJOB", "q", "plain", 0, "RETRY", 1)
    high = c.execute_command("ADDJOB", "q", "high", 0, "RETRY", 1, "PRIORITY", 9)
    assert c.execute_command("QCONFIG", "d", "SET", "PRIORITY", 7) == b"OK"
    for restart in range(2):
        server.kill()
        server.start()
        c = server.client()
        wait_for(lambda: c.execute_command("QLEN", "q") == 3, 10, message="requeued")
        peek = [item[1] for item in c.execute_command("QPEEK", "q", 10)]
        assert peek == [high, plain, low]
        assert c.execute_command("QCONFIG", "d", "GET")[-2:] == [b"priority", 7]
        if restart == 0:
            c.bgrewriteaof()
            wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0, 10,
                     message="rewrite done")
