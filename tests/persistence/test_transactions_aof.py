"""EXEC and script writes in the AOF with real processes: they come back
after a restart, and a MULTI block torn at the tail (a crash mid-write, or
a block never closed) is dropped whole on load, as redis-check-aof and
Redis's loader revert an incomplete MULTI/EXEC."""

import os

import pytest

from trisque.protocol import aof


@pytest.fixture
def aof_server(make_server):
    return make_server(config="appendonly yes\nappendfsync always\n")


def test_exec_and_script_writes_come_back(aof_server):
    c = aof_server.client()
    with c.pipeline(transaction=True) as pipe:
        pipe.set("a", "1").incr("a").rpush("l", "x", "y").execute()
    c.eval("redis.call('set', KEYS[1], ARGV[1]) redis.call('lpop', 'l')", 1, "b", "2")
    c.execute_command("SELECT", 2)
    c.eval("redis.call('set', 'in2', 'x')", 0)
    aof_server.kill()
    aof_server.start()
    c = aof_server.client()
    assert c.get("a") == b"2" and c.get("b") == b"2" and c.lrange("l", 0, -1) == [b"y"]
    assert aof_server.client(db=2).get("in2") == b"x"


@pytest.mark.parametrize("cut", ["inside", "no-exec"])
def test_torn_block_at_the_tail_is_dropped_whole(aof_server, cut):
    c = aof_server.client()
    c.set("before", "1")
    aof_server.stop()
    path = os.path.join(aof_server.dir, "disque.aof")
    block = (aof.command(b"MULTI") + aof.command(b"SET", b"t1", b"x")
             + aof.command(b"SET", b"t2", b"y"))
    with open(path, "ab") as f:
        f.write(block[:-7] if cut == "inside" else block)  # no EXEC either way
    aof_server.start()
    c = aof_server.client()
    assert c.get("before") == b"1"
    assert c.get("t1") is None and c.get("t2") is None
    assert "Truncating the AOF" in aof_server.log() or "Revert incomplete" in aof_server.log()
    c.set("after", "1")  # the file goes on from the truncated point
    aof_server.kill()
    aof_server.start()
    c = aof_server.client()
    assert c.get("after") == b"1" and c.get("t1") is None
