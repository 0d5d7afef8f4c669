"""Seeded random bitmap and HyperLogLog commands for the differential test
against redis-server (test_bits_vs_redis.py): SETBIT, GETBIT, BITCOUNT,
BITPOS, BITOP, BITFIELD, BITFIELD_RO, PFADD, PFCOUNT, PFMERGE, PFDEBUG,
with the strings they meet made by SET, APPEND, SETRANGE and a list for
WRONGTYPE.

Every reply is compared byte for byte, and so is every key's value at the
end (GET): HyperLogLogs are strings in Redis's HYLL format, so the sparse
and dense encodings, the register updates and the cached cardinality in
the header must match to the byte.  Offsets stay small enough that no
command allocates more than a few KB (the refusal of too large ones is
still generated: 2^32 bits and more).

Corrupted HyperLogLogs (SETRANGE into one, APPEND to one) are generated
only on ``bad`` keys: PFCOUNT and PFMERGE must detect them as Redis does
(INVALIDOBJ or WRONGTYPE); PFADD into a corrupted sparse HLL writes bytes
whose layout only Redis's C defines, so it is not generated.
"""

from __future__ import annotations

import random
from typing import Callable

Gen = Callable[[random.Random, int], list[bytes]]

BIT_KEYS = [b"b1", b"b2", b"b3", b"s1", b"l1", b"none"]
HLL_KEYS = [b"h1", b"h2", b"h3", b"s1", b"l1", b"none"]
BAD_KEYS = [b"bad1", b"bad2"]
KEYS = sorted(set(BIT_KEYS + HLL_KEYS + BAD_KEYS))

OFFSETS = [b"0", b"1", b"7", b"8", b"9", b"15", b"63", b"64", b"100", b"333", b"1000",
           b"-1", b"abc", b"", b"4294967296", b"4294967295000", b"1.5", b" 1", b"007"]
BYTE_INDEXES = [b"0", b"1", b"2", b"-1", b"-2", b"-3", b"5", b"10", b"100", b"-100",
                b"x", b"9223372036854775807", b"-9223372036854775808"]
BIT_INDEXES = [b"0", b"1", b"3", b"7", b"8", b"9", b"13", b"31", b"-1", b"-7", b"-9",
               b"-30", b"200", b"-200", b"x"]
VALUES = [b"", b"a", b"foobar", b"\xff\xf0\x00", b"\x00\x0f\xff", b"\x00" * 9, b"\xff" * 9,
          b"1", b"123", b"\xaa\x55" * 20, b"\x80", b"\x01"]
FIELD_TYPES = [b"u1", b"u8", b"i8", b"u5", b"i5", b"i16", b"u63", b"i64", b"u3", b"i13",
               b"i32", b"u31", b"u2", b"i2", b"i1", b"u16", b"i63", b"u62", b"i9", b"u7"]
BAD_FIELD_TYPES = [b"u64", b"i0", b"i65", b"x8", b"U8", b"I8", b"i", b"u", b"i-1", b"u08"]
FIELD_OFFSETS = [b"0", b"1", b"3", b"7", b"8", b"13", b"64", b"100", b"#0", b"#1", b"#3",
                 b"0", b"1", b"2", b"5", b"9", b"17", b"30", b"#2", b"#5", b"62", b"67",
                 b"#-1", b"-1", b"x", b"#", b"#x", b"4294967296"]
FIELD_VALUES = [b"0", b"1", b"-1", b"100", b"255", b"256", b"-128", b"-129", b"127",
                b"9223372036854775807", b"-9223372036854775808", b"12345678901",
                b"x", b"1.5", b"-100", b"99900", b"4611686018427387904"]
ELEMENTS = [b"a", b"b", b"c", b"", b"foo", b"bar", b"1", b"2", b"3", b"\x00\xff",
            b"x" * 30, b"hello world"]


def bkey(rng: random.Random) -> bytes:
    return rng.choice([b"b1", b"b1", b"b2", b"b2", b"b3"] + BIT_KEYS)


def hkey(rng: random.Random) -> bytes:
    return rng.choice([b"h1", b"h1", b"h2", b"h2", b"h3"] + HLL_KEYS)


# ---------------------------------------------------------------- setup

def gen_set(rng: random.Random, now_s: int) -> list[bytes]:
    key = rng.choice([b"b1", b"b2", b"b3", b"s1"])
    return rng.choice([[b"SET", key, rng.choice(VALUES)],
                       [b"APPEND", key, rng.choice(VALUES)],
                       [b"SETRANGE", key, rng.choice([b"0", b"3", b"20"]), rng.choice(VALUES)]])


SETUP: list[Gen] = [
    gen_set, gen_set,
    lambda rng, now: [b"RPUSH", b"l1", b"x"],
    lambda rng, now: [b"DEL", rng.choice(KEYS)],
]

# ----------------------------------------------------------------- bits


def gen_setbit(rng: random.Random, now_s: int) -> list[bytes]:
    bit = rng.choice([b"0", b"1"] * 8 + [b"2", b"-1", b"x", b"01"])
    offset = rng.choice(OFFSETS) if rng.random() < 0.3 else b"%d" % rng.randint(0, 300)
    return [b"SETBIT", bkey(rng), offset, bit]


def gen_bitcount(rng: random.Random, now_s: int) -> list[bytes]:
    argv = [b"BITCOUNT", bkey(rng)]
    shape = rng.random()
    if shape < 0.2:
        return argv
    if shape < 0.25:
        return argv + [rng.choice(BYTE_INDEXES)]  # syntax error (for a string)
    mode = rng.choice([b"BYTE", b"BIT", b"bit", b"", b"", b"bogus"])
    pool = BIT_INDEXES if mode.upper() == b"BIT" else BYTE_INDEXES
    argv += [rng.choice(pool), rng.choice(pool)]
    return argv + ([mode] if mode else [])


def gen_bitpos(rng: random.Random, now_s: int) -> list[bytes]:
    argv = [b"BITPOS", bkey(rng), rng.choice([b"0", b"1", b"1", b"0", b"2", b"x"])]
    n = rng.choice([0, 1, 2, 3, 3, 4])
    mode = rng.choice([b"BYTE", b"BIT", b"bit", b"bogus"])
    pool = BIT_INDEXES if mode.upper() == b"BIT" else BYTE_INDEXES
    if n >= 1:
        argv.append(rng.choice(pool))
    if n >= 2:
        argv.append(rng.choice(pool))
    if n >= 3:
        argv.append(mode)
    if n >= 4:
        argv.append(b"extra")
    return argv


def gen_bitop(rng: random.Random, now_s: int) -> list[bytes]:
    op = rng.choice([b"AND", b"OR", b"XOR", b"NOT", b"and", b"not", b"nand"])
    n = 1 if op.upper() == b"NOT" and rng.random() < 0.8 else rng.randint(1, 4)
    return [b"BITOP", op, bkey(rng)] + [bkey(rng) for _ in range(n)]


def field_type(rng: random.Random) -> bytes:
    return rng.choice(BAD_FIELD_TYPES) if rng.random() < 0.03 else rng.choice(FIELD_TYPES)


def gen_bitfield(rng: random.Random, now_s: int) -> list[bytes]:
    name = rng.choice([b"BITFIELD", b"BITFIELD", b"BITFIELD", b"BITFIELD_RO"])
    argv = [name, bkey(rng)]
    for _ in range(rng.randint(0, 4)):
        sub = rng.random()
        if sub < 0.15:
            argv += [b"OVERFLOW", rng.choice([b"WRAP", b"SAT", b"FAIL", b"sat", b"fail",
                                              b"bogus"])]
        elif sub < 0.45:
            argv += [rng.choice([b"GET", b"get"]), field_type(rng), rng.choice(FIELD_OFFSETS)]
        elif sub < 0.97:
            argv += [rng.choice([b"SET", b"INCRBY", b"incrby", b"set"]),
                     field_type(rng), rng.choice(FIELD_OFFSETS), rng.choice(FIELD_VALUES)]
        else:
            argv += rng.choice([[b"GET", b"u8"], [b"OVERFLOW"], [b"BOGUS", b"u8", b"0"]])
    return argv


BITS: list[Gen] = [
    gen_setbit, gen_setbit, gen_setbit,
    lambda rng, now: [b"GETBIT", bkey(rng), rng.choice(OFFSETS)],
    lambda rng, now: [b"GETBIT", bkey(rng), rng.choice(OFFSETS)],
    gen_bitcount, gen_bitcount, gen_bitpos, gen_bitpos, gen_bitop,
    gen_bitfield, gen_bitfield, gen_bitfield,
    lambda rng, now: rng.choice([[b"SETBIT", bkey(rng), b"0"],  # arity errors
                                 [b"BITOP", b"AND", bkey(rng)], [b"GETBIT", bkey(rng)]]),
]

# ---------------------------------------------------------- HyperLogLog


def elements(rng: random.Random) -> list[bytes]:
    """A few elements from a pool, or many fresh ones (up to the dense
    encoding: a sparse HLL of ~3000 bytes holds ~1000 to 1500)."""
    if rng.random() < 0.85:
        return [rng.choice(ELEMENTS) for _ in range(rng.randint(0, 5))]
    base = rng.randint(0, 10 ** 6)
    return [b"e%d" % (base + i) for i in range(rng.choice([10, 50, 200, 600, 1500, 4000]))]


def gen_pfadd(rng: random.Random, now_s: int) -> list[bytes]:
    return [b"PFADD", hkey(rng)] + elements(rng)


def gen_pfcount(rng: random.Random, now_s: int) -> list[bytes]:
    return [b"PFCOUNT"] + [hkey(rng) for _ in range(rng.choice([1, 1, 1, 2, 3]))]


def gen_pfmerge(rng: random.Random, now_s: int) -> list[bytes]:
    return [b"PFMERGE"] + [hkey(rng) for _ in range(rng.choice([1, 2, 2, 3, 4]))]


def gen_pfdebug(rng: random.Random, now_s: int) -> list[bytes]:
    sub = rng.choice([b"ENCODING", b"encoding", b"DECODE", b"TODENSE", b"GETREG", b"BOGUS"])
    if sub in (b"TODENSE", b"GETREG") and rng.random() < 0.7:
        sub = b"ENCODING"  # (a dense HLL stays dense: keep the sparse ones around)
    return [b"PFDEBUG", sub, rng.choice([hkey(rng)] + BAD_KEYS)]


def gen_corrupt(rng: random.Random, now_s: int) -> list[bytes]:
    """A bad key: an HLL, then changed under it (its length, magic,
    encoding, registers or cache)."""
    key = rng.choice(BAD_KEYS)
    if rng.random() < 0.35:
        return [b"PFADD", key] + elements(rng)
    if rng.random() < 0.15:
        return [b"APPEND", key, rng.choice([b"x", b"hello", b"\x00", b"\x80\x7f"])]
    pos = rng.choice([0, 4, 4, 8, 15, 16, 16, 17, 18, 19, 20, 30, 100, 1000])
    byte = bytes([rng.choice([0, 1, 0x3F, 0x40, 0x7F, 0x80, 0xFE, 0xFF, rng.randrange(256)])])
    return [b"SETRANGE", key, b"%d" % pos, byte]


def gen_read_bad(rng: random.Random, now_s: int) -> list[bytes]:
    key = rng.choice(BAD_KEYS)
    return rng.choice([[b"PFCOUNT", key], [b"PFCOUNT", key, hkey(rng)],
                       [b"PFMERGE", rng.choice([b"h3", key]), key],
                       [b"PFDEBUG", b"DECODE", key], [b"PFDEBUG", b"ENCODING", key]])


HLL: list[Gen] = [
    gen_pfadd, gen_pfadd, gen_pfadd, gen_pfadd, gen_pfcount, gen_pfcount, gen_pfcount,
    gen_pfmerge, gen_pfdebug, gen_corrupt, gen_corrupt, gen_read_bad, gen_read_bad,
    lambda rng, now: [b"GETRANGE", hkey(rng), b"0", b"20"],
    lambda rng, now: [b"CONFIG", b"SET", b"hll-sparse-max-bytes",
                      rng.choice([b"3000", b"3000", b"300", b"100", b"0", b"20000"])],
    lambda rng, now: rng.choice([[b"PFCOUNT"], [b"PFDEBUG", b"ENCODING"], [b"PFSELFTEST", b"x"]]),
]

GENERATORS: dict[str, list[Gen]] = {"setup": SETUP, "bits": BITS, "hll": HLL}
