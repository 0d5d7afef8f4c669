"""Seeded random sorted-set algebra (ZUNION, ZINTER, ZDIFF, their STORE
forms, ZINTERCARD), ZMPOP, SWAPDB and LCS for the differential test
against redis-server (test_sort_copy_vs_redis.py), with the sorted sets,
sets and strings they meet and a list for WRONGTYPE.

Replies are compared byte for byte: every result is in score order, and
scores aggregate in Redis's order (smallest input first); weights include
inf, -inf and 0 (NaN products count 0).  Then every key's value in the 3
dbs (``STATE``), after SWAPDBs have moved them around.
"""

from __future__ import annotations

import random
from typing import Callable

Gen = Callable[[random.Random, int], list[bytes]]

ZSETS = [b"z1", b"z2", b"z3"]
SETS = [b"s1", b"s2"]
STRINGS = [b"t1", b"t2"]
INPUTS = ZSETS + SETS + [b"none", b"l1"]
MEMBERS = [b"a", b"b", b"c", b"d", b"e", b"1", b"2", b"10", b"x" * 70, b"-"]
SCORES = [b"0", b"1", b"2", b"-1", b"1.5", b"inf", b"-inf", b"3", b"0.1", b"1e17", b"-0"]
WEIGHTS = [b"1", b"2", b"0", b"-1", b"0.5", b"inf", b"-inf", b"x", b"1e308"]
TEXTS = [b"ohmytext", b"mynewtext", b"", b"abc", b"aabbcc", b"abcabcabc", b"xyz",
         b"GATTACA", b"TAGACCA", b"a" * 40]


def some(pool: list[bytes], rng: random.Random, low: int = 1, high: int = 4) -> list[bytes]:
    return [rng.choice(pool) for _ in range(rng.randint(low, high))]


def gen_fill(rng: random.Random, now_s: int) -> list[bytes]:
    kind = rng.randrange(4)
    if kind == 0:
        argv = [b"ZADD", rng.choice(ZSETS)]
        for member in some(MEMBERS, rng, 1, 6):
            argv += [rng.choice(SCORES), member]
        return argv
    if kind == 1:
        return [b"SADD", rng.choice(SETS), *some(MEMBERS, rng)]
    if kind == 2:
        return [b"SET", rng.choice(STRINGS), rng.choice(TEXTS)]
    return [b"RPUSH", b"l1", b"x"]


def gen_algebra(rng: random.Random, now_s: int) -> list[bytes]:
    name = rng.choice([b"ZUNION", b"ZINTER", b"ZDIFF", b"ZUNIONSTORE", b"ZINTERSTORE",
                       b"ZDIFFSTORE", b"ZINTERCARD"])
    store = name.endswith(b"STORE")
    keys = some(INPUTS if rng.random() < 0.2 else ZSETS + SETS + [b"none"], rng, 1, 3)
    numkeys = b"%d" % len(keys)
    if rng.random() < 0.05:
        numkeys = rng.choice([b"0", b"-1", b"x", b"9"])
    argv = [name] + ([rng.choice([b"dst", b"z3"])] if store else []) + [numkeys, *keys]
    if name in (b"ZUNION", b"ZINTER", b"ZUNIONSTORE", b"ZINTERSTORE"):
        if rng.random() < 0.4:
            argv += [b"WEIGHTS", *[rng.choice(WEIGHTS) for _ in keys]]
        if rng.random() < 0.4:
            argv += [b"AGGREGATE", rng.choice([b"SUM", b"min", b"MAX", b"AVG"])]
    if not store and name != b"ZINTERCARD" and rng.random() < 0.5:
        argv.append(b"WITHSCORES")
    if name == b"ZINTERCARD" and rng.random() < 0.5:
        argv += [b"LIMIT", rng.choice([b"0", b"1", b"2", b"-1", b"x"])]
    if rng.random() < 0.03:
        argv.append(b"BOGUS")
    return argv


def gen_zmpop(rng: random.Random, now_s: int) -> list[bytes]:
    keys = some(INPUTS if rng.random() < 0.2 else ZSETS + [b"none"], rng, 1, 3)
    argv = [b"ZMPOP", b"%d" % len(keys), *keys, rng.choice([b"MIN", b"max", b"MIN", b"MID"])]
    if rng.random() < 0.5:
        argv += [b"COUNT", rng.choice([b"1", b"2", b"10", b"0", b"-1"])]
    return argv


def gen_swapdb(rng: random.Random, now_s: int) -> list[bytes]:
    if rng.random() < 0.7:
        return [b"SELECT", rng.choice([b"0", b"0", b"1", b"2"])]
    return [b"SWAPDB", rng.choice([b"0", b"1", b"2", b"16", b"x"]), rng.choice([b"0", b"1", b"2"])]


def gen_lcs(rng: random.Random, now_s: int) -> list[bytes]:
    argv = [b"LCS", rng.choice(STRINGS + [b"none", b"l1"]), rng.choice(STRINGS + [b"none"])]
    for option in rng.sample([[b"LEN"], [b"IDX"], [b"WITHMATCHLEN"],
                              [b"MINMATCHLEN", rng.choice([b"0", b"2", b"4", b"-1", b"x"])]],
                             rng.randint(0, 2)):
        argv += option
    return argv


GENERATORS: list[Gen] = [gen_fill, gen_fill, gen_fill, gen_algebra, gen_algebra, gen_algebra,
                         gen_zmpop, gen_swapdb, gen_lcs]
KEYS = ZSETS + SETS + STRINGS + [b"dst", b"l1"]
STATE: list[list[bytes]] = [[b"TYPE"], [b"ZRANGE", b"0", b"-1", b"WITHSCORES"],
                            [b"OBJECT", b"ENCODING"], [b"SORT", b"ALPHA"], [b"GET"]]


def stream(seed: int, count: int, now_s: int) -> list[list[bytes]]:
    rng = random.Random(seed)
    return [rng.choice(GENERATORS)(rng, now_s) for _ in range(count)]


def state_commands(key: bytes) -> list[list[bytes]]:
    return [[name, key, *rest] for name, *rest in STATE]
