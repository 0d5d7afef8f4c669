"""Bitmaps in the core (core/keyspace/bits.py, commands_bits.py): the bit
helpers against bit-by-bit references, BITFIELD's overflow rules against
arbitrary-precision arithmetic, memory accounting of in-place growth, and
the AOF: a random stream of bit commands logged on one node and replayed
on another gives the same keys and memory."""

import random

import pytest

from tests.server import keyspace_gen_bits
from tests.unit.conftest import Core, is_error
from tests.unit.test_keyspace import RecordingLog, _state
from trisque.core.client import Client
from trisque.core.keyspace import bits
from trisque.core.keyspace.keyspace import KEY_OVERHEAD
from trisque.core.keyspace.strings import STRING_OVERHEAD


def bit_list(data):
    return [(byte >> (7 - i)) & 1 for byte in data for i in range(8)]


@pytest.mark.parametrize("seed", range(5))
def test_bit_helpers_match_bit_by_bit_references(seed):
    rng = random.Random(seed)
    for _ in range(300):
        data = bytes(rng.choice([0, 0xFF, rng.randrange(256)]) for _ in range(rng.randint(0, 40)))
        ref = bit_list(data)
        start, end = sorted(rng.randrange(max(len(data), 1)) for _ in range(2))
        assert bits.popcount(data, start, end) == sum(ref[start * 8:end * 8 + 8])
        for bit in (0, 1):
            expected = ref.index(bit) if bit in ref else (-1 if bit else len(ref))
            assert bits.first_bit(data, bit) == expected
        width = rng.randint(1, 64)
        offset = rng.randint(0, len(ref) + 16)
        padded = ref + [0] * (offset + width)
        unsigned = int("".join(map(str, padded[offset:offset + width])), 2)
        assert bits.get_field(data, offset, width, False) == unsigned
        signed = unsigned - (1 << width) if padded[offset] else unsigned
        assert bits.get_field(data, offset, width, True) == signed
        buf = bytearray(data) + bytearray((offset + width + 7) // 8)
        value = rng.getrandbits(width)
        bits.set_field(buf, offset, width, value)
        after = bit_list(buf)
        assert after[offset:offset + width] == [int(c) for c in format(value, f"0{width}b")]
        assert after[:offset] == bit_list(bytes(buf))[:offset] == (ref + [0] * offset)[:offset]


@pytest.mark.parametrize("seed", range(3))
def test_bitfield_overflow_rules(seed):
    """In range or not, wrap, saturate or fail as the arithmetic says (the
    cases Redis's own bitfield.tcl fuzzes, with exact integers)."""
    rng = random.Random(seed)
    for _ in range(2000):
        width = rng.randint(1, 64)
        signed = width == 64 or rng.random() < 0.5
        low, high = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
        value = rng.randint(low, high)
        incr = max(min(rng.randint(2 * low - 1, 2 * high + 1), (1 << 63) - 1), -(1 << 63))
        check = bits.signed_overflow if signed else bits.unsigned_overflow
        total = value + incr
        overflow, limit = check(value, incr, width, bits.SAT)
        if total > high:
            assert (overflow, limit) == (1, high)
        elif total < low:
            assert (overflow, limit) == (-1, low)
        else:
            assert overflow == 0
        overflow, limit = check(value, incr, width, bits.WRAP)
        if low <= total <= high:
            assert overflow == 0
        else:
            assert overflow == 1 and limit == (total - low) % (1 << width) + low


def test_setbit_grows_in_place_and_counts_memory(core):
    used = core.node.used_memory
    assert core("SETBIT", "k", 7, 1) == 0
    assert core.node.used_memory == used + KEY_OVERHEAD + 1 + STRING_OVERHEAD + 1
    assert core("SETBIT", "k", 8 * 1000 - 1, 1) == 0
    assert core.node.used_memory == used + KEY_OVERHEAD + 1 + STRING_OVERHEAD + 1000
    assert core("STRLEN", "k") == 1000
    assert type(core.node.keyspace.dbs[0].keys[b"k"]) is bytearray
    assert core("OBJECT", "ENCODING", "k") == b"raw"
    assert core("BITCOUNT", "k") == 2


def test_offsets_past_proto_max_bulk_len_are_refused(core):
    for offset in (4294967296, -1, "1.0", "x", ""):
        assert is_error(core("SETBIT", "k", offset, 1), "ERR bit offset is not an integer or out of range")
        assert is_error(core("GETBIT", "k", offset), "ERR bit offset is not an integer or out of range")
    assert is_error(core("BITFIELD", "k", "SET", "u8", "#536870912", 1), "ERR bit offset")
    assert core("CONFIG", "SET", "proto-max-bulk-len", "1024") == b"OK"
    assert core("SETBIT", "k", 8 * 1024 - 1, 1) == 0  # the last bit allowed
    assert core("STRLEN", "k") == 1024
    assert is_error(core("SETBIT", "k", 8 * 1024, 1), "ERR bit offset")
    # The AOF replays what was allowed when it was written.
    core.node.keyspace.replay(Client(0), [b"SETBIT", b"k", b"%d" % (8 * 1024 + 7), b"1"])
    assert core("STRLEN", "k") == 1025


def test_wrong_types_and_argument_errors(core):
    core("RPUSH", "l", "x")
    for argv in (("SETBIT", "l", 0, 1), ("GETBIT", "l", 0), ("BITCOUNT", "l"),
                 ("BITPOS", "l", 1), ("BITOP", "AND", "d", "l"), ("BITFIELD", "l", "GET", "u8", 0)):
        assert is_error(core(*argv), "WRONGTYPE")
    assert is_error(core("SETBIT", "k", 0, 2), "ERR bit is not an integer or out of range")
    assert is_error(core("BITPOS", "k", 2), "ERR The bit argument must be 1 or 0.")
    assert is_error(core("BITOP", "NOT", "d", "a", "b"),
                    "ERR BITOP NOT must be called with a single source key.")
    assert is_error(core("BITFIELD", "k", "GET", "u64", 0), "ERR Invalid bitfield type.")
    assert is_error(core("BITFIELD", "k", "OVERFLOW", "x"), "ERR Invalid OVERFLOW type specified")
    assert is_error(core("BITFIELD_RO", "k", "SET", "u8", 0, 1),
                    "ERR BITFIELD_RO only supports the GET subcommand")
    assert core("EXISTS", "k") == 0  # nothing half-applied


def test_bitfield_fail_leaves_the_value(core):
    assert core("BITFIELD", "k", "SET", "u8", 0, 200) == [0]
    assert core("BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u8", 0, 100, "GET", "u8", 0) == [None, 200]
    assert core("BITFIELD", "k", "OVERFLOW", "SAT", "INCRBY", "u8", 0, 100) == [255]


@pytest.mark.parametrize("seed", [1, 2])
def test_bit_records_replay_to_the_same_keys(seed):
    source = Core()
    log = source.node.log = RecordingLog()
    rng = random.Random(seed)
    gens = [g for name in ("setup", "bits") for g in keyspace_gen_bits.GENERATORS[name]]
    for _ in range(2000):
        source.run(*rng.choice(gens)(rng, 0))
    copy = Core()
    client = Client(0)
    for argv in log.records:
        copy.node.keyspace.replay(client, argv)
    assert _state(copy.node) == _state(source.node)
    assert copy.node.used_memory == source.node.used_memory
