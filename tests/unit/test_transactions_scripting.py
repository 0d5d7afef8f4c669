"""MULTI/EXEC and scripts in the core, on a fake clock: WATCH and expiry to
the millisecond, the AOF block of an EXEC and of a script, the time limit
(-BUSY for others, SCRIPT KILL, -UNKILLABLE) driven by the clock the hook
reads, and Disque's commands inside EXEC."""

from trisque.core.admin.config import Config
from trisque.core.keyspace.scripting import execute_while_busy
from trisque.core.node import Node
from trisque.core.table import COMMANDS

from tests.unit.test_keyspace import RecordingLog


class Clock:
    def __init__(self, now_s=1000.0, step_s=0.0):
        self.now_s = now_s
        self.step_s = step_s  # advanced at every read (a script "taking time")

    def __call__(self):
        self.now_s += self.step_s
        return self.now_s


def make_node(step_s=0.0):
    clock = Clock(step_s=step_s)
    node = Node(Config(), "a" * 40, clock, table=COMMANDS)
    return node, clock


def run(node, client, *argv):
    node.execute(client, [a if isinstance(a, bytes) else str(a).encode() for a in argv])
    out = b"".join(client.out)
    client.out.clear()
    return out


def test_watched_key_expiring_aborts_exec_to_the_ms():
    node, clock = make_node()
    c = node.add_client()
    run(node, c, "SET", "k", "v", "PX", 100)
    run(node, c, "WATCH", "k")
    clock.now_s += 0.099
    run(node, c, "MULTI")
    run(node, c, "GET", "k")
    assert run(node, c, "EXEC") == b"*1\r\n$1\r\nv\r\n"
    run(node, c, "WATCH", "k")
    clock.now_s += 0.001  # now expired, nobody looked it up
    run(node, c, "MULTI")
    assert run(node, c, "EXEC") == b"*-1\r\n"


def test_key_expired_before_watch_is_not_a_change():
    node, clock = make_node()
    c, other = node.add_client(), node.add_client()
    run(node, c, "SET", "k", "v", "PX", 10)
    clock.now_s += 0.02
    run(node, c, "WATCH", "k")  # (still in the dict, logically gone)
    run(node, other, "GET", "k")  # deletes it: logically unchanged
    run(node, c, "MULTI")
    run(node, c, "SET", "k", "new")
    assert run(node, c, "EXEC") == b"*1\r\n+OK\r\n"
    run(node, c, "WATCH", "k")
    run(node, other, "SET", "k", "x")
    run(node, c, "MULTI")
    assert run(node, c, "EXEC") == b"*-1\r\n"
    assert node.keyspace.dbs[0].watched == {}  # EXEC forgot the watched keys


def test_exec_and_script_writes_are_one_aof_block():
    node, _ = make_node()
    log = node.log = RecordingLog()
    c = node.add_client()
    run(node, c, "MULTI")
    run(node, c, "SET", "a", "1")
    run(node, c, "GET", "a")
    run(node, c, "INCR", "a")
    run(node, c, "EXEC")
    assert [r[0] for r in log.records] == [b"MULTI", b"SELECT", b"SET", b"INCR", b"EXEC"]
    log.records.clear()
    run(node, c, "MULTI")
    run(node, c, "GET", "a")
    run(node, c, "EXEC")
    run(node, c, "EVAL", "return redis.call('get', 'a')", 0)
    assert log.records == []  # nothing written: no block
    run(node, c, "EVAL", "redis.call('set', 'b', ARGV[1]) redis.call('del', 'a')", 0, "x")
    assert log.records == [[b"MULTI"], [b"SET", b"b", b"x"], [b"DEL", b"a"], [b"EXEC"]]


def test_disque_commands_inside_exec_do_not_wait():
    node, _ = make_node()
    c = node.add_client()
    run(node, c, "MULTI")
    run(node, c, "GETJOB", "TIMEOUT", 0, "FROM", "q")
    run(node, c, "ADDJOB", "q", "body", 0)
    run(node, c, "BLPOP", "l", 0)
    reply = run(node, c, "EXEC")
    assert reply.startswith(b"*3\r\n*-1\r\n+D-") and reply.endswith(b"*-1\r\n")
    assert c.blocked is None


def test_busy_script_others_get_busy_and_script_kill_ends_it():
    node, _ = make_node(step_s=0.05)  # every clock read: 50 ms later
    node.config.busy_reply_threshold = 1000
    looper, other = node.add_client(), node.add_client()
    turns = []

    def on_busy():  # the shell, serving another client from inside the hook
        turns.append(node.clock())
        if len(turns) == 1:
            assert run_busy(other, "GET", "x") == (
                b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL "
                b"or SHUTDOWN NOSAVE.\r\n")
            assert run_busy(other, "MULTI") == b"+OK\r\n"
            run_busy(other, "SET", "x", "1")  # -BUSY, and the transaction is aborted
            assert run_busy(other, "EXEC").startswith(
                b"-EXECABORT Transaction discarded because of: BUSY ")
        elif len(turns) == 3:
            assert run_busy(other, "SCRIPT", "KILL") == b"+OK\r\n"

    def run_busy(client, *argv):
        execute_while_busy(node, client, [str(a).encode() for a in argv])
        out = b"".join(client.out)
        client.out.clear()
        return out

    node.on_busy = on_busy
    reply = run(node, looper, "EVAL", "local i = 0 while true do i = i + 1 end", 0)
    assert reply.startswith(b"-ERR Script killed by user with SCRIPT KILL... script: ")
    assert len(turns) == 3
    assert run(node, other, "SCRIPT", "KILL") == b"-NOTBUSY No scripts in execution right now.\r\n"
    assert run(node, other, "GET", "x") == b"$-1\r\n"


def test_script_that_wrote_is_unkillable():
    node, _ = make_node(step_s=0.05)
    node.config.busy_reply_threshold = 100
    looper, other = node.add_client(), node.add_client()
    answers = []

    def on_busy():
        if not answers:
            execute_while_busy(node, other, [b"SCRIPT", b"KILL"])
            answers.append(b"".join(other.out))
            other.out.clear()
            execute_while_busy(node, other, [b"SHUTDOWN", b"NOSAVE"])

    node.on_busy = on_busy
    node.on_shutdown = lambda mode: answers.append(mode)
    log = node.log = RecordingLog()
    reply = run(node, looper, "EVAL", "redis.call('set','w','1') while true do end", 0)
    assert answers[0].startswith(b"-UNKILLABLE Sorry the script already executed write")
    assert reply.startswith(b"-ERR Script killed by user")
    # its block ends with DISCARD: the loader drops the half-done script
    assert [r[0] for r in log.records] == [b"MULTI", b"SELECT", b"SET", b"DISCARD"]
    run(node, other, "SET", "after", "1")  # a SELECT again: the dropped one does not count
    assert [r[0] for r in log.records[4:]] == [b"SELECT", b"SET"]


def test_under_the_threshold_nobody_is_served():
    node, _ = make_node(step_s=0.001)
    node.on_busy = lambda: (_ for _ in ()).throw(AssertionError("served"))
    c = node.add_client()
    assert run(node, c, "EVAL", "local s = 0 for i = 1, 300000 do s = s + i end return s", 0) \
        == b":45000150000\r\n"


def test_lua_number_and_table_conversions():
    node, _ = make_node()
    c = node.add_client()
    assert run(node, c, "EVAL", "return {1, 2.9, -2.9, 'x', false, true, nil, 5}", 0) == \
        b"*6\r\n:1\r\n:2\r\n:-2\r\n$1\r\nx\r\n$-1\r\n:1\r\n"
    assert run(node, c, "EVAL", "return redis.call('incrbyfloat', 'f', 0.1)", 0) == \
        b"$19\r\n0.10000000000000001\r\n"  # (%.17g, as Redis)
    assert run(node, c, "EVAL", "return 2^63", 0) == b":-9223372036854775808\r\n"
    assert run(node, c, "EVAL", "local t = {} t[1] = t return t", 0).count(b"*1\r\n") == 100
