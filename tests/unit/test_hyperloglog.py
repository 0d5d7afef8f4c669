"""HyperLogLogs in the core (core/keyspace/hyperloglog.py and its
commands): the fast sparse update against the byte-level one, the dense
packing both ways, the estimate's accuracy, the commands' errors, and the
AOF: random streams logged on one node replay to the same bytes and
memory on another (and an AOF rewrite's snapshot too)."""

import random

import pytest

from tests.server import keyspace_gen_bits
from tests.unit.conftest import Core, is_error
from tests.unit.test_keyspace import RecordingLog, _state
from trisque.core.client import Client
from trisque.core.keyspace import hyperloglog as hll
from trisque.protocol import aof


def test_dense_packing_round_trips():
    rng = random.Random(1)
    raw = bytes(rng.getrandbits(6) for _ in range(hll.REGISTERS))
    value = bytearray(hll.MAGIC + bytes(12)) + hll.dense_body(raw)
    assert len(value) == hll.DENSE_SIZE
    assert hll.dense_registers(value) == raw
    # dense_set changes exactly one register, and only upwards.
    for _ in range(2000):
        index, count = rng.randrange(hll.REGISTERS), rng.randrange(1, 64)
        before = hll.dense_registers(value)
        grew = hll.dense_set(value, index, count)
        after = hll.dense_registers(value)
        assert grew == (count > before[index])
        assert after[index] == max(before[index], count)
        assert after[:index] == before[:index] and after[index + 1:] == before[index + 1:]


@pytest.mark.parametrize("seed", range(4))
def test_fast_sparse_updates_match_the_byte_level_algorithm(seed):
    """Sparse.set (an opcode list, bisect) and sparse_set_bytes (Redis's
    walk over the bytes) give the same bytes, the same answers and promote
    at the same point."""
    rng = random.Random(seed)
    max_bytes = rng.choice([100, 300, 3000])
    fast = hll.new_hll()
    slow = hll.new_hll()
    for _ in range(3000):
        index = rng.randrange(hll.REGISTERS) if rng.random() < 0.7 else rng.randrange(40)
        count = rng.choice([1, 1, 1, 2, 2, 3, 4, 5, 7, 31, 32, 33])
        sparse = hll.Sparse.decode(fast)
        assert sparse is not None
        status = sparse.set(index, count, max_bytes)
        expected = hll.sparse_set_bytes(slow, index, count, max_bytes)
        assert status == expected
        if status == hll._PROMOTE:
            break
        if status:
            fast[hll.HEADER:] = sparse.encode()
        assert fast == slow and sparse.size == len(slow)
        assert hll.sparse_registers(fast) == sparse.registers()
    assert status == hll._PROMOTE  # the runs grew past max_bytes or a value past 32


def test_estimates_within_redis_error_bounds():
    value = hll.new_hll()
    exact = 0
    for target in (10, 100, 1000, 10000, 50000):
        elements = [b"element-%d" % i for i in range(exact, target)]
        hll.add(value, elements, 3000)
        exact = target
        card = hll.count(value)
        assert abs(card - exact) <= max(1, exact * hll.SELF_TEST_ERROR * 6)
        raw = hll.registers(value)
        assert hll.estimate(hll.histogram(raw)) == card
    assert value[4] == hll.DENSE


def test_commands_errors_and_cache(core):
    core("SET", "s", "not an hll")
    core("RPUSH", "l", "x")
    assert is_error(core("PFADD", "s", "a"), "WRONGTYPE Key is not a valid HyperLogLog string value.")
    assert is_error(core("PFCOUNT", "l"), "WRONGTYPE Operation against a key")
    assert is_error(core("PFMERGE", "d", "s"), "WRONGTYPE Key is not a valid HyperLogLog")
    assert is_error(core("PFDEBUG", "GETREG", "nokey"), "ERR The specified key does not exist")
    assert core("PFADD", "h", "a", "b", "c") == 1
    assert core("PFADD", "h", "a") == 0
    assert core("GETRANGE", "h", 15, 15) == b"\x80"  # the cache is stale
    assert core("PFCOUNT", "h") == 3
    assert core("GETRANGE", "h", 8, 15) == b"\x03" + bytes(7)  # cached
    assert core("PFDEBUG", "ENCODING", "h") == b"sparse"
    assert is_error(core("PFDEBUG", "BOGUS", "h"), "ERR Unknown PFDEBUG subcommand 'BOGUS'")
    assert core("PFDEBUG", "DECODE", "h").startswith(b"Z:")
    assert core("PFDEBUG", "TODENSE", "h") == 1 and core("PFDEBUG", "TODENSE", "h") == 0
    assert core("STRLEN", "h") == hll.DENSE_SIZE
    assert is_error(core("PFDEBUG", "DECODE", "h"), "ERR HLL encoding is not sparse")
    assert core("PFCOUNT", "h") == 3
    core("SETRANGE", "h", 4, b"\x01")  # a dense body called sparse
    assert core("PFCOUNT", "h") == 3  # (the cache is still valid: no look at the body)
    core("SETRANGE", "h", 15, b"\x80")
    assert is_error(core("PFCOUNT", "h"), "INVALIDOBJ Corrupted HLL object detected")
    assert core("PFSELFTEST") == b"OK"


def _hll_stream(seed, count):
    rng = random.Random(seed)
    gens = [g for name in ("setup", "hll") for g in keyspace_gen_bits.GENERATORS[name]]
    out = []
    while len(out) < count:
        argv = rng.choice(gens)(rng, 0)
        if argv[0] != b"CONFIG":  # (a replay uses the file's hll-sparse-max-bytes)
            out.append(argv)
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_hll_records_replay_to_the_same_bytes(seed):
    source = Core()
    log = source.node.log = RecordingLog()
    for argv in _hll_stream(seed, 800):
        source.run(*argv)
    copy = Core()
    client = Client(0)
    for argv in log.records:
        copy.node.keyspace.replay(client, argv)
    assert _state(copy.node) == _state(source.node)
    assert copy.node.used_memory == source.node.used_memory
    rebuilt = Core()
    data = b"".join(source.node.keyspace.snapshot())
    pos = 0
    while pos < len(data):
        argv, pos = aof.parse(data, pos, len(data))
        rebuilt.node.keyspace.replay(client, argv)
    assert _state(rebuilt.node) == _state(source.node)


def test_a_replay_under_a_larger_sparse_limit_still_ends_dense():
    """PFADD's promotion is logged (PFDEBUG TODENSE): a node restarted
    with a larger hll-sparse-max-bytes gets the same bytes back."""
    source = Core()
    log = source.node.log = RecordingLog()
    source("PFADD", "h", *[b"e%d" % i for i in range(2000)])
    assert source("PFDEBUG", "ENCODING", "h") == b"dense"
    copy = Core()
    copy("CONFIG", "SET", "hll-sparse-max-bytes", "20000")
    client = Client(0)
    for argv in log.records:
        copy.node.keyspace.replay(client, argv)
    assert _state(copy.node) == _state(source.node)
