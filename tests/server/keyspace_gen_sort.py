"""Seeded random SORT, SORT_RO and COPY commands for the differential test
against redis-server (test_sort_copy_vs_redis.py), with the values they
meet: lists (``l*``), sets (``s*``: intsets and hash tables), sorted sets
(``z*``), weight strings (``w_*``) and hashes (``h_*``) for BY and GET
patterns, plus a string key for WRONGTYPE.

Each family keeps its type (COPY copies within a family), so that what
the two servers may order differently is never generated: a set's own
order (Redis's hash table) is met only through BY nosort with STORE or
sorted; ALPHA by a BY pattern, where equal weights keep the elements'
load order, only on lists and without LIMIT; no element holds a NUL
(Redis's strcoll stops there), and no weight is empty: Redis reads "" as
0 or refuses it depending on the errno an earlier call left (strtod
converts nothing and sets none); we read 0.  Nor is one out of range
(1e400): after one, Redis refuses every numeric SORT until a system call
changes errno (it never clears it), which is not ours to copy.  SORT ... STORE (whose GETs
store "" for a missing key) stores into ``dst``, which is never sorted.  Every reply is compared byte for
byte, and so is every key's value at the end in the 3 dbs (``STATE``).
"""

from __future__ import annotations

import random
from typing import Callable

Gen = Callable[[random.Random, int], list[bytes]]

ELEMENTS = [b"1", b"2", b"3", b"10", b"-1", b"0", b"1.5", b"a", b"b", b"c", b"ab", b" ",
            b"007", b" 4", b"inf", b"-inf", b"0x10", b"1e3", b"x y", b"z\xff", b"9"]
NUMBERS = [b"1", b"2", b"3", b"10", b"-1", b"0", b"9", b"100", b"-20", b"5"]
WEIGHTS = [b"1", b"2", b"0", b"-3", b"1.5", b"10", b"abc", b" ", b" 7", b"nan",
           b"inf", b"0x1p3", b"3 ", b"2"]
LISTS = [b"l1", b"l2", b"l3"]
SETS = [b"s1", b"s2", b"s3"]
ZSETS = [b"z1", b"z2"]
FAMILIES = [LISTS, SETS, ZSETS]
OTHER = [b"str", b"nokey"]
GET_PATTERNS = [b"#", b"w_*", b"h_*->f", b"h_*->g", b"nokey", b"*", b"h_*->", b"w_*x", b"#x"]
BY_PATTERNS = [b"w_*", b"h_*->f", b"nosort", b"nokey_*", b"h_*->", b"*"]
LIMITS = [(b"0", b"2"), (b"1", b"3"), (b"0", b"-1"), (b"-2", b"2"), (b"5", b"1"), (b"2", b"0"),
          (b"100", b"5"), (b"x", b"1"), (b"0", b"9223372036854775807")]
DBS = [b"0", b"1", b"2", b"16", b"-1", b"x"]


def some(pool: list[bytes], rng: random.Random, low: int = 1, high: int = 5) -> list[bytes]:
    return [rng.choice(pool) for _ in range(rng.randint(low, high))]


def gen_fill(rng: random.Random, now_s: int) -> list[bytes]:
    kind = rng.randrange(6)
    if kind == 0:
        return [b"RPUSH", rng.choice(LISTS), *some(ELEMENTS + NUMBERS, rng)]
    if kind == 1:
        pool = NUMBERS if rng.random() < 0.5 else ELEMENTS
        return [b"SADD", rng.choice(SETS), *some(pool, rng)]
    if kind == 2:
        argv = [b"ZADD", rng.choice(ZSETS)]
        for member in some(ELEMENTS, rng):
            argv += [rng.choice(NUMBERS), member]
        return argv
    if kind == 3:
        argv = [b"MSET"]
        for element in some(ELEMENTS + NUMBERS, rng):
            argv += [b"w_" + element, rng.choice(WEIGHTS)]
        return argv
    if kind == 4:
        return [b"HSET", b"h_" + rng.choice(ELEMENTS + NUMBERS), rng.choice([b"f", b"g"]),
                rng.choice(WEIGHTS)]
    return [b"EXPIRE", rng.choice(LISTS + SETS + ZSETS), b"%d" % rng.randint(100, 1000)]


def gen_sort(rng: random.Random, now_s: int) -> list[bytes]:
    family = rng.choice(FAMILIES + [OTHER])
    name = b"SORT_RO" if rng.random() < 0.2 else b"SORT"
    argv = [name, rng.choice(family)]
    alpha = rng.random() < 0.4
    by = rng.choice(BY_PATTERNS) if rng.random() < 0.5 else None
    store = name == b"SORT" and rng.random() < 0.3
    if by == b"nosort" and family is SETS and not store:
        by = None  # (a set's own order: Redis's hash table)
    if by is not None and alpha and family is not LISTS:
        by = None  # (equal weights keep the load order: a set's or zset's own)
    options: list[list[bytes]] = []
    if by is not None:
        options.append([b"BY", by])
    if rng.random() < 0.4 and not (alpha and by is not None):
        # (ALPHA BY ... LIMIT: Redis's partial sort may order equal weights otherwise)
        options.append([b"LIMIT", *rng.choice(LIMITS)])
    for _ in range(rng.choice([0, 0, 1, 2])):
        options.append([b"GET", rng.choice(GET_PATTERNS)])
    if rng.random() < 0.5:
        options.append([rng.choice([b"ASC", b"DESC", b"desc"])])
    if alpha:
        options.append([b"ALPHA"])
    if store:
        options.append([b"STORE", b"dst"])  # (never sorted: it may hold "")
    if rng.random() < 0.03:
        options.append([rng.choice([b"BOGUS", b"LIMIT", b"GET", b"STORE"])])  # syntax errors
    rng.shuffle(options)
    for option in options:
        argv += option
    return argv


def gen_copy(rng: random.Random, now_s: int) -> list[bytes]:
    family = rng.choice(FAMILIES + [[b"w_1", b"w_2", b"w_a"], [b"h_1", b"h_a"]])
    argv = [b"COPY", rng.choice(family), rng.choice(family + [b"dst"] if family is LISTS
                                                     else family)]
    if rng.random() < 0.4:
        argv += [b"DB", rng.choice(DBS)]
    if rng.random() < 0.4:
        argv.append(b"REPLACE")
    if rng.random() < 0.03:
        argv.append(b"BOGUS")
    return argv


def gen_select(rng: random.Random, now_s: int) -> list[bytes]:
    return [b"SELECT", rng.choice([b"0", b"0", b"1", b"2"])]


def gen_encoding(rng: random.Random, now_s: int) -> list[bytes]:
    """What the copies look like: their encoding and TTL."""
    key = rng.choice(LISTS + SETS + ZSETS + [b"dst", b"w_1", b"h_1"])
    return rng.choice([[b"OBJECT", b"ENCODING", key], [b"TTL", key], [b"TYPE", key]])


GENERATORS: list[Gen] = [gen_fill, gen_fill, gen_fill, gen_sort, gen_sort, gen_sort, gen_copy,
                         gen_copy, gen_select, gen_encoding]

KEYS = LISTS + SETS + ZSETS + [b"dst", b"str"] + [b"w_" + e for e in ELEMENTS + NUMBERS] + [
    b"h_" + e for e in ELEMENTS + NUMBERS]
# Every key's value at the end (a set's members sorted by ALPHA: the same
# whatever the order each server keeps them in).
STATE: list[list[bytes]] = [[b"TYPE"], [b"TTL"], [b"LRANGE", b"0", b"-1"],
                            [b"SORT", b"ALPHA"],
                            [b"ZRANGE", b"0", b"-1", b"WITHSCORES"], [b"GET"], [b"HGETALL"]]


def stream(seed: int, count: int, now_s: int) -> list[list[bytes]]:
    rng = random.Random(seed)
    out = [[b"SET", b"str", b"x"]]
    for _ in range(count):
        out.append(rng.choice(GENERATORS)(rng, now_s))
    return out


def state_commands(key: bytes) -> list[list[bytes]]:
    return [[name, key, *rest] for name, *rest in STATE]
