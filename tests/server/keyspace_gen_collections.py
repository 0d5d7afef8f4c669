"""Seeded random commands on hashes, sets and sorted sets for the
differential test (test_keyspace_vs_redis.py); keyspace_gen.py adds
``GENERATORS``, ``COMPARE``, ``RESYNC`` and ``STATE`` to its tables.

Keys come from keyspace_gen's pool (so strings and lists meet these types:
WRONGTYPE) plus a few of the types' own: ``h1``/``s1``/``z1`` and the
lex keys ``lex1``/``lex2``, whose members all score 0 (lex ranges over
mixed scores are undefined in Redis: its answer depends on its
skiplist's random levels).  A few commands add 130-600 members at once, so
the big encodings (hashtable, skiplist) are met too.

Replies compared otherwise than byte for byte (``COMPARE``):
- "set": a reply in hash-table order (a big set's members, a big hash's
  fields): the same elements in any order (SINTER, SMEMBERS...).
- "pairs": field/value or member/score pairs in any order (HGETALL).
- "scan": a *SCAN of a hash-table collection from cursor 0 that both
  servers answer whole (cursor 0): the same elements in any order.  A
  partial page on either side is not compared (COUNT is a hint: Redis
  counts buckets, we count elements, so pages differ), nor is a scan from
  another cursor (each server's cursors mean nothing to the other).
  Tests in tests/unit check that our cursors never miss an element.
- "random": SRANDMEMBER, HRANDFIELD, ZRANDMEMBER: the same reply type and
  length, every element a member (checked against the other server's
  reply when it returns everything).
- SPOP is random and writes: the popped counts must match, and
  ``RESYNC`` then makes Redis's set equal ours (SADD back what Redis
  popped, SREM what we popped), so the streams stay comparable.
"""

from __future__ import annotations

import random
from typing import Callable

import hiredis

from tests.server.keyspace_gen import KEYS, Gen

OWN_KEYS = [b"h1", b"s1", b"z1"]
LEX_KEYS = [b"lex1", b"lex2"]
FIELDS = [b"a", b"b", b"c", b"f1", b"", b"1", b"2", b"10", b"-3", b"\x00\xff", b"x" * 70,
          b"9223372036854775807", b"9223372036854775808", b"007", b"m*", b"[x]"]
VALUES = [b"", b"0", b"1", b"-1", b"1.5", b"abc", b"10", b"x" * 70, b"1e3", b"007",
          b"9223372036854775807", b"-9223372036854775808", b"3.0", b" 1", b"inf"]
SCORES = [b"0", b"1", b"-1", b"1.5", b"2", b"inf", b"-inf", b"+inf", b"nan", b"abc", b"-0",
          b"1e308", b"1e-310", b"0x10", b" 1", b"1e5000", b"123456789.123456789", b"3",
          b"0.1", b"1e17", b"-2.5"]
BOUNDS = [b"-inf", b"+inf", b"inf", b"0", b"1", b"(1", b"2", b"(2", b"-1", b"(-inf",
          b"1.5", b"x", b"(", b"", b"nan", b"3"]
LEX_BOUNDS = [b"-", b"+", b"[a", b"(a", b"[b", b"(c", b"[", b"(", b"a", b"", b"[d", b"+x"]
INTS = [b"0", b"1", b"-1", b"2", b"-2", b"5", b"-100", b"100", b"abc", b"1.5",
        b"9223372036854775807", b"-9223372036854775808"]
COUNTS = [b"0", b"1", b"2", b"3", b"5", b"100", b"-1", b"-3", b"-100", b"x",
          b"-9223372036854775808"]


def hkey(rng: random.Random) -> bytes:
    return rng.choice([b"h1", b"h1", b"h1"] + KEYS)


def skey(rng: random.Random) -> bytes:
    return rng.choice([b"s1", b"s1", b"s1"] + KEYS)


def zkey(rng: random.Random) -> bytes:
    return rng.choice([b"z1", b"z1", b"z1"] + KEYS)


def some(pool: list[bytes], rng: random.Random, low: int = 1, high: int = 4) -> list[bytes]:
    return [rng.choice(pool) for _ in range(rng.randint(low, high))]


def bulk_members(rng: random.Random) -> list[bytes]:
    """Many members at once: past the small encodings' bounds."""
    n = rng.choice([130, 200, 600])
    base = rng.randint(0, 1000)
    if rng.random() < 0.5:
        return [b"%d" % (base + i) for i in range(n)]  # integers: an intset below 512
    return [b"m%d" % (base + i) for i in range(n)]


def scan_args(rng: random.Random) -> list[bytes]:
    argv = [rng.choice([b"0", b"0", b"0", b"x", b"-1", b"1"])]
    for _ in range(rng.choice([0, 1, 1, 2])):
        argv += rng.choice([[b"COUNT", rng.choice([b"1000", b"1000", b"5", b"0", b"x"])],
                            [b"MATCH", rng.choice([b"*", b"m1*", b"1*", b"[ab]", b""])],
                            [b"TYPE", b"string"], [b"BOGUS"]])
    return argv


# ---------------------------------------------------------------- hashes

def gen_hset(rng: random.Random, now_s: int) -> list[bytes]:
    if rng.random() < 0.03:
        members = bulk_members(rng)
        return [b"HSET", hkey(rng)] + [x for m in members for x in (m, m)]
    argv = [rng.choice([b"HSET", b"HSET", b"HMSET"]), hkey(rng)]
    for _ in range(rng.randint(1, 3)):
        argv += [rng.choice(FIELDS), rng.choice(VALUES)]
    if rng.random() < 0.05:
        argv.append(b"odd")  # arity error
    return argv


def gen_hrandfield(rng: random.Random, now_s: int) -> list[bytes]:
    argv = [b"HRANDFIELD", hkey(rng)]
    if rng.random() < 0.8:
        argv.append(rng.choice(COUNTS))
        if rng.random() < 0.5:
            argv.append(rng.choice([b"WITHVALUES", b"withvalues", b"BOGUS"]))
    return argv


HASHES: list[Gen] = [
    gen_hset, gen_hset, gen_hset,
    lambda rng, now: [b"HSETNX", hkey(rng), rng.choice(FIELDS), rng.choice(VALUES)],
    lambda rng, now: [b"HGET", hkey(rng), rng.choice(FIELDS)],
    lambda rng, now: [b"HMGET", hkey(rng)] + some(FIELDS, rng),
    lambda rng, now: [b"HGETALL", hkey(rng)],
    lambda rng, now: [rng.choice([b"HKEYS", b"HVALS", b"HLEN"]), hkey(rng)],
    lambda rng, now: [b"HDEL", hkey(rng)] + some(FIELDS, rng),
    lambda rng, now: [rng.choice([b"HEXISTS", b"HSTRLEN"]), hkey(rng), rng.choice(FIELDS)],
    lambda rng, now: [b"HINCRBY", hkey(rng), rng.choice(FIELDS), rng.choice(INTS)],
    lambda rng, now: [b"HINCRBYFLOAT", hkey(rng), rng.choice(FIELDS),
                      rng.choice(SCORES + [b"0.1", b"-1.5e2"])],
    gen_hrandfield,
    lambda rng, now: [b"HSCAN", hkey(rng)] + scan_args(rng),
    lambda rng, now: [rng.choice([b"HSET", b"HGET", b"HDEL", b"HSCAN"]), hkey(rng)],  # arity
]


# ------------------------------------------------------------------ sets

def gen_sadd(rng: random.Random, now_s: int) -> list[bytes]:
    if rng.random() < 0.03:
        return [b"SADD", skey(rng)] + bulk_members(rng)
    return [b"SADD", skey(rng)] + some(FIELDS, rng)


def gen_setop(rng: random.Random, now_s: int) -> list[bytes]:
    name = rng.choice([b"SINTER", b"SUNION", b"SDIFF", b"SINTERSTORE", b"SUNIONSTORE",
                       b"SDIFFSTORE"])
    keys = [skey(rng) for _ in range(rng.randint(1, 3))]
    return [name, skey(rng)] + keys if name.endswith(b"STORE") else [name] + keys


def gen_sintercard(rng: random.Random, now_s: int) -> list[bytes]:
    keys = [skey(rng) for _ in range(rng.randint(1, 3))]
    numkeys = rng.choice([b"%d" % len(keys)] * 4 + [b"0", b"-1", b"x", b"%d" % (len(keys) + 1)])
    argv = [b"SINTERCARD", numkeys] + keys
    if rng.random() < 0.4:
        argv += rng.choice([[b"LIMIT", rng.choice([b"0", b"1", b"2", b"-1", b"x"])], [b"LIMIT"],
                            [b"BOGUS"]])
    return argv


def gen_spop(rng: random.Random, now_s: int) -> list[bytes]:
    argv = [b"SPOP", skey(rng)]
    if rng.random() < 0.6:
        argv.append(rng.choice([b"1", b"2", b"1000", b"0", b"-1", b"x"]))
    if rng.random() < 0.03:
        argv.append(b"1")  # syntax error
    return argv


SETS: list[Gen] = [
    gen_sadd, gen_sadd, gen_sadd,
    lambda rng, now: [b"SREM", skey(rng)] + some(FIELDS, rng),
    lambda rng, now: [b"SMEMBERS", skey(rng)],
    lambda rng, now: [b"SISMEMBER", skey(rng), rng.choice(FIELDS)],
    lambda rng, now: [b"SMISMEMBER", skey(rng)] + some(FIELDS, rng),
    lambda rng, now: [b"SCARD", skey(rng)],
    gen_spop,
    lambda rng, now: [b"SRANDMEMBER", skey(rng)] + (
        [rng.choice(COUNTS)] if rng.random() < 0.8 else []),
    lambda rng, now: [b"SMOVE", skey(rng), skey(rng), rng.choice(FIELDS)],
    gen_setop, gen_setop,
    gen_sintercard,
    lambda rng, now: [b"SSCAN", skey(rng)] + scan_args(rng),
    lambda rng, now: [rng.choice([b"SADD", b"SMOVE", b"SINTERSTORE"]), skey(rng)],  # arity
]


# ----------------------------------------------------------- sorted sets

def gen_zadd(rng: random.Random, now_s: int) -> list[bytes]:
    if rng.random() < 0.03:
        return [b"ZADD", zkey(rng)] + [x for i, m in enumerate(bulk_members(rng))
                                       for x in (b"%d" % (i % 7), m)]
    argv = [b"ZADD", zkey(rng)]
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        argv.append(rng.choice([b"NX", b"XX", b"GT", b"LT", b"CH", b"INCR", b"nx", b"ch"]))
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        argv += [rng.choice(SCORES), rng.choice(FIELDS)]
    if rng.random() < 0.05:
        argv.append(b"1")  # odd: a syntax error
    return argv


def gen_zrange(rng: random.Random, now_s: int) -> list[bytes]:
    name = rng.choice([b"ZRANGE", b"ZRANGE", b"ZREVRANGE", b"ZRANGEBYSCORE",
                       b"ZREVRANGEBYSCORE", b"ZRANGESTORE"])
    by = rng.choice([b"", b"", b"BYSCORE"]) if name in (b"ZRANGE", b"ZRANGESTORE") else b""
    if by or name.endswith(b"BYSCORE"):
        low, high = rng.choice(BOUNDS), rng.choice(BOUNDS)
    else:
        low, high = rng.choice(INTS), rng.choice(INTS)
    argv = [name] + ([zkey(rng)] if name == b"ZRANGESTORE" else []) + [zkey(rng), low, high]
    if by:
        argv.append(by)
    options = [[b"WITHSCORES"], [b"withscores"], [b"REV"],
               [b"LIMIT", rng.choice(INTS), rng.choice(INTS)], [b"LIMIT", b"0"], [b"BYLEX"]]
    for _ in range(rng.choice([0, 1, 1, 2])):
        argv += rng.choice(options)
    return argv


def gen_lex(rng: random.Random, now_s: int) -> list[bytes]:
    key = rng.choice(LEX_KEYS)
    low, high = rng.choice(LEX_BOUNDS), rng.choice(LEX_BOUNDS)
    choice = rng.randrange(6)
    if choice == 0:
        return [b"ZADD", key] + [x for m in some(FIELDS, rng) for x in (b"0", m)]
    if choice == 1:
        argv = [rng.choice([b"ZRANGEBYLEX", b"ZREVRANGEBYLEX"]), key, low, high]
    elif choice == 2:
        argv = [b"ZRANGE", key, low, high, b"BYLEX"] + rng.choice([[], [b"REV"]])
    elif choice == 3:
        return [rng.choice([b"ZLEXCOUNT", b"ZREMRANGEBYLEX"]), key, low, high]
    elif choice == 4:
        return [rng.choice([b"ZRANGE", b"ZPOPMIN", b"ZCARD"]), key] + (
            [b"0", b"-1"] if rng.random() < 0.5 else [])
    else:
        return [b"ZREM", key] + some(FIELDS, rng)
    if rng.random() < 0.4:
        argv += [b"LIMIT", rng.choice(INTS[:8]), rng.choice(INTS[:8])]
    return argv


def gen_zpop(rng: random.Random, now_s: int) -> list[bytes]:
    argv = [rng.choice([b"ZPOPMIN", b"ZPOPMAX"]), zkey(rng)]
    if rng.random() < 0.6:
        argv.append(rng.choice([b"1", b"2", b"100", b"0", b"-1", b"x"]))
    return argv


def gen_bzpop(rng: random.Random, now_s: int) -> list[bytes]:
    """Served at once, or a 10 ms timeout (null); bad timeouts answer now."""
    keys = [zkey(rng) for _ in range(rng.randint(1, 2))]
    return [rng.choice([b"BZPOPMIN", b"BZPOPMAX"])] + keys + [
        rng.choice([b"0.01", b"0.01", b"-1", b"x", b"nan"])]


def gen_zrandmember(rng: random.Random, now_s: int) -> list[bytes]:
    argv = [b"ZRANDMEMBER", zkey(rng)]
    if rng.random() < 0.8:
        argv.append(rng.choice(COUNTS))
        if rng.random() < 0.5:
            argv.append(rng.choice([b"WITHSCORES", b"BOGUS"]))
    return argv


ZSETS: list[Gen] = [
    gen_zadd, gen_zadd, gen_zadd, gen_zadd,
    lambda rng, now: [b"ZINCRBY", zkey(rng), rng.choice(SCORES), rng.choice(FIELDS)],
    lambda rng, now: [b"ZREM", zkey(rng)] + some(FIELDS, rng),
    lambda rng, now: [b"ZSCORE", zkey(rng), rng.choice(FIELDS)],
    lambda rng, now: [b"ZMSCORE", zkey(rng)] + some(FIELDS, rng),
    lambda rng, now: [b"ZCARD", zkey(rng)],
    lambda rng, now: [b"ZCOUNT", zkey(rng), rng.choice(BOUNDS), rng.choice(BOUNDS)],
    gen_zrange, gen_zrange, gen_zrange,
    gen_lex, gen_lex,
    lambda rng, now: [rng.choice([b"ZRANK", b"ZREVRANK"]), zkey(rng), rng.choice(FIELDS)],
    lambda rng, now: [b"ZREMRANGEBYRANK", zkey(rng), rng.choice(INTS), rng.choice(INTS)],
    lambda rng, now: [b"ZREMRANGEBYSCORE", zkey(rng), rng.choice(BOUNDS), rng.choice(BOUNDS)],
    gen_zpop,
    gen_bzpop,
    gen_zrandmember,
    lambda rng, now: [b"ZSCAN", zkey(rng)] + scan_args(rng),
    lambda rng, now: [rng.choice([b"ZADD", b"ZINCRBY", b"ZRANGE", b"ZSCORE"]), zkey(rng)],  # arity
]

GENERATORS: dict[str, list[Gen]] = {"hash": HASHES, "set": SETS, "zset": ZSETS}


# ------------------------------------------------------------ comparing

def decode(reply: bytes) -> object:
    reader = hiredis.Reader()
    reader.feed(reply)
    return reader.gets()


def _pairs(value: object) -> object:
    if isinstance(value, dict):
        return sorted(value.items())
    if isinstance(value, list):
        if value and isinstance(value[0], list):
            return sorted(map(tuple, value))  # RESP3 [member, score] pairs
        return sorted(zip(value[::2], value[1::2]))
    return value


def _as_set(value: object) -> object:
    if isinstance(value, (list, set)):
        return sorted(value, key=repr)
    return value


def _kind(reply: bytes) -> bytes:
    return reply[:1].replace(b"~", b"*")


def same_set(argv: list[bytes], ours: bytes, theirs: bytes) -> bool:
    return _kind(ours) == _kind(theirs) and _as_set(decode(ours)) == _as_set(decode(theirs))


def same_pairs(argv: list[bytes], ours: bytes, theirs: bytes) -> bool:
    return ours[:1] == theirs[:1] and _pairs(decode(ours)) == _pairs(decode(theirs))


def same_scan(argv: list[bytes], ours: bytes, theirs: bytes) -> bool:
    a, b = decode(ours), decode(theirs)
    if not (isinstance(a, list) and isinstance(b, list)):
        return a.__class__ is b.__class__ and str(a) == str(b)
    if argv[2] != b"0":
        return True  # resumed from a cursor that means nothing to the other server
    if a[0] != b"0" or b[0] != b"0":
        return True  # a partial page on either side: COUNT is only a hint
    pairs = argv[0].upper() != b"SSCAN"
    return (_pairs(a[1]) == _pairs(b[1])) if pairs else sorted(a[1]) == sorted(b[1])


def same_random(argv: list[bytes], ours: bytes, theirs: bytes) -> bool:
    a, b = decode(ours), decode(theirs)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b)
    if isinstance(a, bytes) and isinstance(b, bytes):
        return True  # one random member each (the state is compared after the run)
    return a.__class__ is b.__class__ and str(a) == str(b)


COMPARE: dict[bytes, object] = {
    **{name: same_set for name in (b"SMEMBERS", b"SINTER", b"SUNION", b"SDIFF", b"HKEYS",
                                   b"HVALS")},
    b"HGETALL": same_pairs,
    b"HSCAN": same_scan, b"SSCAN": same_scan, b"ZSCAN": same_scan,
    b"SRANDMEMBER": same_random, b"HRANDFIELD": same_random, b"ZRANDMEMBER": same_random,
    b"SPOP": same_random,
}


def resync_spop(argv: list[bytes], ours: bytes, theirs: bytes) -> list[list[bytes]]:
    """Commands for Redis that make its set what ours is after an SPOP."""
    a, b = decode(ours), decode(theirs)
    ours_popped = [a] if isinstance(a, bytes) else a if isinstance(a, list) else []
    theirs_popped = [b] if isinstance(b, bytes) else b if isinstance(b, list) else []
    if sorted(ours_popped) == sorted(theirs_popped):
        return []
    key = argv[1]
    out = []
    if theirs_popped:
        out.append([b"SADD", key, *theirs_popped])
    if ours_popped:
        out.append([b"SREM", key, *ours_popped])
    return out


RESYNC: dict[bytes, Callable[[list[bytes], bytes, bytes], list[list[bytes]]]] = {
    b"SPOP": resync_spop,
}

# What reads a whole value back after the run (keyspace_gen.STATE), with
# how it is compared.
STATE: list[tuple[bytes, ...]] = [(b"HGETALL",), (b"SMEMBERS",),
                                  (b"ZRANGE", b"0", b"-1", b"WITHSCORES")]
