"""Random sessions of keyspace commands for the keyspace-notification
differential test against redis-server (test_keyspace_events_vs_redis.py):
a notify-keyspace-events value, then commands of every family the node
notifies for (generic, strings, lists, sets, hashes, sorted sets, streams,
and "new" keys), on a few shared keys so that types collide, lists empty
out and destinations get overwritten.

Every reply is compared too, so the generator keeps to commands with one
right answer: no SPOP or random member, stream IDs given explicitly, TTLs
long (or in the past: deleted at once), no blocking command that would
wait long, no ZREMRANGEBYLEX (its result is Redis's skiplist walk when
scores differ).
"""

from __future__ import annotations

import random

FLAGS = [b"KEA", b"KEAn", b"AKEn", b"AEn", b"Kgl", b"E$shz", b"Et", b"Kn", b"Egx"]
KEYS = [b"a", b"b", b"c", b"{t}1", b"{t}2"]
MEMBERS = [b"m1", b"m2", b"m3", b"5", b"-2"]


def _key(rng: random.Random, family: str = "") -> bytes:
    """Mostly a key of the family's own (few WRONGTYPE errors), now and
    then a shared one (types collide, RENAME and COPY cross families)."""
    if family and rng.random() < 0.8:
        return family.encode() + rng.choice([b":1", b":2"])
    return rng.choice(KEYS)


def _member(rng: random.Random) -> bytes:
    return rng.choice(MEMBERS)


def _int(rng: random.Random) -> bytes:
    return str(rng.randint(-3, 6)).encode()


def _command(rng: random.Random, stream_ids: dict[bytes, int]) -> list[bytes]:
    family = rng.choice(["generic", "string", "list", "set", "hash", "zset", "stream", "multi"])
    pool = rng.choice(["string", "list", "set", "hash", "zset", "stream"]) if family in (
        "generic", "multi") else family
    k, k2 = _key(rng, pool), _key(rng, pool)
    m = _member(rng)
    if family == "generic":
        return rng.choice([
            [b"DEL", k, k2], [b"UNLINK", k], [b"RENAME", k, k2], [b"RENAMENX", k, k2],
            [b"EXPIRE", k, b"1000"], [b"EXPIRE", k, b"-1"], [b"PEXPIRE", k, b"100000"],
            [b"PERSIST", k], [b"COPY", k, k2], [b"COPY", k, k2, b"REPLACE"],
            [b"COPY", k, k2, b"DB", b"1"], [b"MOVE", k, b"1"], [b"EXISTS", k],
        ])
    if family == "string":
        return rng.choice([
            [b"SET", k, m], [b"SET", k, m, b"EX", b"1000"], [b"SET", k, m, b"NX"],
            [b"SET", k, m, b"XX", b"GET"], [b"SETNX", k, m], [b"SETEX", k, b"500", m],
            [b"PSETEX", k, b"500000", m], [b"MSET", k, m, k2, m], [b"MSETNX", k, m, k2, m],
            [b"INCR", k], [b"DECR", k], [b"INCRBY", k, _int(rng)], [b"DECRBY", k, _int(rng)],
            [b"INCRBYFLOAT", k, b"1.5"], [b"APPEND", k, m], [b"SETRANGE", k, b"2", m],
            [b"GETDEL", k], [b"GETEX", k, b"EX", b"900"], [b"GETEX", k, b"PERSIST"],
            [b"SETBIT", k, b"3", b"1"], [b"BITOP", b"OR", k, k2, k], [b"PFADD", k, m],
            [b"GETSET", k, m], [b"GET", k],
        ])
    if family == "list":
        return rng.choice([
            [b"LPUSH", k, m, m], [b"RPUSH", k, m], [b"LPUSHX", k, m], [b"RPUSHX", k, m],
            [b"LPOP", k], [b"RPOP", k, b"2"], [b"LSET", k, b"0", m],
            [b"LINSERT", k, b"BEFORE", m, b"x"], [b"LTRIM", k, b"1", b"-1"],
            [b"LREM", k, b"0", m], [b"LMOVE", k, k2, b"LEFT", b"RIGHT"],
            [b"RPOPLPUSH", k, k2], [b"LMPOP", b"2", k, k2, b"RIGHT", b"COUNT", b"2"],
            [b"BLPOP", k, k2, b"0.01"], [b"SORT", k, b"ALPHA", b"STORE", k2],
        ])
    if family == "set":
        return rng.choice([
            [b"SADD", k, m, _member(rng)], [b"SREM", k, m], [b"SMOVE", k, k2, m],
            [b"SINTERSTORE", k, k2, k], [b"SUNIONSTORE", k, k2, k], [b"SDIFFSTORE", k, k2],
            [b"SCARD", k],
        ])
    if family == "hash":
        return rng.choice([
            [b"HSET", k, m, b"1", _member(rng), b"2"], [b"HMSET", k, m, b"v"],
            [b"HSETNX", k, m, b"v"], [b"HINCRBY", k, b"n", _int(rng)],
            [b"HINCRBYFLOAT", k, b"f", b"2.5"], [b"HDEL", k, m, _member(rng)],
        ])
    if family == "zset":
        return rng.choice([
            [b"ZADD", k, _int(rng), m], [b"ZADD", k, b"INCR", b"1", m],
            [b"ZADD", k, b"NX", b"2", m, b"3", _member(rng)], [b"ZINCRBY", k, b"2", m],
            [b"ZREM", k, m], [b"ZREMRANGEBYSCORE", k, b"0", b"2"],
            [b"ZREMRANGEBYRANK", k, b"0", b"0"],
            [b"ZPOPMIN", k], [b"ZPOPMAX", k, b"2"], [b"ZMPOP", b"2", k, k2, b"MIN"],
            [b"ZUNIONSTORE", k2, b"2", k, k2], [b"ZINTERSTORE", k2, b"1", k],
            [b"ZDIFFSTORE", k2, b"1", k], [b"ZRANGESTORE", k2, k, b"0", b"1"],
        ])
    if family == "stream":
        stream_ids[k] = stream_ids.get(k, 0) + 1
        sid = b"%d-1" % stream_ids[k]
        return rng.choice([
            [b"XADD", k, sid, b"f", m], [b"XADD", k, b"MAXLEN", b"2", sid, b"f", m],
            [b"XDEL", k, b"1-1", b"2-1"], [b"XTRIM", k, b"MAXLEN", b"1"],
            [b"XGROUP", b"CREATE", k, b"g", b"0", b"MKSTREAM"],
            [b"XGROUP", b"CREATECONSUMER", k, b"g", m], [b"XGROUP", b"DELCONSUMER", k, b"g", m],
            [b"XGROUP", b"DESTROY", k, b"g"], [b"XGROUP", b"SETID", k, b"g", b"0"],
            [b"XREADGROUP", b"GROUP", b"g", m, b"COUNT", b"1", b"STREAMS", k, b">"],
            [b"XSETID", k, b"%d-5" % (stream_ids[k] + 1000)],
        ])
    return rng.choice([
        [b"EVAL", b"redis.call('set', KEYS[1], 'x'); return redis.call('del', KEYS[2])",
         b"2", k, k2],
        [b"EVAL", b"return redis.call('lpush', KEYS[1], 'y')", b"1", k],
    ])


def session(seed: int, steps: int = 80) -> tuple[bytes, list[list[list[bytes]]]]:
    """The notify-keyspace-events value and the steps: each a list of
    commands sent at once (one, or MULTI ... EXEC)."""
    rng = random.Random(seed)
    flags = rng.choice(FLAGS)
    stream_ids: dict[bytes, int] = {}
    out: list[list[list[bytes]]] = []
    for _ in range(steps):
        if rng.random() < 0.1:
            out.append([[b"MULTI"], _command(rng, stream_ids), _command(rng, stream_ids),
                        [b"EXEC"]])
        else:
            out.append([_command(rng, stream_ids)])
    return flags, out
