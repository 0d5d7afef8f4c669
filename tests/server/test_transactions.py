"""MULTI/EXEC/DISCARD/WATCH over redis-py (RESP2 and RESP3) against a real
trisque-server, byte for byte against redis-server 7.0 where the reply is
Redis's, and Disque's commands inside MULTI (GETJOB acts as NOHANG)."""

import time

import pytest
import redis

from tests.server.conftest import REDIS_SERVER
from tests.server.util import raw_replies, reads_never_torn

def test_queue_exec_and_runtime_errors(any_c):
    c = any_c
    with c.pipeline(transaction=True) as pipe:
        pipe.set("a", "1").incr("a").lpush("a", "x").get("a")
        replies = pipe.execute(raise_on_error=False)
    assert replies[:2] == [True, 2]
    assert isinstance(replies[2], redis.ResponseError) and "WRONGTYPE" in str(replies[2])
    assert replies[3] == b"2"


def test_queue_time_error_aborts(any_c):
    c = any_c
    c.execute_command("MULTI")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        c.execute_command("GET")
    c.execute_command("SET", "k", "v")  # +QUEUED
    with pytest.raises(redis.ResponseError, match="^Transaction discarded because of previous errors.$"):
        c.execute_command("EXEC")
    assert c.get("k") is None


def test_watch_touched_by_another_client(shared, any_c):
    c = any_c
    other = shared.client()
    c.set("w", "1")
    with c.pipeline() as pipe:
        pipe.watch("w")
        assert pipe.get("w") == b"1"
        other.set("w", "2")
        pipe.multi()
        pipe.set("w", "3")
        with pytest.raises(redis.WatchError):
            pipe.execute()
    assert c.get("w") == b"2"


def test_watch_touched_by_expiry_flush_rename_and_self(any_c):
    c = any_c
    for touch in (lambda: c.pexpire("w", 1) and time.sleep(0.05),
                  lambda: c.flushdb(), lambda: c.rename("w", "w2"),
                  lambda: c.set("w", "mine")):
        c.set("w", "1")
        c.execute_command("WATCH", "w")
        touch()
        c.execute_command("MULTI")
        c.execute_command("GET", "w")
        assert c.execute_command("EXEC") is None
        c.delete("w", "w2")


SEQUENCES = [
    [b"MULTI", b"MULTI", b"SET a 1", b"EXEC"],
    [b"EXEC", b"DISCARD", b"MULTI", b"WATCH a", b"SET a x", b"INCR a", b"EXEC"],
    [b"MULTI", b"NOSUCH", b"SET a 1", b"EXEC", b"GET a"],
    [b"MULTI", b"BLPOP l 0", b"LPUSH l x", b"BLPOP l 0", b"EXEC"],
    [b"HELLO 3", b"WATCH a", b"SET a 1", b"MULTI", b"EXEC"],
    [b"HELLO 3", b"MULTI", b"SET a 1", b"GET nokey", b"EXEC"],
    [b"SET w 1", b"PEXPIRE w 1", b"#sleep", b"WATCH w", b"SET w 2", b"MULTI", b"EXEC"],
    [b"WATCH a", b"MULTI", b"DISCARD", b"SET a 1", b"MULTI", b"EXEC"],
    [b"MULTI", b"EVAL return{1,2} 0", b"SELECT 1", b"SET x 1", b"EXEC", b"GET x"],
    [b"MULTI", b"SET a 1", b"SHUTDOWN", b"EXEC", b"GET a"],  # (no-multi: refused, not run)
    [b"MULTI", b"SET a 1", b"SAVE", b"EXEC", b"GET a"],
]


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not installed")
@pytest.mark.parametrize("sequence", SEQUENCES, ids=range(len(SEQUENCES)))
def test_same_bytes_as_redis(shared, redis_port, sequence):
    commands = [line.split() for line in sequence]
    shared.client().execute_command("DEBUG", "FLUSHALL")
    redis.Redis(port=redis_port).flushall()
    mine = raw_replies(shared.port, commands)
    theirs = raw_replies(redis_port, commands)
    for argv, a, b in zip(commands, mine, theirs):
        if argv[0] == b"HELLO":
            continue  # (server name and version differ by design)
        # Disque's unknown-command text, without Redis's argument excerpt
        b = b.replace(b", with args beginning with: ", b"")
        assert a == b, (argv, a, b)


def test_disque_commands_inside_multi(shared):
    c = shared.client()
    c.execute_command("DEBUG", "FLUSHALL")
    c.execute_command("MULTI")
    c.execute_command("GETJOB", "FROM", "q")  # would block: NOHANG here
    c.execute_command("ADDJOB", "q", "body", 0)
    c.execute_command("GETJOB", "FROM", "q")
    empty, job_id, got = c.execute_command("EXEC")
    assert empty is None
    assert got == [[b"q", job_id, b"body"]]


def test_exec_is_atomic_for_other_clients(shared):
    c = shared.client()
    c.execute_command("DEBUG", "FLUSHALL")
    counter = iter(range(10**6))

    def write_pair():
        i = next(counter)
        with c.pipeline(transaction=True) as pipe:
            pipe.set("x", i).set("y", i).execute()
    seen = reads_never_torn(shared, write_pair)
    assert seen and all(a == b for a, b in seen)
