"""CLIENT PAUSE / CLIENT UNPAUSE against a real node: what WRITE and ALL
hold (keys, jobs, scripts, PUBLISH), held clients resuming in order at
UNPAUSE or at the timeout with what they pipelined behind, CLIENT KILL of
a held client, blocking reads, expiry standing still, and the error
replies compared with redis-server's.  Redis's own unit/pause runs in
external mode (docs/testing.md).
"""

import time

import pytest
import redis

from tests.harness import wait_for
from tests.server.conftest import REDIS_SERVER


def _blocked(c):
    return c.info("clients")["blocked_clients"]


@pytest.fixture
def deferred(shared):
    """Connections whose replies are read later (redis-py's low level)."""
    conns = []

    def make():
        conn = redis.Connection(host="127.0.0.1", port=shared.port)
        conn.connect()
        conns.append(conn)
        return conn
    yield make
    for conn in conns:
        conn.disconnect()


@pytest.fixture(autouse=True)
def unpaused(c):
    yield
    c.execute_command("CLIENT", "UNPAUSE")


def test_write_pause_holds_writes_not_reads(c, deferred):
    c.set("k", "old")
    assert c.execute_command("CLIENT", "PAUSE", 100000, "WRITE") == b"OK"
    reader, writer = deferred(), deferred()
    writer.send_command("SET", "k", "new")
    writer.send_command("GET", "k")  # pipelined behind the held SET
    reader.send_command("GET", "k")
    assert reader.read_response() == b"old"
    wait_for(lambda: _blocked(c) == 1, message="SET held")
    assert c.get("k") == b"old"
    held = [entry for entry in c.client_list() if entry["cmd"] == "set"]
    assert [entry["flags"] for entry in held] == ["b"]
    c.execute_command("CLIENT", "UNPAUSE")
    assert writer.read_response() == b"OK"
    assert writer.read_response() == b"new"
    assert _blocked(c) == 0


def test_all_pause_holds_reads_until_the_timeout(c, deferred):
    # Under ALL nobody can look (INFO is held too): a read sent after a
    # held write must see the write, so it was held behind it.
    c.set("k", "v")
    writer, reader = deferred(), deferred()
    # one packet: the SET is held right after the PAUSE, before its OK is sent
    writer.send_packed_command(writer.pack_commands(
        [("CLIENT", "PAUSE", 500, "ALL"), ("SET", "k", "new")]))
    assert writer.read_response() == b"OK"
    reader.send_command("GET", "k")
    # the pause ends by itself (the cron looks every 100 ms)
    assert writer.read_response() == b"OK"
    assert reader.read_response() == b"new"
    assert _blocked(c) == 0


def test_a_shorter_pause_does_not_shorten_it(c, deferred):
    c.execute_command("CLIENT", "PAUSE", 100000, "WRITE")
    c.execute_command("CLIENT", "PAUSE", 1, "WRITE")  # the later end is kept
    writer = deferred()
    writer.send_command("SET", "k", "v")
    wait_for(lambda: _blocked(c) == 1, message="SET held")
    time.sleep(0.5)  # several cron turns: a 1 ms pause would have ended
    assert _blocked(c) == 1
    c.execute_command("CLIENT", "UNPAUSE")
    assert writer.read_response() == b"OK"


def test_held_clients_resume_in_the_order_held(c, deferred):
    c.execute_command("CLIENT", "PAUSE", 100000, "WRITE")
    writers = [deferred() for _ in range(4)]
    for i, writer in enumerate(writers):
        writer.send_command("RPUSH", "order", i)
        wait_for(lambda n=i + 1: _blocked(c) == n, message=f"{i + 1} held")
    c.execute_command("CLIENT", "UNPAUSE")
    for i, writer in enumerate(writers):
        assert writer.read_response() == i + 1
    assert c.lrange("order", 0, -1) == [b"0", b"1", b"2", b"3"]


def test_job_commands_under_write_pause(shared, c, deferred):
    c.execute_command("ADDJOB", "q", "before", 0)
    c.execute_command("CLIENT", "PAUSE", 100000, "WRITE")
    adder, getter = deferred(), deferred()
    adder.send_command("ADDJOB", "q", "during", 0)
    wait_for(lambda: _blocked(c) == 1, message="ADDJOB held")
    getter.send_command("GETJOB", "NOHANG", "FROM", "q")
    wait_for(lambda: _blocked(c) == 2, message="GETJOB held (it takes a job: a write)")
    assert c.execute_command("QLEN", "q") == 1  # reads go on
    c.execute_command("CLIENT", "UNPAUSE")
    job_id = adder.read_response()
    assert job_id.startswith(b"D-")
    got = getter.read_response()
    assert got[0][2] == b"before"
    assert c.execute_command("QLEN", "q") == 1


def test_publish_and_scripts_under_write_pause(c, deferred):
    c.execute_command("CLIENT", "PAUSE", 100000, "WRITE")
    pub, script, ro_script = deferred(), deferred(), deferred()
    pub.send_command("PUBLISH", "ch", "m")
    script.send_command("EVAL", "return 1", 0)
    wait_for(lambda: _blocked(c) == 2, message="PUBLISH and EVAL held")
    ro_script.send_command("EVAL", "#!lua flags=no-writes\nreturn 2", 0)
    assert ro_script.read_response() == 2
    c.execute_command("CLIENT", "UNPAUSE")
    assert pub.read_response() == 0
    assert script.read_response() == 1


def test_client_kill_drops_a_held_client_and_its_command(c, deferred):
    c.execute_command("CLIENT", "PAUSE", 100000, "WRITE")
    writer = deferred()
    writer.send_command("CLIENT", "ID")
    writer_id = writer.read_response()
    writer.send_command("SET", "killed", "1")
    wait_for(lambda: _blocked(c) == 1, message="SET held")
    assert c.execute_command("CLIENT", "UNBLOCK", writer_id) == 0  # pause only ends by itself
    assert c.execute_command("CLIENT", "KILL", "ID", writer_id) == 1
    wait_for(lambda: _blocked(c) == 0, message="held client gone")
    c.execute_command("CLIENT", "UNPAUSE")
    assert c.get("killed") is None
    with pytest.raises(redis.ConnectionError):
        writer.read_response()


def test_blocking_reads_and_a_held_push(c, deferred):
    popper = deferred()
    popper.send_command("BLPOP", "list", 0)
    wait_for(lambda: _blocked(c) == 1, message="BLPOP blocked")
    c.execute_command("CLIENT", "PAUSE", 100000, "WRITE")
    pusher = deferred()
    pusher.send_command("LPUSH", "list", "x")
    wait_for(lambda: _blocked(c) == 2, message="LPUSH held")
    c.execute_command("CLIENT", "UNPAUSE")
    assert pusher.read_response() == 1
    assert popper.read_response() == [b"list", b"x"]
    # A BLPOP held by ALL blocks on its key once released.  ALL holds
    # CLIENT UNPAUSE too (Redis 7.0): only the pause's end frees them.
    c.execute_command("CLIENT", "PAUSE", 500, "ALL")
    popper.send_command("BLPOP", "list", 0)  # held, then blocked on the empty list
    unpauser = deferred()
    unpauser.send_command("CLIENT", "UNPAUSE")
    pusher.send_command("LPUSH", "list", "y")
    assert unpauser.read_response() == b"OK"  # (once the pause is over)
    assert pusher.read_response() == 1
    assert popper.read_response() == [b"list", b"y"]


def test_keys_do_not_expire_while_paused(c):
    expired = c.info("stats")["expired_keys"]
    c.set("soon", "v", px=30)
    c.execute_command("CLIENT", "PAUSE", 100000, "WRITE")
    wait_for(lambda: c.get("soon") is None, message="past its time")
    assert c.dbsize() == 1  # still there: neither lazy nor active expiry ran
    assert c.info("stats")["expired_keys"] == expired
    c.execute_command("CLIENT", "UNPAUSE")
    assert c.get("soon") is None
    assert c.info("stats")["expired_keys"] == expired + 1
    assert c.dbsize() == 0


@pytest.mark.skipif(REDIS_SERVER is None, reason="no redis-server to compare with")
@pytest.mark.parametrize("args", [
    ("PAUSE", "abc"), ("PAUSE", "-1"), ("PAUSE", "10", "SOME"), ("PAUSE", "1.5"),
    ("PAUSE",), ("PAUSE", "10", "WRITE", "x"), ("UNPAUSE", "x"),
    ("PAUSE", "0", "write"), ("UNPAUSE",),
])
def test_replies_are_redis_s(c, redis_port, args):
    reference = redis.Redis(port=redis_port)

    def reply(client):
        try:
            return ("ok", client.execute_command("CLIENT", *args))
        except redis.ResponseError as exc:
            return ("error", str(exc))
    assert reply(c) == reply(reference)
    reference.execute_command("CLIENT", "UNPAUSE")
