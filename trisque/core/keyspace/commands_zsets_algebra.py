"""Sorted-set algebra: ZUNION, ZINTER, ZDIFF, their STORE forms and
ZINTERCARD, as Redis 7.0's zunionInterDiffGenericCommand.

Inputs are sorted sets or sets (a set's members score 1); a missing key
is an empty input.  ``numkeys key...`` comes first, then WEIGHTS (each
input's scores multiplied, a NaN product counting 0), AGGREGATE SUM|MIN|
MAX (SUM: a NaN sum counts 0) and WITHSCORES (not with STORE; none of
them with ZDIFF), ZINTERCARD's LIMIT.  Scores aggregate in Redis's order:
inputs from the smallest to the largest (equal sizes in the order given),
which the last bit of a floating-point sum depends on.

A STORE form replaces the destination (none: it is deleted), as a
listpack when the result is within zset-max-listpack-entries/-value, and
is logged as the command itself (replay computes the same).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import SYNTAX, CommandError
from ..command import Commands
from .args import int_arg
from .commands_zsets import pairs_reply
from .encoding_limits import LIMITS
from .scores import parse_score
from .sets import Set
from .types import WRONGTYPE
from .zsets import ZSet

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(0, 0, 0))  # the keyspace's; keys counted by numkeys (command_keys.py)
key_command = COMMANDS.command

NOT_INTEGER = "ERR value is not an integer or out of range"
UNION, INTER, DIFF = "union", "inter", "diff"
_SUM, _MIN, _MAX = 0, 1, 2
_AGGREGATES = {b"SUM": _SUM, b"MIN": _MIN, b"MAX": _MAX}


def _aggregate(target: float, value: float, how: int) -> float:
    """zunionInterAggregate."""
    if how == _SUM:
        total = target + value
        return 0.0 if math.isnan(total) else total
    if how == _MIN:
        return value if value < target else target
    return value if value > target else target


def _inputs(node: Node, client: Client, argv: list[bytes], index: int,
            name: str) -> tuple[list[dict[bytes, float]], int]:
    """numkeys and its keys' values as member -> score (a set's score 1);
    the index of the first option."""
    count = int_arg(argv[index], NOT_INTEGER)
    if count < 1:
        raise CommandError(f"ERR at least 1 input key is needed for '{name}' command")
    if count > len(argv) - index - 1:
        raise CommandError(SYNTAX)
    ks = node.keyspace
    db = ks.dbs[client.db]
    inputs: list[dict[bytes, float]] = []
    for key in argv[index + 1:index + 1 + count]:
        value = ks.lookup(db, key)
        if value is None:
            inputs.append({})
        elif type(value) is ZSet:
            inputs.append(value.scores)
        elif type(value) is Set:
            inputs.append(dict.fromkeys(value, 1.0))
        else:
            raise CommandError(WRONGTYPE)
    return inputs, index + 1 + count


def _compute(inputs: list[dict[bytes, float]], weights: list[float], how: int, op: str,
             limit: int, count_only: bool) -> tuple[dict[bytes, float], int]:
    """The result (member -> score), or with ``count_only`` its size up to
    ``limit`` (0: no limit)."""
    if op == DIFF:
        others = inputs[1:]
        return {m: s for m, s in inputs[0].items() if not any(m in o for o in others)}, 0
    order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))  # (stable)
    result: dict[bytes, float] = {}
    if op == UNION:
        for i in order:
            weight = weights[i]
            for member, score in inputs[i].items():
                value = weight * score
                if math.isnan(value):
                    value = 0.0
                old = result.get(member)
                result[member] = value if old is None else _aggregate(old, value, how)
        return result, 0
    first, rest = order[0], order[1:]
    cardinality = 0
    for member, score in inputs[first].items():
        total = weights[first] * score
        if math.isnan(total):
            total = 0.0
        for j in rest:
            other = inputs[j].get(member)
            if other is None:
                break
            total = _aggregate(total, other * weights[j], how)
        else:
            if count_only:
                cardinality += 1
                if limit and cardinality >= limit:
                    break
            else:
                result[member] = total
    return result, cardinality


def _generic(node: Node, client: Client, argv: list[bytes], op: str, store: bool,
             count_only: bool = False) -> bytes:
    name = argv[0].decode("utf-8", "replace").lower()
    inputs, j = _inputs(node, client, argv, 2 if store else 1, name)
    weights = [1.0] * len(inputs)
    how = _SUM
    withscores = False
    limit = 0
    while j < len(argv):
        option = argv[j].upper()
        left = len(argv) - j
        if op != DIFF and not count_only and left >= len(inputs) + 1 and option == b"WEIGHTS":
            weights = [parse_score_weight(arg) for arg in argv[j + 1:j + 1 + len(inputs)]]
            j += 1 + len(inputs)
        elif op != DIFF and not count_only and left >= 2 and option == b"AGGREGATE":
            chosen = _AGGREGATES.get(argv[j + 1].upper())
            if chosen is None:
                raise CommandError(SYNTAX)
            how = chosen
            j += 2
        elif not store and not count_only and option == b"WITHSCORES":
            withscores = True
            j += 1
        elif count_only and left >= 2 and option == b"LIMIT":
            limit = int_arg(argv[j + 1], "ERR LIMIT can't be negative")
            if limit < 0:
                raise CommandError("ERR LIMIT can't be negative")
            j += 2
        else:
            raise CommandError(SYNTAX)
    result, cardinality = _compute(inputs, weights, how, op, limit, count_only)
    if count_only:
        return resp.integer(cardinality)
    pairs = sorted((score, member) for member, score in result.items())
    if not store:
        return pairs_reply(pairs, withscores, client.proto)
    ks = node.keyspace
    db = ks.dbs[client.db]
    dst = argv[1]
    if not pairs:
        if ks.lookup(db, dst) is not None:
            ks.delete(db, dst)
            ks.log(db, b"DEL", dst)
        return resp.ZERO
    z = ZSet(listpack=len(pairs) <= LIMITS.zset_entries
             and max(len(m) for _, m in pairs) <= LIMITS.zset_value)
    for score, member in pairs:
        z.insert(member, score)
    ks.store(db, dst, z)
    ks.log(db, *argv)
    return resp.integer(len(pairs))


def parse_score_weight(arg: bytes) -> float:
    try:
        return parse_score(arg)
    except CommandError:
        raise CommandError("ERR weight value is not a float") from None


_SYNTAX = "numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX]"


@key_command("ZUNIONSTORE", -4, "write denyoom", keys=(1, 1, 1),
             syntax="destination " + _SYNTAX)
def zunionstore(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _generic(node, client, argv, UNION, True)


@key_command("ZINTERSTORE", -4, "write denyoom", keys=(1, 1, 1),
             syntax="destination " + _SYNTAX)
def zinterstore(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _generic(node, client, argv, INTER, True)


@key_command("ZDIFFSTORE", -4, "write denyoom", keys=(1, 1, 1),
             syntax="destination numkeys key [key ...]")
def zdiffstore(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _generic(node, client, argv, DIFF, True)


@key_command("ZUNION", -3, "readonly", syntax=_SYNTAX + " [WITHSCORES]")
def zunion(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _generic(node, client, argv, UNION, False)


@key_command("ZINTER", -3, "readonly", syntax=_SYNTAX + " [WITHSCORES]")
def zinter(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _generic(node, client, argv, INTER, False)


@key_command("ZDIFF", -3, "readonly", syntax="numkeys key [key ...] [WITHSCORES]")
def zdiff(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _generic(node, client, argv, DIFF, False)


@key_command("ZINTERCARD", -3, "readonly", syntax="numkeys key [key ...] [LIMIT limit]")
def zintercard(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _generic(node, client, argv, INTER, False, count_only=True)
