"""Seeded random stream commands for the streams' differential test
against redis-server (test_streams_vs_redis.py).

Stream keys ``x1``/``x2`` (and ``s1``, a string, ``l1``, a list: WRONGTYPE),
groups ``g1``/``g2``/``nog``, consumers ``c1``..``c3``.  IDs are explicit
(``*`` would differ between the servers): each XADD usually takes a
millisecond time after the last one it gave (``<ms>-<seq>``, ``<ms>`` or
``<ms>-*``), sometimes a stale or malformed one, so errors meet too.
Idle times given to XPENDING, XCLAIM and XAUTOCLAIM are 0 or far longer
than the run, never in between (the servers' clocks decide there).

Replies compared otherwise than byte for byte (``masked``): times (unix
ms: seen-time, delivery times; idle) are masked, and so is XINFO's
radix-tree-nodes (Redis's radix tree's inner nodes; ours has none: see
docs/keyspace.md).  radix-tree-keys (nodes of entries) is compared:
approximate trimming depends on where nodes split.
"""

from __future__ import annotations

import random
import re

STREAMS = [b"x1", b"x1", b"x2"]
OTHER = [b"s1", b"l1", b"none"]
GROUPS = [b"g1", b"g1", b"g2", b"nog"]
CONSUMERS = [b"c1", b"c2", b"c3"]
BAD_IDS = [b"-", b"+", b"(", b"abc", b"1-", b"-1", b"1-x", b"0-0", b" 1", b"01-1",
           b"18446744073709551615-18446744073709551615", b"18446744073709551616", b"",
           b"1-18446744073709551616", b"$", b">"]
FIELDS = [b"f", b"f", b"g", b"", b"1", b"-5", b"12345678901234567890", b"x" * 70]
VALUES = [b"v", b"1", b"-1", b"0", b"", b"abc", b"x" * 200, b"9223372036854775807",
          b"\x00\xff"]
COUNTS = [b"0", b"1", b"2", b"3", b"5", b"-1", b"x", b"100"]


class StreamGen:
    """What the generator remembers: the last millisecond time given."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.ms = 1

    def key(self) -> bytes:
        rng = self.rng
        return rng.choice(STREAMS) if rng.random() < 0.9 else rng.choice(OTHER)

    def some_id(self) -> bytes:
        """An ID in the range given so far, sometimes malformed."""
        rng = self.rng
        r = rng.random()
        if r < 0.08:
            return rng.choice(BAD_IDS)
        if r < 0.15:
            return rng.choice([b"-", b"+"])
        ms = rng.randint(0, self.ms + 1)
        if r < 0.3:
            return b"%d" % ms
        return b"%d-%d" % (ms, rng.randint(0, 3))

    def bound(self) -> bytes:
        rng = self.rng
        text = self.some_id()
        return b"(" + text if rng.random() < 0.2 else text

    def new_id(self) -> bytes:
        rng = self.rng
        r = rng.random()
        if r < 0.05:
            return rng.choice(BAD_IDS)
        if r < 0.12:
            return self.some_id()  # stale, mostly
        self.ms += rng.choice([0, 1, 1, 2, 5])
        if r < 0.5:
            return b"%d-*" % self.ms
        if r < 0.7:
            return b"%d" % self.ms
        return b"%d-%d" % (self.ms, rng.randint(0, 2))

    def fields(self) -> list[bytes]:
        rng = self.rng
        if rng.random() < 0.7:
            return [b"f", rng.choice(VALUES)]
        out = []
        for _ in range(rng.randint(1, 3)):
            out += [rng.choice(FIELDS), rng.choice(VALUES)]
        if rng.random() < 0.03:
            out.pop()  # odd: wrong number of arguments
        return out

    def trim_options(self) -> list[bytes]:
        rng = self.rng
        strategy = rng.choice([b"MAXLEN", b"MINID", b"maxlen"])
        out = [strategy]
        how = rng.choice([b"", b"", b"~", b"="])
        if how:
            out.append(how)
        out.append(rng.choice([b"0", b"1", b"3", b"10", b"-1", b"x"]) if strategy != b"MINID"
                   else self.some_id())
        if rng.random() < 0.3:
            out += [b"LIMIT", rng.choice([b"0", b"1", b"5", b"-1", b"x"])]
        return out

    def command(self) -> list[bytes]:
        rng = self.rng
        r = rng.random()
        key = self.key()
        if r < 0.30:
            argv = [b"XADD", key]
            if rng.random() < 0.05:
                argv.append(b"NOMKSTREAM")
            if rng.random() < 0.15:
                argv += self.trim_options()
            return argv + [self.new_id()] + self.fields()
        if r < 0.36:
            return [b"XRANGE", key, self.bound(), self.bound()] + self.count()
        if r < 0.40:
            return [b"XREVRANGE", key, self.bound(), self.bound()] + self.count()
        if r < 0.42:
            return [b"XLEN", key]
        if r < 0.45:
            return [b"XDEL", key] + [self.some_id() for _ in range(rng.randint(1, 3))]
        if r < 0.47:
            return [b"XTRIM", key] + self.trim_options()
        if r < 0.49:
            return self.xinfo(key)
        if r < 0.56:
            return self.xgroup(key)
        if r < 0.68:
            return self.xreadgroup()
        if r < 0.72:
            return self.xread()
        if r < 0.78:
            return [b"XACK", key, rng.choice(GROUPS)] + [self.some_id()
                                                          for _ in range(rng.randint(1, 3))]
        if r < 0.83:
            return self.xpending(key)
        if r < 0.88:
            return self.xclaim(key)
        if r < 0.91:
            return self.xautoclaim(key)
        if r < 0.93:
            return [b"XSETID", key, self.some_id()] + (
                [b"ENTRIESADDED", rng.choice([b"0", b"5", b"100", b"-1"])]
                if rng.random() < 0.4 else []) + (
                [b"MAXDELETEDID", self.some_id()] if rng.random() < 0.3 else [])
        if r < 0.95:
            return rng.choice([[b"DEL", key], [b"TYPE", key], [b"OBJECT", b"ENCODING", key],
                               [b"EXISTS", key]])
        if r < 0.97:
            return rng.choice([[b"SET", b"s1", b"v"], [b"LPUSH", b"l1", b"a"],
                               [b"XADD", b"s1", b"1-1", b"f", b"v"]])
        return [b"XINFO", b"STREAM", key, b"FULL"] + ([b"COUNT", rng.choice(COUNTS)]
                                                      if rng.random() < 0.5 else [])

    def count(self) -> list[bytes]:
        rng = self.rng
        if rng.random() < 0.4:
            return [b"COUNT", rng.choice(COUNTS)]
        if rng.random() < 0.03:
            return [b"FOO"]
        return []

    def xinfo(self, key: bytes) -> list[bytes]:
        rng = self.rng
        return rng.choice([[b"XINFO", b"STREAM", key], [b"XINFO", b"GROUPS", key],
                           [b"XINFO", b"CONSUMERS", key, rng.choice(GROUPS)],
                           [b"XINFO", b"HELP"], [b"XINFO", b"FOO", key],
                           [b"XINFO", b"STREAM", key, b"BAR"], [b"XINFO", b"GROUPS"]])

    def xgroup(self, key: bytes) -> list[bytes]:
        rng = self.rng
        group = rng.choice(GROUPS)
        r = rng.random()
        if r < 0.35:
            argv = [b"XGROUP", b"CREATE", key, group,
                    rng.choice([b"$", b"0", b"0-0", self.some_id()])]
            if rng.random() < 0.3:
                argv.append(b"MKSTREAM")
            if rng.random() < 0.2:
                argv += [b"ENTRIESREAD", rng.choice([b"0", b"2", b"-1", b"-2", b"x"])]
            return argv
        if r < 0.5:
            argv = [b"XGROUP", b"SETID", key, group, rng.choice([b"$", b"0", self.some_id()])]
            if rng.random() < 0.3:
                argv += [b"ENTRIESREAD", rng.choice([b"0", b"3", b"-1"])]
            return argv
        if r < 0.6:
            return [b"XGROUP", b"DESTROY", key, group]
        if r < 0.75:
            return [b"XGROUP", b"CREATECONSUMER", key, group, rng.choice(CONSUMERS)]
        if r < 0.88:
            return [b"XGROUP", b"DELCONSUMER", key, group, rng.choice(CONSUMERS)]
        return rng.choice([[b"XGROUP", b"HELP"], [b"XGROUP", b"FOO"],
                           [b"XGROUP", b"CREATE", key], [b"XGROUP", b"DESTROY", key, group, b"x"],
                           [b"XGROUP", b"CREATE", key, group, b"$", b"BAD"]])

    def xreadgroup(self) -> list[bytes]:
        rng = self.rng
        argv = [b"XREADGROUP", b"GROUP", rng.choice(GROUPS), rng.choice(CONSUMERS)]
        if rng.random() < 0.4:
            argv += [b"COUNT", rng.choice(COUNTS)]
        if rng.random() < 0.15:
            argv.append(b"NOACK")
        keys = [self.key() for _ in range(rng.choice([1, 1, 2]))]
        ids = [rng.choice([b">", b">", b">", b"0", b"$", self.some_id()]) for _ in keys]
        return argv + [b"STREAMS"] + keys + ids

    def xread(self) -> list[bytes]:
        rng = self.rng
        argv = [b"XREAD"]
        if rng.random() < 0.4:
            argv += [b"COUNT", rng.choice(COUNTS)]
        keys = [self.key() for _ in range(rng.choice([1, 1, 2]))]
        ids = [rng.choice([b"0", b"$", b">", self.some_id()]) for _ in keys]
        if rng.random() < 0.03:
            ids.pop()
        return argv + [b"STREAMS"] + keys + ids

    def xpending(self, key: bytes) -> list[bytes]:
        rng = self.rng
        argv = [b"XPENDING", key, rng.choice(GROUPS)]
        if rng.random() < 0.4:
            return argv
        if rng.random() < 0.3:
            argv += [b"IDLE", rng.choice([b"0", b"100000000", b"x"])]
        argv += [self.bound(), self.bound(), rng.choice(COUNTS)]
        if rng.random() < 0.4:
            argv.append(rng.choice(CONSUMERS))
        return argv

    def xclaim(self, key: bytes) -> list[bytes]:
        rng = self.rng
        argv = [b"XCLAIM", key, rng.choice(GROUPS), rng.choice(CONSUMERS),
                rng.choice([b"0", b"0", b"100000000", b"-5", b"x"])]
        argv += [self.some_id() for _ in range(rng.randint(1, 3))]
        for _ in range(rng.randint(0, 3)):
            argv += rng.choice([[b"FORCE"], [b"JUSTID"], [b"RETRYCOUNT", b"5"],
                                [b"IDLE", b"100000000"], [b"TIME", b"1000"], [b"LASTID",
                                                                           self.some_id()],
                                [b"BOGUS"], [b"RETRYCOUNT", b"x"]])
        return argv

    def xautoclaim(self, key: bytes) -> list[bytes]:
        rng = self.rng
        argv = [b"XAUTOCLAIM", key, rng.choice(GROUPS), rng.choice(CONSUMERS),
                rng.choice([b"0", b"0", b"100000000", b"x"]), self.bound()]
        if rng.random() < 0.5:
            argv += [b"COUNT", rng.choice([b"1", b"2", b"10", b"0", b"-1", b"x"])]
        if rng.random() < 0.3:
            argv.append(b"JUSTID")
        return argv


def commands(seed: int, count: int) -> list[list[bytes]]:
    gen = StreamGen(seed)
    return [gen.command() for _ in range(count)]


_TIMES = re.compile(rb":1\d{12}\r\n")
_NODES = re.compile(rb"(radix-tree-nodes\r\n):\d+\r\n")
_IDLE = re.compile(rb"(idle\r\n):\d+\r\n")
_PENDING_IDLE = re.compile(rb"(\*4\r\n\$\d+\r\n[0-9-]+\r\n\$\d+\r\n[a-z0-9]*\r\n):\d+\r\n")


def masked(argv: list[bytes], reply: bytes) -> bytes:
    """``reply`` with what depends on the servers' clocks masked."""
    reply = _TIMES.sub(b":T\r\n", reply)
    name = argv[0].upper()
    if name == b"XINFO":
        reply = _NODES.sub(rb"\1:N\r\n", reply)
        reply = _IDLE.sub(rb"\1:I\r\n", reply)
    elif name == b"XPENDING":
        reply = _PENDING_IDLE.sub(rb"\1:I\r\n", reply)
    return reply


# What reads a stream back whole after the run.
STATE = [[b"XRANGE", b"-", b"+"], [b"XINFO", b"STREAM", b"FULL"], [b"XINFO", b"GROUPS"],
         [b"XLEN"], [b"TYPE"]]


def state_commands(key: bytes) -> list[list[bytes]]:
    return [[argv[0], *argv[1:2], key, *argv[2:]] if argv[0] == b"XINFO"
            else [argv[0], key, *argv[1:]] for argv in STATE]
