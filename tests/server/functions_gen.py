"""Seeded random FUNCTION / FCALL / FCALL_RO streams for the differential
test against redis-server (test_functions_vs_redis.py).

Libraries are built from a few names and a few function bodies, good and
bad: registrations in both forms with every flag, bodies that fail to
compile or fail while registering, bad shebangs, names that collide with
another library's functions.  FCALL and FCALL_RO call the functions (and
missing ones) with good and bad key counts; the bodies read and write
keys, raise errors, return every Lua type.  FUNCTION RESTORE gets
payloads of these libraries (written uncompressed by function_payload.py,
which redis-server reads as well) with each policy.

Replies compared otherwise than byte for byte (``same``): FUNCTION LIST,
whose libraries (and each library's functions) come in Redis's hash-table
order, compared as sets.  FUNCTION DUMP is not generated (redis-server
LZF-compresses the code, we do not: the bytes differ, the content is the
same; test_functions.py restores each server's dump into the other).
"""

from __future__ import annotations

import random

from trisque.core.keyspace.function_payload import dump

LIBRARIES = [b"lib1", b"lib2", b"lib3", b"Lib1"]
# (not f1 and F1 in one library: redis-server 7.0.15 links only one of
# them and then fails an assertion deleting the library, functions.c:291)
FUNCTIONS = [b"f1", b"f2", b"f3", b"g"]
KEYS = [b"k1", b"k2", b"{k}3"]
BODIES = [
    b"return 'hello'",
    b"return redis.call('set', keys[1] or 'k1', args[1] or 'v')",
    b"return redis.call('get', keys[1] or 'k1')",
    b"return redis.call('incr', 'counter')",
    b"return {keys[1], args[1], #keys, #args}",
    b"return redis.pcall('incr', keys[1] or 'k1')",
    b"error('boom')",
    b"return redis.call('nosuch')",
    b"return {err='My error'}",
    b"return redis.error_reply('custom')",
    b"return {ok='fine'}",
    b"return 3.99",
    b"return {1, 2, {3, 'x'}, true, false}",
    b"redis.setresp(3) return redis.call('hgetall', 'h')",
    b"return KEYS",
    b"return math.floor(2.5) + string.len('abc')",
    b"local t = {} for i = 1, #args do t[i] = args[i] end return t",
    b"return redis.call('lpush', 'l', 'a') .. 'x'",
    b"return redis.call('hset', 'h', 'f', args[1] or 'v')",
]
FLAG_SETS = [[], ["no-writes"], ["allow-oom"], ["no-writes", "allow-oom"],
             ["allow-stale", "no-cluster", "allow-cross-slot-keys"], ["NO-WRITES"]]
BAD_LIBRARIES = [
    b"no shebang\nredis.register_function('x', function() return 1 end)",
    b"#!lua name=x",
    b"#!lua\nredis.register_function('x', function() return 1 end)",
    b"#!lua name=a name=b\nredis.register_function('x', function() return 1 end)",
    b"#!lua name=x foo=bar\nredis.register_function('x', function() return 1 end)",
    b"#!js name=x\nredis.register_function('x', function() return 1 end)",
    b"#! name=x\nredis.register_function('x', function() return 1 end)",
    b"#!lua name=bad-name\nredis.register_function('x', function() return 1 end)",
    b"#!lua name=x\nsyntax error here",
    b"#!lua name=x\nreturn 1",
    b"#!lua name=x\nreturn math.random()",
    b"#!lua name=x\nreturn redis.call('ping')",
    b"#!lua name=x\na = 1",
    b"#!lua name=x\nerror('at load')",
    b"#!lua name=x\nredis.register_function()",
    b"#!lua name=x\nredis.register_function('x')",
    b"#!lua name=x\nredis.register_function('x', 'y')",
    b"#!lua name=x\nredis.register_function(1, function() end)",
    b"#!lua name=x\nredis.register_function('', function() end)",
    b"#!lua name=x\nredis.register_function('a-b', function() end)",
    b"#!lua name=x\nredis.register_function('x', function() end, 1)",
    b"#!lua name=x\nredis.register_function('x', function() end) "
    b"redis.register_function('x', function() end)",
    b"#!lua name=x\nredis.register_function{function_name='x'}",
    b"#!lua name=x\nredis.register_function{callback=function() end}",
    b"#!lua name=x\nredis.register_function{function_name='x', callback=function() end, "
    b"flags={'bad'}}",
    b"#!lua name=x\nredis.register_function{function_name='x', callback=function() end, "
    b"flags='no-writes'}",
    b"#!lua name=x\nredis.register_function{function_name='x', callback=function() end, "
    b"description=1, other=2}",
    b"#!lua name=x\nredis.register_function{function_name={}, callback=function() end}",
    b"#!lua name=x\nredis.register_function{function_name='x', callback=function() end, "
    b"description={}}",
    b"#!lua name=x\nlocal lib = redis lib.register_function('x', function() end) "
    b"return redis.log(redis.LOG_DEBUG, 'loaded', 1)",
]


def function_code(rng: random.Random, name: bytes) -> bytes:
    body = rng.choice(BODIES)
    flags = rng.choice(FLAG_SETS)
    if rng.random() < 0.5 and not flags:
        return b"redis.register_function('%s', function(keys, args) %s end)" % (name, body)
    parts = [b"function_name='%s'" % name,
             b"callback=function(keys, args) %s end" % body]
    if flags:
        parts.append(b"flags={%s}" % b",".join(b"'%s'" % f.encode() for f in flags))
    if rng.random() < 0.4:
        parts.append(b"description='%s'" % rng.choice([b"desc", b"", b"some words"]))
    rng.shuffle(parts)
    return b"redis.register_function{%s}" % b", ".join(parts)


def library(rng: random.Random) -> bytes:
    if rng.random() < 0.12:
        return rng.choice(BAD_LIBRARIES)
    name = rng.choice(LIBRARIES)
    count = rng.choice([1, 1, 2, 3])
    names = rng.sample(FUNCTIONS, count)
    shebang = rng.choice([b"#!lua name=%s", b"#!LUA name=%s", b"#!lua  NAME=%s ",
                          b"#!lua name=\"%s\""]) % name
    lines = [shebang, b"local function helper(x) return x end"]
    lines += [function_code(rng, n) for n in names]
    return b"\n".join(lines)


def command(rng: random.Random) -> list[bytes]:
    roll = rng.random()
    if roll < 0.25:
        argv = [b"FUNCTION", b"LOAD"]
        if rng.random() < 0.5:
            argv.append(rng.choice([b"REPLACE", b"replace", b"REPLACE", b"bogus"]))
        return argv + [library(rng)]
    if roll < 0.55:
        name = rng.choice(FUNCTIONS + [b"nosuch", b"F1", b"G"])
        argv = [rng.choice([b"FCALL", b"FCALL", b"FCALL_RO"]), name]
        nkeys = rng.choice([0, 0, 1, 1, 2, 5])
        argv.append(rng.choice([b"%d" % nkeys] * 8 + [b"-1", b"x", b"01"]))
        argv += rng.sample(KEYS, min(nkeys, len(KEYS)))
        argv += [rng.choice([b"a", b"1", b"", b"xyz"]) for _ in range(rng.choice([0, 1, 2]))]
        return argv
    if roll < 0.65:
        argv = [b"FUNCTION", b"LIST"]
        options = [[b"WITHCODE"], [b"LIBRARYNAME", rng.choice([b"lib*", b"*", b"lib1", b"x"])],
                   [b"withcode", b"libraryname", b"*1"], [b"bad"], [b"LIBRARYNAME"],
                   [b"WITHCODE", b"WITHCODE"], []]
        return argv + rng.choice(options)
    if roll < 0.72:
        return [b"FUNCTION", b"DELETE", rng.choice(LIBRARIES + [b"nosuch", b"x"])]
    if roll < 0.76:
        return [b"FUNCTION", b"FLUSH"] + rng.choice([[], [b"SYNC"], [b"async"], [b"bad"]])
    if roll < 0.82:
        return [b"FUNCTION", b"STATS"]
    if roll < 0.9:
        libs = []
        for _ in range(rng.choice([1, 1, 2])):
            code = library(rng)
            libs.append(code)
        payload = dump(libs)
        if rng.random() < 0.1:
            payload = payload[:-1] + bytes((payload[-1] ^ 1,))
        argv = [b"FUNCTION", b"RESTORE", payload]
        if rng.random() < 0.7:
            argv.append(rng.choice([b"FLUSH", b"APPEND", b"REPLACE", b"replace", b"bad"]))
        return argv
    if roll < 0.95:
        return rng.choice([
            [b"FUNCTION"], [b"FUNCTION", b"nosuch"], [b"FUNCTION", b"DELETE"],
            [b"FUNCTION", b"RESTORE", b"x", b"y", b"z"], [b"FUNCTION", b"DUMP", b"x"],
            [b"FUNCTION", b"KILL"], [b"FUNCTION", b"STATS", b"x"], [b"FUNCTION", b"HELP"],
            [b"FUNCTION", b"LOAD"], [b"FCALL", b"f1"], [b"FUNCTION", b"FLUSH", b"a", b"b"],
        ])
    key = rng.choice(KEYS + [b"counter", b"h", b"l"])
    return rng.choice([[b"GET", key], [b"HGETALL", b"h"], [b"LRANGE", b"l", b"0", b"-1"],
                       [b"SET", key, b"5"], [b"DEL", key]])


def stream(seed: int, n: int):
    rng = random.Random(seed)
    for _ in range(n):
        yield command(rng)
