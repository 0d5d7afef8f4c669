"""Seeded random keyspace commands for the differential test against
redis-server (test_keyspace_vs_redis.py).

``GENERATORS`` is a table: a type's name -> functions ``gen(rng, now_s) ->
argv``.  A new type adds its list (``GENERATORS["list"] = [...]``) and, if a
reply cannot be compared byte for byte, a rule in ``COMPARE``.  Values and
arguments come from small pools with Redis's edge cases in them (numbers
that are almost integers, int64 bounds, binary, empty), and keys from a
small pool so commands keep meeting each other's keys.

Expiry times are either far (>= 100 s: the two servers answer a few ms
apart, so TTLs are compared within a tolerance) or already past: never
due during the run, where the servers' clocks and expiry cycles would
decide.
"""

from __future__ import annotations

import random
from typing import Callable

KEYS = [b"k1", b"k2", b"k3", b"n1", b"n2", b"f1", b"", b"\x00bin\xff", b"a*b", b"k[1]",
        b"l1", b"l2", b"l3"]
VALUES = [b"", b"0", b"1", b"-1", b"007", b"-0", b"42", b"9223372036854775807",
          b"-9223372036854775808", b"9223372036854775808", b"3.14", b"1e3", b" 1",
          b"1 ", b"+1", b"abc", b"x" * 50, b"\x00\xff", b"inf", b"-inf", b"nan",
          b"0x10", b"1.", b".5", b"12345678901234567890", b"10.5", b"-2.5e-3"]
INTS = [b"0", b"1", b"-1", b"5", b"100", b"-100", b"9223372036854775807",
        b"-9223372036854775808", b"abc", b"1.5", b"007", b" 1", b"", b"3", b"-3"]
FLOATS = [b"0.1", b"-0.1", b"1e3", b"1.5", b"inf", b"-inf", b"nan", b"abc", b"3", b"-3",
          b"1e308", b"0x1p3", b"  1", b"1e-5000", b"1e5000", b".5", b"5.", b"1.e2",
          b"0", b"-0", b"1e-20", b"123456789.123456789", b"7"]
PATTERNS = [b"*", b"k*", b"?1", b"k[12]", b"k[^1]*", b"*\\**", b"a\\*b", b"[", b"[]",
            b"\\", b"k[1-2]", b"*1*", b"", b"n?", b"[a-z]*", b"[z-a]1", b"a*", b"**",
            b"k[1", b"*]"]

Gen = Callable[[random.Random, int], list[bytes]]


def key(rng: random.Random) -> bytes:
    return rng.choice(KEYS)


def value(rng: random.Random) -> bytes:
    return rng.choice(VALUES)


def expire_option(rng: random.Random, now_s: int, past: bool = True) -> list[bytes]:
    """SET/GETEX's expiry: far, past (GETEX deletes the key at once; SET
    stores it expired, and DBSIZE would then depend on when each server's
    expiry cycle runs), or invalid."""
    far_s = rng.randint(100, 100000)
    if not past:
        return [b"EXAT", b"%d" % (now_s + far_s)]
    return rng.choice([
        [b"EX", b"%d" % far_s], [b"PX", b"%d" % (far_s * 1000)],
        [b"EXAT", b"%d" % (now_s + far_s)], [b"PXAT", b"%d" % ((now_s + far_s) * 1000)],
        [b"EXAT", b"1"], [b"PXAT", b"1000"],  # past
        [b"EXAT", b"%d" % (now_s + far_s)],
        [b"EX", b"0"], [b"EX", b"-5"], [b"PX", rng.choice(INTS)],
        [b"EX", b"9223372036854775"], [b"PX", b"9223372036854775807"], [b"ex", b"abc"],
        [b"EX"],
    ])


# ------------------------------------------------------------ strings

def gen_set(rng: random.Random, now_s: int) -> list[bytes]:
    argv = [b"SET", key(rng), value(rng)]
    options: list[list[bytes]] = [[b"NX"], [b"XX"], [b"GET"], [b"KEEPTTL"], [b"get"],
                                  expire_option(rng, now_s, past=False),
                                  [b"PERSIST"], [b"BOGUS"]]
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        argv += rng.choice(options)
    return argv


def gen_getex(rng: random.Random, now_s: int) -> list[bytes]:
    argv = [b"GETEX", key(rng)]
    for _ in range(rng.choice([0, 1, 1, 2])):
        argv += rng.choice([expire_option(rng, now_s), [b"PERSIST"], [b"NX"], [b"KEEPTTL"]])
    return argv


def gen_mset(rng: random.Random, now_s: int) -> list[bytes]:
    argv = [rng.choice([b"MSET", b"MSETNX"])]
    for _ in range(rng.randint(0, 3)):
        argv += [key(rng), value(rng)]
    if rng.random() < 0.1:
        argv.append(key(rng))  # odd: an arity error
    return argv


def gen_setrange(rng: random.Random, now_s: int) -> list[bytes]:
    offset = rng.choice([b"0", b"1", b"5", b"20", b"-1", b"abc", b"536870912", b"3"])
    return [b"SETRANGE", key(rng), offset, rng.choice([b"", b"xy", b"hello", b"\x00"])]


STRINGS: list[Gen] = [
    lambda rng, now: [b"GET", key(rng)],
    gen_set, gen_set, gen_set,
    lambda rng, now: [b"SETNX", key(rng), value(rng)],
    lambda rng, now: [rng.choice([b"SETEX", b"PSETEX"]), key(rng),
                      rng.choice([b"100000", b"0", b"-1", b"abc", b"9223372036854775807"]),
                      value(rng)],
    lambda rng, now: [b"GETSET", key(rng), value(rng)],
    lambda rng, now: [b"GETDEL", key(rng)],
    gen_getex,
    lambda rng, now: [b"MGET"] + [key(rng) for _ in range(rng.randint(1, 4))],
    gen_mset,
    lambda rng, now: [rng.choice([b"INCR", b"DECR"]), key(rng)],
    lambda rng, now: [rng.choice([b"INCRBY", b"DECRBY"]), key(rng), rng.choice(INTS)],
    lambda rng, now: [b"INCRBYFLOAT", key(rng), rng.choice(FLOATS)],
    lambda rng, now: [b"APPEND", key(rng), value(rng)],
    lambda rng, now: [b"STRLEN", key(rng)],
    lambda rng, now: [rng.choice([b"GETRANGE", b"SUBSTR"]), key(rng), rng.choice(INTS),
                      rng.choice(INTS)],
    gen_setrange,
    lambda rng, now: [b"GET"],  # arity errors
    lambda rng, now: [b"SETNX", key(rng)],
    lambda rng, now: [b"INCR", key(rng), b"1"],
]


# --------------------------------------------------------- generic keys

def gen_expire(rng: random.Random, now_s: int) -> list[bytes]:
    name = rng.choice([b"EXPIRE", b"PEXPIRE", b"EXPIREAT", b"PEXPIREAT", b"expire"])
    far_s = rng.randint(100, 100000)
    if name.upper() == b"EXPIRE":
        when = rng.choice([b"%d" % far_s, b"-1", b"0", b"abc", b"9223372036854775807"])
    elif name == b"PEXPIRE":
        when = rng.choice([b"%d" % (far_s * 1000), b"-1", b"9223372036854775807"])
    elif name == b"EXPIREAT":
        when = rng.choice([b"%d" % (now_s + far_s), b"1", b"-9223372036854775808"])
    else:
        when = rng.choice([b"%d" % ((now_s + far_s) * 1000), b"1000"])
    argv = [name, key(rng), when]
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        argv.append(rng.choice([b"NX", b"XX", b"GT", b"LT", b"gt", b"FOO"]))
    return argv


KEYSPACE: list[Gen] = [
    lambda rng, now: [rng.choice([b"DEL", b"UNLINK"])] + [key(rng) for _ in range(rng.randint(1, 3))],
    lambda rng, now: [b"EXISTS"] + [key(rng) for _ in range(rng.randint(1, 3))],
    lambda rng, now: [b"TYPE", key(rng)],
    lambda rng, now: [b"KEYS", rng.choice(PATTERNS)],
    lambda rng, now: [rng.choice([b"RENAME", b"RENAMENX"]), key(rng), key(rng)],
    gen_expire, gen_expire,
    lambda rng, now: [rng.choice([b"TTL", b"PTTL", b"EXPIRETIME", b"PEXPIRETIME"]), key(rng)],
    lambda rng, now: [b"PERSIST", key(rng)],
    lambda rng, now: [b"DBSIZE"],
    lambda rng, now: [b"SELECT", rng.choice([b"0", b"0", b"1", b"2", b"16", b"-1", b"abc",
                                            b"99999999999"])],
    lambda rng, now: [b"MOVE", key(rng), rng.choice([b"0", b"1", b"2", b"16", b"x",
                                                    b"99999999999"])],
    lambda rng, now: [b"OBJECT", rng.choice([b"ENCODING", b"encoding", b"REFCOUNT", b"FREQ",
                                            b"NOPE"]), key(rng)],
    lambda rng, now: [b"OBJECT", b"ENCODING"],
    lambda rng, now: [b"FLUSHDB"] if rng.random() < 0.3 else [b"FLUSHDB", b"BOGUS"],
]


# ---------------------------------------------------------------- lists

ITEMS = [b"a", b"b", b"c", b"", b"1", b"\x00\xff", b"x" * 50]
INDEXES = [b"0", b"1", b"-1", b"2", b"-2", b"5", b"-100", b"100", b"abc", b"1.5",
           b"9223372036854775807", b"-9223372036854775808"]
TIMEOUTS = [b"0.01", b"0.01", b"-1", b"abc", b"inf", b"nan", b"-0.5", b"1e400", b""]


def items(rng: random.Random, low: int = 1) -> list[bytes]:
    return [rng.choice(ITEMS) for _ in range(rng.randint(low, 4))]


def side(rng: random.Random) -> bytes:
    return rng.choice([b"LEFT", b"RIGHT", b"left", b"MIDDLE"])


def gen_lpos(rng: random.Random, now_s: int) -> list[bytes]:
    argv = [b"LPOS", key(rng), rng.choice(ITEMS)]
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        argv += rng.choice([[b"RANK", rng.choice(INDEXES + [b"0"])],
                            [b"COUNT", rng.choice([b"0", b"1", b"2", b"-1", b"x"])],
                            [b"MAXLEN", rng.choice([b"0", b"1", b"3", b"-1"])],
                            [b"rank"], [b"BOGUS", b"1"]])
    return argv


def gen_mpop(rng: random.Random, now_s: int) -> list[bytes]:
    keys = [key(rng) for _ in range(rng.randint(1, 3))]
    numkeys = rng.choice([b"%d" % len(keys)] * 6 + [b"0", b"-1", b"abc", b"%d" % (len(keys) + 1)])
    tail = [side(rng)] + rng.choice([[], [], [b"COUNT", rng.choice([b"1", b"2", b"10", b"0", b"-1", b"x"])],
                                     [b"COUNT"], [b"COUNT", b"1", b"COUNT", b"2"]])
    if rng.random() < 0.1:
        # Blocking, on keys that are likely full; else a 10 ms timeout (null).
        return [b"BLMPOP", rng.choice(TIMEOUTS), numkeys] + keys + tail
    return [b"LMPOP", numkeys] + keys + tail


def gen_push(rng: random.Random, now_s: int) -> list[bytes]:
    return [rng.choice([b"LPUSH", b"RPUSH", b"LPUSH", b"RPUSH", b"LPUSHX", b"RPUSHX"]),
            rng.choice([b"l1", b"l2", b"l3"]) if rng.random() < 0.7 else key(rng)] + items(rng)


LISTS: list[Gen] = [
    gen_push, gen_push, gen_push, gen_push,
    lambda rng, now: [rng.choice([b"LPOP", b"RPOP"]), lkey(rng)],
    lambda rng, now: [rng.choice([b"LPOP", b"RPOP"]), lkey(rng),
                      rng.choice([b"0", b"1", b"2", b"10", b"-1", b"abc"])],
    lambda rng, now: [b"LLEN", lkey(rng)],
    lambda rng, now: [b"LRANGE", lkey(rng), rng.choice(INDEXES), rng.choice(INDEXES)],
    lambda rng, now: [b"LINDEX", lkey(rng), rng.choice(INDEXES)],
    lambda rng, now: [b"LSET", lkey(rng), rng.choice(INDEXES), rng.choice(ITEMS)],
    lambda rng, now: [b"LREM", lkey(rng), rng.choice([b"0", b"1", b"-1", b"2", b"-2", b"x"]),
                      rng.choice(ITEMS)],
    lambda rng, now: [b"LTRIM", lkey(rng), rng.choice(INDEXES), rng.choice(INDEXES)],
    lambda rng, now: [b"LINSERT", lkey(rng), rng.choice([b"BEFORE", b"AFTER", b"after", b"X"]),
                      rng.choice(ITEMS), rng.choice(ITEMS)],
    gen_lpos,
    lambda rng, now: [b"RPOPLPUSH", lkey(rng), lkey(rng)],
    lambda rng, now: [b"LMOVE", lkey(rng), lkey(rng), side(rng), side(rng)],
    gen_mpop,
    # Blocking commands on one connection: served at once, or a 10 ms
    # timeout; bad timeouts answer at once.
    lambda rng, now: ([rng.choice([b"BLPOP", b"BRPOP"])] + [lkey(rng) for _ in range(rng.randint(1, 3))]
                      + [rng.choice(TIMEOUTS)]) if rng.random() < 0.3 else [b"LLEN", lkey(rng)],
    lambda rng, now: ([b"BRPOPLPUSH", lkey(rng), lkey(rng), rng.choice(TIMEOUTS)]
                      if rng.random() < 0.5 else
                      [b"BLMOVE", lkey(rng), lkey(rng), side(rng), side(rng), rng.choice(TIMEOUTS)])
    if rng.random() < 0.3 else [b"LLEN", lkey(rng)],
    lambda rng, now: [b"LPUSH", lkey(rng)],  # arity errors
    lambda rng, now: [b"LPOP", lkey(rng), b"1", b"2"],
    lambda rng, now: [b"LMOVE", lkey(rng), lkey(rng), b"LEFT"],
]


def lkey(rng: random.Random) -> bytes:
    """Mostly the list keys, sometimes any key (strings: WRONGTYPE)."""
    return rng.choice([b"l1", b"l2", b"l3"]) if rng.random() < 0.75 else key(rng)


GENERATORS: dict[str, list[Gen]] = {"keys": KEYSPACE, "string": STRINGS, "list": LISTS}

# After a stream, every key of KEYS is read back with each of these
# (argv = [name, key, *rest]): a type adds the command that reads a whole
# value of it.
STATE: list[tuple[bytes, ...]] = [(b"GET",), (b"TTL",), (b"TYPE",), (b"LRANGE", b"0", b"-1")]


def state_commands(key: bytes) -> list[list[bytes]]:
    return [[name, key, *rest] for name, *rest in STATE]


# How replies are compared when not byte for byte: "sorted" (an array in
# any order), or an integer tolerance (the servers answer a few ms apart).
COMPARE: dict[bytes, object] = {
    b"KEYS": "sorted", b"TTL": 1, b"PTTL": 50, b"EXPIRETIME": 1, b"PEXPIRETIME": 50,
}


def stream(seed: int, count: int, now_s: int) -> list[list[bytes]]:
    rng = random.Random(seed)
    gens = [gen for table in GENERATORS.values() for gen in table]
    return [rng.choice(gens)(rng, now_s) for _ in range(count)]


# Hashes, sets and sorted sets: their generators, comparison rules, the
# resync after SPOP and their whole-value reads live in
# keyspace_gen_collections.py.
from tests.server import keyspace_gen_collections as _collections  # noqa: E402

GENERATORS.update(_collections.GENERATORS)
COMPARE.update(_collections.COMPARE)
RESYNC = _collections.RESYNC
STATE += _collections.STATE


# Scripts: deterministic bodies run through EVAL (their writes, replies,
# Lua<->RESP conversions and error texts, with the script's SHA1 in them,
# compared byte for byte).  MULTI/EXEC has no generator: a transaction
# would carry KEYS/TTL/SPOP replies inside EXEC's array past COMPARE and
# RESYNC; tests/server/test_transactions.py compares its sequences.
SCRIPTS = [
    b"return redis.call(ARGV[1], KEYS[1], ARGV[2])",
    b"return redis.pcall(ARGV[1], KEYS[1], ARGV[2])",
    b"local a = redis.call('incr', KEYS[1]) redis.call('rpush', KEYS[2], a) "
    b"return {a, redis.call('lrange', KEYS[2], 0, -1)}",
    b"local v = redis.call('get', KEYS[1]) if v then return {v, #v, tonumber(v)} end return v",
    b"redis.call('set', KEYS[1], ARGV[2]) return redis.call('incrbyfloat', KEYS[1], 1.5)",
    b"return {redis.call('exists', KEYS[1], KEYS[2]), redis.call('type', KEYS[1])}",
    b"redis.call('del', KEYS[2]) return redis.call('rename', KEYS[1], KEYS[2])",
    b"return redis.call('lpush', KEYS[1], unpack(ARGV))",
    b"local n = tonumber(ARGV[2]) return n and n * 1.5 or {err = 'not a number'}",
    b"return redis.call('mget', KEYS[1], KEYS[2])",
]
SCRIPT_COMMANDS = [b"set", b"get", b"incr", b"append", b"lpush", b"rpop", b"strlen",
                   b"del", b"llen", b"getset", b"nosuch"]


def gen_eval(rng: random.Random, now_s: int) -> list[bytes]:
    body = rng.choice(SCRIPTS)
    return [b"EVAL", body, b"2", key(rng), key(rng), rng.choice(SCRIPT_COMMANDS), value(rng)]


GENERATORS["scripting"] = [gen_eval]
