"""Sorted set commands: ZADD (NX, XX, GT, LT, CH, INCR), ZINCRBY, ZREM,
ZSCORE, ZMSCORE, ZCARD, ZCOUNT, ZLEXCOUNT, ZRANGE (BYSCORE, BYLEX, REV,
LIMIT, WITHSCORES), ZRANGESTORE, ZRANGEBYSCORE, ZREVRANGEBYSCORE,
ZREVRANGE, ZRANGEBYLEX, ZREVRANGEBYLEX, ZRANK, ZREVRANK, ZREMRANGEBYRANK,
ZREMRANGEBYSCORE, ZREMRANGEBYLEX, ZPOPMIN, ZPOPMAX, ZRANDMEMBER, ZSCAN,
with Redis 7.0's replies and errors (t_zset.c): scores as ``%.17g``, RESP3
doubles, RESP3 member/score pairs.

Every write here is deterministic (ZPOPMIN takes the lowest score, ties
by member), so the AOF logs each as it came, when it changed something.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable, Iterable

from ...protocol import resp
from ...protocol.errors import CommandError
from ..jobs.scan import scan
from ..command import Commands
from .args import int_arg
from .containers import (EMPTY_SCAN, LONG_MAX, OUT_OF_RANGE_POSITIVE, array, changed,
                         count_arg, double, lookup_typed, scan_cursor, scan_options,
                         scan_reply)
from .scores import (BAD_RANGE, listpack_score, parse_lex_bound, parse_score,
                     parse_score_bound)
from .encoding_limits import LIMITS
from .zsets import Pair, ZSet

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: group generic, the key at argv[1]
key_command = COMMANDS.command

_NAN = "ERR resulting score is not a number (NaN)"
# ZADD's options (Redis's ZADD_IN_*)
_NX, _XX, _GT, _LT, _INCR, _CH = (1 << i for i in range(6))
_ZADD_OPTIONS = {b"NX": _NX, b"XX": _XX, b"GT": _GT, b"LT": _LT, b"INCR": _INCR, b"CH": _CH}


def _zset(node: Node, client: Client, key: bytes) -> ZSet | None:
    return lookup_typed(node, client, key, ZSet)


def pairs_reply(pairs: Iterable[Pair], withscores: bool, proto: int) -> bytes:
    """Members, with their scores: flat in RESP2, [member, double] pairs
    in RESP3."""
    if not withscores:
        return array([member for _, member in pairs])
    out = []
    if proto == 3:
        for score, member in pairs:
            out.append(b"*2\r\n$%d\r\n%s\r\n,%.17g\r\n" % (len(member), member, score))
        return b"*%d\r\n%s" % (len(out), b"".join(out))
    for score, member in pairs:
        text = b"%.17g" % score
        out.append(b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(member), member, len(text), text))
    return b"*%d\r\n%s" % (2 * len(out), b"".join(out))


# ------------------------------------------------------------------ ZADD

def _zadd(node: Node, client: Client, argv: list[bytes], flags: int, start: int) -> bytes:
    """Redis's zaddGenericCommand; options from argv[start:], then
    score/member pairs."""
    while start < len(argv):
        bit = _ZADD_OPTIONS.get(argv[start].upper())
        if bit is None:
            break
        flags |= bit
        start += 1
    elements = len(argv) - start
    if elements % 2 or not elements:
        raise CommandError("ERR syntax error")
    if flags & _NX and flags & _XX:
        raise CommandError("ERR XX and NX options at the same time are not compatible")
    if (flags & _NX and flags & (_GT | _LT)) or (flags & _GT and flags & _LT):
        raise CommandError("ERR GT, LT, and/or NX options at the same time are not compatible")
    incr = flags & _INCR
    if incr and elements > 2:
        raise CommandError("ERR INCR option supports a single increment-element pair")
    scores = [parse_score(argv[i]) for i in range(start, len(argv), 2)]
    key = argv[1]
    z = _zset(node, client, key)
    ks = node.keyspace
    db = ks.dbs[client.db]
    added = updated = processed = 0
    score = 0.0
    if z is None and flags & _XX:
        return resp.null(client.proto) if incr else resp.ZERO
    created = z is None
    if z is None:
        z = ZSet(listpack=len(argv[start + 1]) <= LIMITS.zset_value)
    before = z.nbytes
    for j, i in enumerate(range(start + 1, len(argv), 2)):
        member, score = argv[i], scores[j]
        current = z.scores.get(member)
        if current is not None:
            if flags & _NX:
                continue
            if incr:
                score += current
                if math.isnan(score):
                    raise CommandError(_NAN)
            if (flags & _LT and score >= current) or (flags & _GT and score <= current):
                continue
            processed += 1
            if score != current:
                z.update(member, score)
                updated += 1
        elif not flags & _XX:
            z.insert(member, score)
            added += 1
            processed += 1
    if added or updated:
        if created:
            ks.store(db, key, z)
        else:
            changed(node, db, key, z.nbytes - before, False)
        ks.log(db, *argv)
    if incr:
        return double(score, client.proto) if processed else resp.null(client.proto)
    return b":%d\r\n" % (added + updated if flags & _CH else added)


@key_command("ZADD", -4, "write denyoom fast")
def zadd(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _zadd(node, client, argv, 0, 2)


@key_command("ZINCRBY", 4, "write denyoom fast")
def zincrby(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _zadd(node, client, argv, _INCR, 2)  # options parsed too, as Redis


@key_command("ZREM", -3, "write fast")
def zrem(node: Node, client: Client, argv: list[bytes]) -> bytes:
    key = argv[1]
    z = _zset(node, client, key)
    if z is None:
        return resp.ZERO
    before = z.nbytes
    removed = sum(z.remove(member) for member in argv[2:])
    if removed:
        db = node.keyspace.dbs[client.db]
        changed(node, db, key, z.nbytes - before, not z)
        node.keyspace.log(db, *argv)
    return b":%d\r\n" % removed


# --------------------------------------------------------------- lookups

@key_command("ZSCORE", 3, "readonly fast")
def zscore(node: Node, client: Client, argv: list[bytes]) -> bytes:
    z = _zset(node, client, argv[1])
    score = z.scores.get(argv[2]) if z is not None else None
    return resp.null(client.proto) if score is None else double(score, client.proto)


@key_command("ZMSCORE", -3, "readonly fast")
def zmscore(node: Node, client: Client, argv: list[bytes]) -> bytes:
    z = _zset(node, client, argv[1])
    null = resp.null(client.proto)
    out = [b"*%d\r\n" % (len(argv) - 2)]
    for member in argv[2:]:
        score = z.scores.get(member) if z is not None else None
        out.append(null if score is None else double(score, client.proto))
    return b"".join(out)


@key_command("ZCARD", 2, "readonly fast")
def zcard(node: Node, client: Client, argv: list[bytes]) -> bytes:
    z = _zset(node, client, argv[1])
    return b":%d\r\n" % (len(z) if z is not None else 0)


def _zrank(node: Node, client: Client, argv: list[bytes], reverse: bool) -> bytes:
    z = _zset(node, client, argv[1])
    rank = z.rank(argv[2]) if z is not None else None
    if rank is None:
        return resp.null(client.proto)
    assert z is not None
    return b":%d\r\n" % (len(z) - 1 - rank if reverse else rank)


@key_command("ZRANK", 3, "readonly fast")
def zrank(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _zrank(node, client, argv, False)


@key_command("ZREVRANK", 3, "readonly fast")
def zrevrank(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _zrank(node, client, argv, True)


@key_command("ZCOUNT", 4, "readonly fast")
def zcount(node: Node, client: Client, argv: list[bytes]) -> bytes:
    low, low_ex = parse_score_bound(argv[2])
    high, high_ex = parse_score_bound(argv[3])
    z = _zset(node, client, argv[1])
    if z is None:
        return resp.ZERO
    return b":%d\r\n" % max(0, z.score_stop(high, high_ex) - z.score_start(low, low_ex))


def _lex_bounds(argv: list[bytes], low: int, high: int) -> tuple[tuple[int, bytes, bool], ...]:
    try:
        return parse_lex_bound(argv[low]), parse_lex_bound(argv[high])
    except CommandError:
        raise CommandError("ERR min or max not valid string range item") from None


def _lex_count(z: ZSet, bounds: tuple[tuple[int, bytes, bool], ...]) -> int:
    ranks = z.lex_ranks(bounds[0], bounds[1])
    if isinstance(ranks, tuple):
        return max(0, ranks[1] - ranks[0])
    return len(ranks)


@key_command("ZLEXCOUNT", 4, "readonly fast")
def zlexcount(node: Node, client: Client, argv: list[bytes]) -> bytes:
    bounds = _lex_bounds(argv, 2, 3)
    z = _zset(node, client, argv[1])
    return b":%d\r\n" % (_lex_count(z, bounds) if z is not None else 0)


# ---------------------------------------------------------------- ranges

def _score_bounds(argv: list[bytes], low: int, high: int) -> tuple[float, bool, float, bool]:
    try:
        low_value, low_ex = parse_score_bound(argv[low])
        high_value, high_ex = parse_score_bound(argv[high])
    except CommandError:
        raise CommandError(BAD_RANGE) from None
    return low_value, low_ex, high_value, high_ex


def _rank_span(size: int, start: int, end: int) -> tuple[int, int]:
    """ZRANGE's start..end (negative from the end) as a [from, to) span."""
    if start < 0:
        start += size
    if end < 0:
        end += size
    if start < 0:
        start = 0
    if start > end or start >= size:
        return 0, 0
    return start, min(end, size - 1) + 1


def _span_pairs(z: ZSet, lo: int, hi: int, reverse: bool, offset: int,
                limit: int) -> list[Pair]:
    """The members ranked [lo, hi) (read from hi down if ``reverse``),
    after skipping ``offset`` and keeping ``limit`` (< 0: all)."""
    if offset < 0 or lo >= hi:
        return []
    if not reverse:
        a = lo + offset
        b = hi if limit < 0 else min(hi, a + limit)
        return z.order[a:b] if a < b else []
    b = hi - offset
    a = lo if limit < 0 else max(lo, b - limit)
    return z.order[a:b][::-1] if a < b else []


def _zrange(node: Node, client: Client, argv: list[bytes], first: int, store: bool,
            by: str, reverse: bool | None) -> tuple[list[Pair], bool]:
    """Redis's zrangeGenericCommand from the source key at argv[first]:
    (the members in range, WITHSCORES).  ``by`` is "rank", "score", "lex"
    or "" (ZRANGE: from the options); ``reverse`` None: from the options."""
    withscores = False
    offset, limit = 0, -1
    argc = len(argv)
    j = first + 3
    while j < argc:
        opt = argv[j].upper()
        if not store and opt == b"WITHSCORES":
            withscores = True
        elif opt == b"LIMIT" and argc - j - 1 >= 2:
            offset = int_arg(argv[j + 1])
            limit = int_arg(argv[j + 2])
            j += 2
        elif reverse is None and opt == b"REV":
            reverse = True
        elif not by and opt == b"BYLEX":
            by = "lex"
        elif not by and opt == b"BYSCORE":
            by = "score"
        else:
            raise CommandError("ERR syntax error")
        j += 1
    reverse = bool(reverse)
    by = by or "rank"
    if limit != -1 and by == "rank":  # (Redis checks the count only)
        raise CommandError("ERR syntax error, LIMIT is only supported in combination "
                           "with either BYSCORE or BYLEX")
    if withscores and by == "lex":
        raise CommandError("ERR syntax error, WITHSCORES not supported in combination "
                           "with BYLEX")
    low, high = first + 1, first + 2
    if reverse and by != "rank":
        low, high = high, low  # given as max, min
    if by == "rank":
        start, end = int_arg(argv[low]), int_arg(argv[high])
    elif by == "score":
        bounds = _score_bounds(argv, low, high)
    else:
        lex = _lex_bounds(argv, low, high)
    z = _zset(node, client, argv[first])
    if z is None:
        return [], withscores
    if by == "rank":
        size = len(z)
        lo, hi = _rank_span(size, start, end)
        if reverse:
            lo, hi = size - hi, size - lo
        return _span_pairs(z, lo, hi, reverse, 0, -1), withscores
    if by == "score":
        lo = z.score_start(bounds[0], bounds[1])
        hi = z.score_stop(bounds[2], bounds[3])
        return _span_pairs(z, lo, hi, reverse, offset, limit), withscores
    ranks = z.lex_ranks(lex[0], lex[1])
    if isinstance(ranks, tuple):
        return _span_pairs(z, ranks[0], ranks[1], reverse, offset, limit), withscores
    if reverse:
        ranks.reverse()
    if offset < 0:
        return [], withscores
    ranks = ranks[offset:] if limit < 0 else ranks[offset:offset + limit]
    return [z.order[r] for r in ranks], withscores


def _range_command(by: str, reverse: bool | None) -> Callable[[Node, Client, list[bytes]], bytes]:
    def handler(node: Node, client: Client, argv: list[bytes]) -> bytes:
        pairs, withscores = _zrange(node, client, argv, 1, False, by, reverse)
        return pairs_reply(pairs, withscores, client.proto)
    return handler


zrange = key_command("ZRANGE", -4, "readonly")(_range_command("", None))
zrevrange = key_command("ZREVRANGE", -4, "readonly")(_range_command("rank", True))
zrangebyscore = key_command("ZRANGEBYSCORE", -4, "readonly")(_range_command("score", False))
zrevrangebyscore = key_command("ZREVRANGEBYSCORE", -4, "readonly")(
    _range_command("score", True))
zrangebylex = key_command("ZRANGEBYLEX", -4, "readonly")(_range_command("lex", False))
zrevrangebylex = key_command("ZREVRANGEBYLEX", -4, "readonly")(_range_command("lex", True))


@key_command("ZRANGESTORE", -5, "write denyoom", keys=(1, 2, 1))
def zrangestore(node: Node, client: Client, argv: list[bytes]) -> bytes:
    pairs, _ = _zrange(node, client, argv, 2, True, "", None)
    ks = node.keyspace
    db = ks.dbs[client.db]
    dst = argv[1]
    if not pairs:
        if ks.lookup(db, dst) is not None:
            ks.delete(db, dst)
            ks.log(db, b"DEL", dst)
        return resp.ZERO
    z = ZSet(listpack=len(pairs) <= LIMITS.zset_entries)  # (long members convert it)
    for score, member in pairs:
        z.insert(member, score)
    ks.store(db, dst, z)
    ks.log(db, *argv)
    return b":%d\r\n" % len(pairs)


# -------------------------------------------------------------- removals

def _removed(node: Node, client: Client, argv: list[bytes], z: ZSet, before: int,
             removed: int) -> bytes:
    if removed:
        db = node.keyspace.dbs[client.db]
        changed(node, db, argv[1], z.nbytes - before, not z)
        node.keyspace.log(db, *argv)
    return b":%d\r\n" % removed


@key_command("ZREMRANGEBYRANK", 4, "write")
def zremrangebyrank(node: Node, client: Client, argv: list[bytes]) -> bytes:
    start, end = int_arg(argv[2]), int_arg(argv[3])
    z = _zset(node, client, argv[1])
    if z is None:
        return resp.ZERO
    before = z.nbytes
    lo, hi = _rank_span(len(z), start, end)
    return _removed(node, client, argv, z, before, z.remove_range(lo, hi) if lo < hi else 0)


@key_command("ZREMRANGEBYSCORE", 4, "write")
def zremrangebyscore(node: Node, client: Client, argv: list[bytes]) -> bytes:
    low, low_ex, high, high_ex = _score_bounds(argv, 2, 3)
    z = _zset(node, client, argv[1])
    if z is None:
        return resp.ZERO
    before = z.nbytes
    lo, hi = z.score_start(low, low_ex), z.score_stop(high, high_ex)
    return _removed(node, client, argv, z, before, z.remove_range(lo, hi) if lo < hi else 0)


@key_command("ZREMRANGEBYLEX", 4, "write")
def zremrangebylex(node: Node, client: Client, argv: list[bytes]) -> bytes:
    bounds = _lex_bounds(argv, 2, 3)
    z = _zset(node, client, argv[1])
    if z is None:
        return resp.ZERO
    before = z.nbytes
    ranks = z.lex_ranks(bounds[0], bounds[1])
    if isinstance(ranks, tuple):
        removed = z.remove_range(*ranks) if ranks[0] < ranks[1] else 0
    else:
        removed = sum(z.remove(member) for member in [z.order[r][1] for r in ranks])
    return _removed(node, client, argv, z, before, removed)


# ------------------------------------------------------------------ pops

def pop(node: Node, client: Client, key: bytes, z: ZSet, count: int, highest: bool) -> list[Pair]:
    """Take ``count`` lowest (or highest) members off ``z`` (shared with
    BZPOPMIN/BZPOPMAX); the caller logs it."""
    size = len(z)
    count = min(count, size)
    before = z.nbytes
    if highest:
        pairs = z.order[size - count:][::-1]
        z.remove_range(size - count, size)
    else:
        pairs = z.order[:count]
        z.remove_range(0, count)
    changed(node, node.keyspace.dbs[client.db], key, z.nbytes - before, not z)
    return pairs


def _zpop(node: Node, client: Client, argv: list[bytes], highest: bool) -> bytes:
    if len(argv) > 3:
        raise CommandError("ERR syntax error")
    count = 1
    if len(argv) == 3:
        count = count_arg(argv[2], 0, OUT_OF_RANGE_POSITIVE)
    z = _zset(node, client, argv[1])
    if z is None or count == 0:
        return resp.EMPTY_ARRAY
    pairs = pop(node, client, argv[1], z, count, highest)
    node.keyspace.log(node.keyspace.dbs[client.db], *argv)
    if len(argv) == 2 or client.proto == 2:  # flat: member, score...
        return b"*%d\r\n%s" % (2 * len(pairs), b"".join(
            [b"$%d\r\n%s\r\n%s" % (len(m), m, double(s, client.proto)) for s, m in pairs]))
    return pairs_reply(pairs, True, client.proto)


@key_command("ZPOPMIN", -2, "write fast")
def zpopmin(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _zpop(node, client, argv, False)


@key_command("ZPOPMAX", -2, "write fast")
def zpopmax(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _zpop(node, client, argv, True)


# ------------------------------------------------------- random and scan

@key_command("ZRANDMEMBER", -2, "readonly",
             summary="ZRANDMEMBER key [count [WITHSCORES]] (as HRANDFIELD).")
def zrandmember(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """ZRANDMEMBER key [count [WITHSCORES]] (as HRANDFIELD)."""
    argc = len(argv)
    if argc == 2:
        z = _zset(node, client, argv[1])
        if z is None:
            return resp.null(client.proto)
        member = z.order[node.random.randrange(len(z))][1]
        return b"$%d\r\n%s\r\n" % (len(member), member)
    count = count_arg(argv[2])
    if argc > 4 or (argc == 4 and argv[3].upper() != b"WITHSCORES"):
        raise CommandError("ERR syntax error")
    withscores = argc == 4
    if withscores and not -LONG_MAX // 2 <= count <= LONG_MAX // 2:
        raise CommandError("ERR value is out of range")
    z = _zset(node, client, argv[1])
    if z is None or count == 0:
        return resp.EMPTY_ARRAY
    rng = node.random
    order = z.order
    if count < 0 or count == 1:
        pairs = [order[i] for i in rng.choices(range(len(z)), k=-count if count < 0 else 1)]
    elif count >= len(z):
        pairs = list(order)
    else:
        pairs = [order[i] for i in rng.sample(range(len(z)), count)]
    return pairs_reply(pairs, withscores, client.proto)


@key_command("ZSCAN", -3, "readonly",
             summary="ZSCAN key cursor [MATCH pattern] [COUNT count].  A listpack zset")
def zscan(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """ZSCAN key cursor [MATCH pattern] [COUNT count].  A listpack zset
    comes whole, in order, its scores as the listpack holds them; a
    skiplist one through scan.py's cursor, which never misses a member
    present for the whole scan."""
    cursor = scan_cursor(argv[2])
    z = _zset(node, client, argv[1])
    if z is None:
        return EMPTY_SCAN
    count, match = scan_options(argv, 3)
    if z.listpack:
        return scan_reply(0, [item for score, member in z.order
                              if match is None or match(member)
                              for item in (member, listpack_score(score))])
    scores = z.scores
    cursor, found = scan(scores, cursor, count, False, match or _always, z.deletions,
                         keys=True)
    return scan_reply(cursor, [item for member in found
                               for item in (member, b"%.17g" % scores[member])])


def _always(member: bytes) -> bool:
    return True

