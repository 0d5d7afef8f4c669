"""Lists and clients blocked on keys (core/keyspace/lists.py,
commands_lists.py, blocking.py) in the node core on a fake clock:
timeouts to the millisecond, first come first served, several keys,
wake-ups by pushes, MULTI-like atomic sections, type changes under a
blocked client, clean-up on disconnect, memory and the AOF records."""

import pytest

from tests.unit.conftest import START, Core, is_error
from tests.unit.test_keyspace import RecordingLog
from trisque.core.client import Client
from trisque.core.keyspace.lists import List
from trisque.core.keyspace.types import WRONGTYPE


def blocking(core):
    return core.node.keyspace.blocking


def test_fractional_timeout_to_the_millisecond(core):
    a = core.client()
    assert core("BLPOP", "k", "0.1", client=a) is None
    core.advance(0.0985)
    assert core.replies(a) == []
    core.advance(0.002)  # (the fake clock is a float: half a ms of slack either side)
    assert core.replies(a) == [None]
    assert blocking(core).count == 0 and blocking(core).waiting[0] == {}


@pytest.mark.parametrize("timeout, ms", [("1e-10", 1), ("0.0001", 1), ("0.0015", 2),
                                         ("2", 2000), ("-0.0001", None)])
def test_timeout_is_ceil_of_milliseconds(core, timeout, ms):
    a = core.client()
    assert core("BRPOP", "k", timeout, client=a) is None
    if ms is None:  # ceil(-0.1) is 0: forever, as Redis 7.0
        core.advance(1000)
        assert core.replies(a) == [] and a.blocked is not None
        return
    core.advance((ms - 0.5) / 1000)
    assert core.replies(a) == []
    core.advance(0.001)
    assert core.replies(a) == [None]


@pytest.mark.parametrize("timeout, error", [
    ("-1", "ERR timeout is negative"), ("inf", "ERR timeout is negative"),
    ("1e400", "ERR timeout is negative"), ("nan", "ERR timeout is not a float or out of range"),
    ("abc", "ERR timeout is not a float or out of range"), ("", "ERR timeout is not a float or out of range"),
])
def test_bad_timeouts(core, timeout, error):
    for argv in (["BLPOP", "k", timeout], ["BRPOPLPUSH", "a", "b", timeout],
                 ["BLMOVE", "a", "b", "LEFT", "RIGHT", timeout],
                 ["BLMPOP", timeout, 1, "k", "LEFT"]):
        reply = core(*argv)
        assert is_error(reply) and str(reply) == error, argv


def test_zero_waits_forever_and_a_push_wakes(core):
    a = core.client()
    assert core("BLPOP", "k", 0, client=a) is None
    core.advance(3600)
    assert core.replies(a) == []
    assert core("RPUSH", "k", "v") == 1  # the pusher sees the length before serving
    assert core.replies(a) == [[b"k", b"v"]]
    assert core("EXISTS", "k") == 0


def test_hundred_clients_served_first_come_first_served(core):
    clients = [core.client() for _ in range(100)]
    for c in clients:
        assert core("BRPOP", "q", 0, client=c) is None
    assert core.node.blocked_clients() == 100
    assert core("LPUSH", "q", *[f"v{i}" for i in range(60)]) == 60
    # BRPOP takes from the tail: the first pushed goes to the first blocked.
    assert [core.replies(c) for c in clients[:60]] == [[[b"q", b"v%d" % i]] for i in range(60)]
    assert all(core.replies(c) == [] for c in clients[60:])
    assert core.node.blocked_clients() == 40
    for i in range(40):
        core("LPUSH", "q", f"w{i}")
        assert core.replies(clients[60 + i]) == [[b"q", b"w%d" % i]]
    assert core("EXISTS", "q") == 0 and blocking(core).waiting[0] == {}


def test_several_keys_first_non_empty_in_order(core):
    core("RPUSH", "b", "1")
    core("RPUSH", "c", "2")
    assert core("BLPOP", "a", "b", "c", 0) == [b"b", b"1"]
    a = core.client()
    assert core("BLPOP", "x", "y", "x", 0, client=a) is None
    assert blocking(core).waiting[0][b"x"] == {a: None}  # once per key
    core("RPUSH", "y", "late")
    assert core.replies(a) == [[b"y", b"late"]]
    assert blocking(core).waiting[0] == {}


def test_wrong_type_answered_at_once_in_key_order(core):
    core("SET", "s", "v")
    core("RPUSH", "l", "1")
    assert str(core("BLPOP", "nokey", "s", "l", 0)) == WRONGTYPE
    assert core("BLPOP", "nokey", "l", "s", 0) == [b"l", b"1"]


def test_a_key_that_became_a_string_keeps_its_waiter(core):
    a = core.client()
    core("BLPOP", "k", 0, client=a)
    core("SET", "k", "str")  # Redis 7.0: no wake-up for another type
    assert core.replies(a) == [] and a.blocked is not None
    core("DEL", "k")
    core("LPUSH", "k", "v")
    assert core.replies(a) == [[b"k", b"v"]]


def test_blmove_to_a_wrong_type_destination(core):
    core("SET", "dst", "str")
    core("RPUSH", "full", "1")
    assert str(core("BLMOVE", "full", "dst", "LEFT", "RIGHT", 0)) == WRONGTYPE
    a, b = core.client(), core.client()
    core("DEL", "dst")
    core("BLMOVE", "src", "dst", "LEFT", "RIGHT", 0, client=a)
    core("BLPOP", "src", 0, client=b)
    core("SET", "dst", "str")
    core("RPUSH", "src", "1")
    # Redis 7.0: the mover gets WRONGTYPE and nothing moves; the next is served.
    assert str(core.replies(a)[0]) == WRONGTYPE
    assert core.replies(b) == [[b"src", b"1"]]


def test_chained_moves_serve_the_destination_waiters(core):
    a, b = core.client(), core.client()
    core("BRPOPLPUSH", "k1", "k2", 0, client=a)
    core("BLPOP", "k2", 0, client=b)
    core("RPUSH", "k1", "v")
    assert core.replies(a) == [b"v"]
    assert core.replies(b) == [[b"k2", b"v"]]
    assert core("EXISTS", "k1", "k2") == 0


def test_served_after_the_whole_command(core):
    a = core.client()
    core("BLPOP", "k", 0, client=a)
    core("LPUSH", "k", "a", "b", "c")
    assert core.replies(a) == [[b"k", b"c"]]
    assert core("LRANGE", "k", 0, -1) == [b"b", b"a"]


def test_blmpop_served_with_count(core):
    a = core.client(proto=3)
    core("BLMPOP", 0, 2, "k0", "k", "RIGHT", "COUNT", 2, client=a)
    core("RPUSH", "k", "a", "b", "c")
    assert core.replies(a) == [[b"k", [b"c", b"b"]]]


def test_atomic_section_serves_once_after_the_whole(core):
    """What EXEC and scripts do: keys made ready inside are served after,
    with what is left; blocking commands inside answer as timed out."""
    a = core.client()
    core("BLPOP", "k", 0, client=a)
    node = core.node
    with node.keyspace.blocking.atomic():
        core("RPUSH", "k", "a")
        core("LPOP", "k")
        core("RPUSH", "k", "b")
        assert core.replies(a) == []
        assert core("BLPOP", "nothing", 0) is None  # null at once, not blocked
        assert core("BRPOPLPUSH", "nothing", "d", 0) is None
        assert core.default.blocked is None
    core("PING")  # the next command's end serves the keys made ready
    assert core.replies(a) == [[b"k", b"b"]]


def test_timeout_null_in_each_protocol(core):
    a2, a3 = core.client(proto=2), core.client(proto=3)
    core("BLMOVE", "k", "d", "LEFT", "LEFT", "0.01", client=a2)
    core("BLMOVE", "k", "d", "LEFT", "LEFT", "0.01", client=a3)
    core.advance(0.01)
    assert b"".join(a2.out) == b"*-1\r\n" and b"".join(a3.out) == b"_\r\n"


def test_disconnect_and_client_unblock_clean_up(core):
    a, b, c = core.client(), core.client(), core.client()
    for x in (a, b, c):
        core("BLPOP", "k", "j", 5, client=x)
    core.node.remove_client(a)
    assert list(blocking(core).waiting[0][b"k"]) == [b, c]
    assert core("CLIENT", "UNBLOCK", b.id) == 1
    assert core.replies(b) == [None]
    assert core("CLIENT", "UNBLOCK", c.id, "ERROR") == 1
    assert str(core.replies(c)[0]) == "UNBLOCKED client unblocked via CLIENT UNBLOCK"
    assert core("CLIENT", "UNBLOCK", c.id) == 0
    assert blocking(core).count == 0 and blocking(core).waiting[0] == {}
    assert core.node.deadlines.next_ms() is None
    core.advance(10)  # no late timeout reply for anyone
    assert core.replies(b) == [] and core.replies(c) == []


def test_blocked_in_another_db(core):
    a = core.client()
    core("SELECT", 2, client=a)
    core("BLPOP", "k", 0, client=a)
    core("RPUSH", "k", "db0")
    assert core.replies(a) == []
    core("MOVE", "k", 2)  # a key created in db 2 by MOVE wakes it
    assert core.replies(a) == [[b"k", b"db0"]]


def test_rename_onto_a_waited_key_wakes(core):
    a = core.client()
    core("BLPOP", "k", 0, client=a)
    core("RPUSH", "other", "v")
    core("RENAME", "other", "k")
    assert core.replies(a) == [[b"k", b"v"]]


def test_served_pops_are_logged_as_pops():
    core = Core()
    log = core.node.log = RecordingLog()
    a, b, c = core.client(), core.client(), core.client()
    core("BLPOP", "k", 0, client=a)
    core("BLMPOP", 0, 1, "k", "RIGHT", "COUNT", 5, client=b)
    core("BLMOVE", "m", "d", "RIGHT", "LEFT", 0, client=c)
    core("RPUSH", "k", "1", "2", "3")
    core("RPUSH", "m", "x")
    assert core("LMPOP", 1, "d", "LEFT", "COUNT", 9) == [b"d", [b"x"]]
    assert log.records == [
        [b"SELECT", b"0"], [b"RPUSH", b"k", b"1", b"2", b"3"], [b"LPOP", b"k"],
        [b"RPOP", b"k", b"2"], [b"RPUSH", b"m", b"x"], [b"LMOVE", b"m", b"d", b"RIGHT", b"LEFT"],
        [b"LPOP", b"d", b"1"]]
    copy = Core()
    client = Client(0)
    for argv in log.records:
        copy.node.keyspace.replay(client, argv)
    assert copy.node.keyspace.dbs[0].keys == {} == core.node.keyspace.dbs[0].keys
    assert copy.node.used_memory == core.node.used_memory


def test_memory_follows_every_change_and_returns_to_baseline(core):
    base = core.node.used_memory
    core("RPUSH", "k", *["x" * i for i in range(50)])
    core("LSET", "k", 3, "y" * 1000)
    core("LINSERT", "k", "BEFORE", "x", "zz")
    core("LREM", "k", 0, "xx")
    core("LTRIM", "k", 1, -2)
    core("LMOVE", "k", "k2", "LEFT", "RIGHT")
    lst = core.node.keyspace.dbs[0].keys[b"k"]
    assert isinstance(lst, List)
    assert lst.nbytes == List(lst).nbytes  # the running count is exact
    assert core.node.used_memory > base
    core("LPOP", "k", 1000)
    core("RPOP", "k2")
    assert core.node.used_memory == base


def test_list_edges_as_redis(core):
    assert core("RPUSH", "x", "a", "b", "c", "a", "b", "c") == 6
    assert core("RPOP", "x", 0) == []
    assert core("LPOP", "nokey", 0) is None
    assert str(core("LPOP", "x", -1)) == "ERR value is out of range, must be positive"
    assert str(core("LPOP", "x", 1, 2)) == "ERR wrong number of arguments for 'lpop' command"
    assert core("LPOS", "x", "a", "RANK", -1, "COUNT", 0) == [3, 0]
    assert core("LPOS", "x", "a", "RANK", 2, "COUNT", 5, "MAXLEN", 4) == [3]
    assert core("LPOS", "x", "a", "RANK", -(2**63)) == 3
    assert core("LRANGE", "x", -100, 100) == [b"a", b"b", b"c", b"a", b"b", b"c"]
    assert core("LRANGE", "x", 4, -1) == [b"b", b"c"]
    assert str(core("LSET", "nokey", "abc", "v")) == "ERR no such key"
    assert str(core("LSET", "x", 6, "v")) == "ERR index out of range"
    assert core("LINSERT", "x", "AFTER", "zz", "v") == -1
    assert str(core("LMPOP", 0, "x", "LEFT")) == "ERR numkeys should be greater than 0"
    assert str(core("LMPOP", 1, "x", "LEFT", "COUNT", 0)) == "ERR count should be greater than 0"
    assert core("LMPOP", 1, "x", "LEFT", "COUNT", 2) == [b"x", [b"a", b"b"]]
    assert core("RPOPLPUSH", "x", "x") == b"c"
    assert core("OBJECT", "ENCODING", "x") == b"quicklist" and core("TYPE", "x") == b"list"
    core("SET", "s", "v")
    assert str(core("RPOPLPUSH", "x", "s")) == WRONGTYPE
    assert core("LMOVE", "nokey", "s", "LEFT", "LEFT") is None


def test_snapshot_rebuilds_lists(core):
    core("RPUSH", "big", *[str(i) for i in range(150)])
    core("RPUSH", "small", "\x00\xff")
    core("PEXPIRE", "small", 100000)
    records = []
    from trisque.protocol import aof
    data = b"".join(core.node.keyspace.snapshot())
    pos = 0
    while pos < len(data):
        argv, pos = aof.parse(data, pos, len(data))
        records.append(argv)
    assert [r[0] for r in records] == [b"SELECT", b"RPUSH", b"RPUSH", b"RPUSH", b"RPUSH",
                                       b"PEXPIREAT"]
    rebuilt = Core()
    client = Client(0)
    for argv in records:
        rebuilt.node.keyspace.replay(client, argv)
    assert rebuilt.node.keyspace.dbs[0].keys == core.node.keyspace.dbs[0].keys
    assert rebuilt.node.keyspace.dbs[0].expires == {b"small": int(START * 1000) + 100000}
