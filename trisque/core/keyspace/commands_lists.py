"""List commands: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP, LLEN, LRANGE,
LINDEX, LSET, LREM, LTRIM, LINSERT, LPOS, RPOPLPUSH, LMOVE, LMPOP, and the
blocking BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP, with Redis 7.0's
replies, errors and order of checks (t_list.c).

The hot path (LPUSH/RPUSH of one item, LPOP/RPOP without a count) reaches
the db's dict directly and formats its reply in one step, as ADDJOB does.

AOF records replay the same whatever the time: pushes, LSET, LREM,
LTRIM, LINSERT, LMOVE and RPOPLPUSH as sent (their effect depends only on
the state, which the log rebuilds); what a blocking command or LMPOP took
as the plain pop it was (``LPOP key [n]``, ``LMOVE src dst from to``).

Blocking: a command that finds every key empty registers a waiter with
``keyspace.blocking`` (blocking.py); the waiter's ``serve`` is the same
pop or move, run when a write makes one of its keys exist.
"""

from __future__ import annotations

from math import ceil
from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import NOT_INTEGER, SYNTAX, CommandError, wrong_arity
from ..command import Commands
from .blocking import KeyWaiter
from .lists import (ITEM_OVERHEAD, PACK, List, clamp_range, item_size, items_in_range,
                    items_size, positions, remove)
from .numbers import INT64_MAX, INT64_MIN, parse_ll, parse_long_double, round_long_double
from .types import WRONGTYPE

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node
    from .db import Db
    from .keyspace import Keyspace

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: group generic, the key at argv[1]
key_command = COMMANDS.command

_NOT_POSITIVE = "ERR value is out of range, must be positive"
_WRONGTYPE_REPLY = resp.error(WRONGTYPE)
_SIDES = {b"LEFT": True, b"RIGHT": False}
_POP_NAMES = {True: b"LPOP", False: b"RPOP"}
_SIDE_NAMES = {True: b"LEFT", False: b"RIGHT"}


def _bulk(item: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(item), item)


def _bulks(items: list[bytes]) -> bytes:
    return b"*%d\r\n%s" % (len(items), b"".join(
        [b"$%d\r\n%s\r\n" % (len(item), item) for item in items]))


def _list_or_none(ks: Keyspace, db: Db, key: bytes) -> List | None:
    """The list at ``key``, None if there is none; WRONGTYPE otherwise."""
    value = db.keys.get(key)
    if value is not None and db.expires:
        value = ks.lookup(db, key)
    if value is None or type(value) is List:
        return value
    raise CommandError(WRONGTYPE)


def _int(arg: bytes, message: str = NOT_INTEGER) -> int:
    value = parse_ll(arg)
    if value is None:
        raise CommandError(message)
    return value


def _side(arg: bytes) -> bool:
    """LEFT -> True, RIGHT -> False (getListPositionFromObjectOrReply)."""
    side = _SIDES.get(arg.upper())
    if side is None:
        raise CommandError(SYNTAX)
    return side


def timeout_ms_arg(arg: bytes) -> int:
    """A blocking command's timeout in seconds, as Redis 7.0 reads it
    (getTimeoutFromObjectOrReply): a long double, ``ceil(s * 1000)`` ms
    (so 0.0001 is 1 ms, not forever), 0 = forever; what C's cast to long
    long turns negative (inf, out of range) is 'negative'."""
    if arg.isdigit() and len(arg) < 16:
        return int(arg) * 1000  # the usual case: whole seconds
    value = parse_long_double(arg)
    if value is None:
        raise CommandError("ERR timeout is not a float or out of range")
    if isinstance(value, float):  # inf or -inf
        ms = INT64_MIN
    else:
        product = round_long_double(value * 1000)  # (C's long double product)
        ms = INT64_MIN if type(product) is float else ceil(product)
        if not INT64_MIN <= ms <= INT64_MAX:
            ms = INT64_MIN
    if ms < 0:
        raise CommandError("ERR timeout is negative")
    return ms


# ------------------------------------------------------------ changes

def _log(node: Node, ks: Keyspace, db: Db, argv: list[bytes]) -> None:
    """``ks.log(db, *argv)`` with one call less when the AOF already
    stands in ``db`` (hot: every push and pop)."""
    if db.id == ks.aof_db and not ks.replaying:
        ks.changes += 1  # (INFO's changes count, and what keyspace events look at)
        node.log.append_command(*argv)
    else:
        ks.log(db, *argv)


def _removed(node: Node, ks: Keyspace, db: Db, key: bytes, lst: List, size: int) -> None:
    """``size`` bytes of items left ``lst``: account, and delete the key
    if it is now empty (empty lists vanish)."""
    lst.nbytes -= size
    db.memory -= size
    node.memory_changed(-size)
    if not lst:
        ks.delete(db, key)
    elif db.watched:
        ks.touched(db, key)


def _pop_items(node: Node, ks: Keyspace, db: Db, key: bytes, lst: List, left: bool,
               count: int) -> list[bytes]:
    pop = lst.popleft if left else lst.pop
    items = [pop() for _ in range(min(count, len(lst)))]
    _removed(node, ks, db, key, lst, items_size(items))
    return items


def _move(node: Node, ks: Keyspace, db: Db, src_key: bytes, src: List, dst_key: bytes,
          dst: List | None, left_from: bool, left_to: bool) -> bytes:
    """LMOVE's effect (src non-empty, dst a list or missing); not logged."""
    item = src.popleft() if left_from else src.pop()
    size = item_size(item)
    src.nbytes -= size
    if dst is None:
        dst = List()
        ks.store(db, dst_key, dst)  # (blocked clients of dst_key: served after)
    if left_to:
        dst.appendleft(item)
    else:
        dst.append(item)
    dst.nbytes += size  # the bytes moved from one list to the other
    if db.watched:
        ks.touched(db, src_key)
        ks.touched(db, dst_key)
    if not src:
        ks.delete(db, src_key)
    return item


# ------------------------------------------------------------- pushes

def _push(node: Node, client: Client, argv: list[bytes], left: bool, existing: bool) -> bytes:
    ks = node.keyspace
    db = ks.dbs[client.db]
    key = argv[1]
    lst = db.keys.get(key)
    if lst is not None and db.expires:
        lst = ks.lookup(db, key)
    if lst is None:
        if existing:
            return resp.ZERO  # LPUSHX/RPUSHX: only onto a list
        lst = List()
        ks.store(db, key, lst)  # (blocked clients of key: served after)
    elif type(lst) is not List:
        raise CommandError(WRONGTYPE)
    if len(argv) == 3:
        item = argv[2]
        # (lst.appendleft / lst.append, inline: hot)
        if left:
            part = lst.head
            part.append(item)
            if len(part) >= 2 * PACK:
                lst.pack_head()
        else:
            part = lst.tail
            part.append(item)
            if len(part) >= 2 * PACK:
                lst.pack_tail()
        size = ITEM_OVERHEAD + len(item)
    else:
        items = argv[2:]
        if left:
            lst.extendleft(items)
        else:
            lst.extend(items)
        size = items_size(items)
    lst.nbytes += size
    db.memory += size
    node.memory_changed(size)
    if db.watched:
        ks.touched(db, key)
    _log(node, ks, db, argv)
    return b":%d\r\n" % (len(lst.head) + lst.packed + len(lst.tail))


@key_command("LPUSH", -3, "write denyoom fast")
def lpush(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _push(node, client, argv, True, False)


@key_command("RPUSH", -3, "write denyoom fast")
def rpush(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _push(node, client, argv, False, False)


@key_command("LPUSHX", -3, "write denyoom fast")
def lpushx(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _push(node, client, argv, True, True)


@key_command("RPUSHX", -3, "write denyoom fast")
def rpushx(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _push(node, client, argv, False, True)


@key_command("LINSERT", 5, "write denyoom")
def linsert(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """LINSERT key BEFORE|AFTER pivot element"""
    where = argv[2].upper()
    if where != b"BEFORE" and where != b"AFTER":
        raise CommandError(SYNTAX)
    ks = node.keyspace
    db = ks.dbs[client.db]
    key = argv[1]
    lst = _list_or_none(ks, db, key)
    if lst is None:
        return resp.ZERO
    try:
        index = lst.index(argv[3])
    except ValueError:
        return b":-1\r\n"
    item = argv[4]
    lst.insert(index if where == b"BEFORE" else index + 1, item)
    ks.grow(db, item_size(item))
    lst.nbytes += item_size(item)
    if db.watched:
        ks.touched(db, key)
    ks.log(db, *argv)
    return b":%d\r\n" % len(lst)


# --------------------------------------------------------------- pops

def _pop(node: Node, client: Client, argv: list[bytes], left: bool) -> bytes:
    if len(argv) != 2:
        return _pop_count(node, client, argv, left)
    ks = node.keyspace
    db = ks.dbs[client.db]
    key = argv[1]
    lst = db.keys.get(key)
    if lst is not None and db.expires:
        lst = ks.lookup(db, key)
    if lst is None:
        return resp.null(client.proto)
    if type(lst) is not List:
        raise CommandError(WRONGTYPE)
    # (lst.popleft() / lst.pop(), inline: hot)
    if left:
        part = lst.head
        item = part.pop() if part else lst.popleft()
    else:
        part = lst.tail
        item = part.pop() if part else lst.pop()
    size = ITEM_OVERHEAD + len(item)
    lst.nbytes -= size
    db.memory -= size
    node.memory_changed(-size)
    if not (part or lst.packed or lst.head or lst.tail):
        ks.delete(db, key)
    elif db.watched:
        ks.touched(db, key)
    _log(node, ks, db, argv)
    return b"$%d\r\n%s\r\n" % (len(item), item)


def _pop_count(node: Node, client: Client, argv: list[bytes], left: bool) -> bytes:
    if len(argv) > 3:
        raise CommandError(wrong_arity(argv[0].decode("utf-8", "replace").lower()))
    count = parse_ll(argv[2])
    if count is None or count < 0:
        raise CommandError(_NOT_POSITIVE)
    ks = node.keyspace
    db = ks.dbs[client.db]
    lst = _list_or_none(ks, db, argv[1])
    if lst is None:
        return resp.null_array(client.proto)
    if not count:
        return resp.EMPTY_ARRAY
    items = _pop_items(node, ks, db, argv[1], lst, left, count)
    ks.log(db, _POP_NAMES[left], argv[1], b"%d" % len(items))
    return _bulks(items)


@key_command("LPOP", -2, "write fast")
def lpop(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """LPOP key [count]"""
    return _pop(node, client, argv, True)


@key_command("RPOP", -2, "write fast")
def rpop(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """RPOP key [count]"""
    return _pop(node, client, argv, False)


def _mpop_args(argv: list[bytes], numkeys_at: int) -> tuple[list[bytes], bool, int]:
    """LMPOP's and BLMPOP's ``numkeys key... LEFT|RIGHT [COUNT n]`` from
    ``argv[numkeys_at:]``: (keys, left, count)."""
    numkeys = parse_ll(argv[numkeys_at])
    if numkeys is None or numkeys < 1:
        raise CommandError("ERR numkeys should be greater than 0")
    where_at = numkeys_at + numkeys + 1
    if where_at >= len(argv):
        raise CommandError(SYNTAX)
    left = _side(argv[where_at])
    count = -1
    i = where_at + 1
    while i < len(argv):
        if count == -1 and argv[i].upper() == b"COUNT" and i + 1 < len(argv):
            count = parse_ll(argv[i + 1]) or 0
            if count < 1:
                raise CommandError("ERR count should be greater than 0")
            i += 2
        else:
            raise CommandError(SYNTAX)
    return argv[numkeys_at + 1:where_at], left, max(count, 1)


def _mpop_reply(key: bytes, items: list[bytes]) -> bytes:
    return b"*2\r\n$%d\r\n%s\r\n%s" % (len(key), key, _bulks(items))


@key_command("LMPOP", -4, "write", keys=(0, 0, 0))
def lmpop(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]"""
    keys, left, count = _mpop_args(argv, 1)
    ks = node.keyspace
    db = ks.dbs[client.db]
    for key in keys:
        lst = _list_or_none(ks, db, key)
        if lst is not None:
            items = _pop_items(node, ks, db, key, lst, left, count)
            ks.log(db, _POP_NAMES[left], key, b"%d" % len(items))
            return _mpop_reply(key, items)
    return resp.null_array(client.proto)


def _lmove(node: Node, client: Client, src_key: bytes, dst_key: bytes, left_from: bool,
           left_to: bool) -> bytes:
    ks = node.keyspace
    db = ks.dbs[client.db]
    src = _list_or_none(ks, db, src_key)
    if src is None:
        return resp.null(client.proto)
    dst = _list_or_none(ks, db, dst_key)
    item = _move(node, ks, db, src_key, src, dst_key, dst, left_from, left_to)
    ks.log(db, b"LMOVE", src_key, dst_key, _SIDE_NAMES[left_from], _SIDE_NAMES[left_to])
    return _bulk(item)


@key_command("RPOPLPUSH", 3, "write denyoom", keys=(1, 2, 1))
def rpoplpush(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _lmove(node, client, argv[1], argv[2], False, True)


@key_command("LMOVE", 5, "write denyoom", keys=(1, 2, 1))
def lmove(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """LMOVE source destination LEFT|RIGHT LEFT|RIGHT"""
    left_from = _side(argv[3])
    left_to = _side(argv[4])
    return _lmove(node, client, argv[1], argv[2], left_from, left_to)


# ------------------------------------------------------------- reads

@key_command("LLEN", 2, "readonly fast")
def llen(node: Node, client: Client, argv: list[bytes]) -> bytes:
    ks = node.keyspace
    lst = _list_or_none(ks, ks.dbs[client.db], argv[1])
    return b":%d\r\n" % (len(lst) if lst is not None else 0)


@key_command("LINDEX", 3, "readonly")
def lindex(node: Node, client: Client, argv: list[bytes]) -> bytes:
    ks = node.keyspace
    lst = _list_or_none(ks, ks.dbs[client.db], argv[1])
    if lst is None:
        return resp.null(client.proto)
    index = _int(argv[2])
    if index < 0:
        index += len(lst)
    if not 0 <= index < len(lst):
        return resp.null(client.proto)
    return _bulk(lst[index])


@key_command("LRANGE", 4, "readonly")
def lrange(node: Node, client: Client, argv: list[bytes]) -> bytes:
    start, end = _int(argv[2]), _int(argv[3])
    ks = node.keyspace
    lst = _list_or_none(ks, ks.dbs[client.db], argv[1])
    if lst is None:
        return resp.EMPTY_ARRAY
    bounds = clamp_range(start, end, len(lst))
    if bounds is None:
        return resp.EMPTY_ARRAY
    return _bulks(items_in_range(lst, *bounds))


_LPOS_OPTIONS = (b"RANK", b"COUNT", b"MAXLEN")


@key_command("LPOS", -3, "readonly")
def lpos(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]"""
    rank, count, maxlen = 1, -1, 0
    i = 3
    while i < len(argv):
        option = argv[i].upper()
        if option not in _LPOS_OPTIONS or i + 1 >= len(argv):
            raise CommandError(SYNTAX)
        arg = argv[i + 1]
        if option == b"RANK":
            rank = _int(arg)
            if rank == 0:
                raise CommandError(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from "
                    "the second ... or use negative to start from the end of the list")
        elif option == b"COUNT":
            parsed = parse_ll(arg)
            count = -1 if parsed is None else parsed
            if count < 0:
                raise CommandError("ERR COUNT can't be negative")
        else:
            parsed = parse_ll(arg)
            maxlen = -1 if parsed is None else parsed
            if maxlen < 0:
                raise CommandError("ERR MAXLEN can't be negative")
        i += 2
    ks = node.keyspace
    lst = _list_or_none(ks, ks.dbs[client.db], argv[1])
    if lst is None:
        return resp.EMPTY_ARRAY if count != -1 else resp.null(client.proto)
    limit = count if count != -1 else 1
    skip = abs(rank) - 1
    if rank == INT64_MIN:
        # Redis 7.0 negates the rank in C: LLONG_MIN stays negative, every
        # hit from the tail counts, and the COUNT test overflows: no limit.
        skip = limit = 0
    found = positions(lst, argv[2], rank < 0, skip, limit, maxlen)
    if count != -1:
        return b"*%d\r\n%s" % (len(found), b"".join(b":%d\r\n" % i for i in found))
    return b":%d\r\n" % found[0] if found else resp.null(client.proto)


# ------------------------------------------------------ other writes

@key_command("LSET", 4, "write denyoom")
def lset(node: Node, client: Client, argv: list[bytes]) -> bytes:
    ks = node.keyspace
    db = ks.dbs[client.db]
    key = argv[1]
    lst = _list_or_none(ks, db, key)
    if lst is None:
        raise CommandError("ERR no such key")
    index = _int(argv[2])
    if index < 0:
        index += len(lst)
    if not 0 <= index < len(lst):
        raise CommandError("ERR index out of range")
    item = argv[3]
    delta = len(item) - len(lst[index])
    lst[index] = item
    lst.nbytes += delta
    ks.grow(db, delta)
    if db.watched:
        ks.touched(db, key)
    ks.log(db, *argv)
    return resp.OK


@key_command("LTRIM", 4, "write")
def ltrim(node: Node, client: Client, argv: list[bytes]) -> bytes:
    start, end = _int(argv[2]), _int(argv[3])
    ks = node.keyspace
    db = ks.dbs[client.db]
    key = argv[1]
    lst = _list_or_none(ks, db, key)
    if lst is None:
        return resp.OK
    length = len(lst)
    bounds = clamp_range(start, end, length)
    if bounds is None:
        from_left, from_right = length, 0
    else:
        from_left, from_right = bounds[0], length - 1 - bounds[1]
    if not from_left and not from_right:
        return resp.OK
    kept = lst.slice(from_left, length - from_right) if bounds is not None else []
    size = lst.nbytes - items_size(kept)
    lst.replace(kept)
    _removed(node, ks, db, key, lst, size)
    ks.log(db, *argv)
    return resp.OK


@key_command("LREM", 4, "write")
def lrem(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """LREM key count element"""
    count = _int(argv[2])
    ks = node.keyspace
    db = ks.dbs[client.db]
    key = argv[1]
    lst = _list_or_none(ks, db, key)
    if lst is None:
        return resp.ZERO
    removed = remove(lst, argv[3], count)
    if removed:
        _removed(node, ks, db, key, lst, items_size(removed))
        ks.log(db, *argv)
    return b":%d\r\n" % len(removed)


# ------------------------------------------------------------ blocking

class PopWaiter(KeyWaiter):
    """BLPOP/BRPOP (count -1) and BLMPOP (count >= 1) waiting."""

    __slots__ = ("left", "count")

    def __init__(self, db: int, keys: tuple[bytes, ...], left: bool, count: int) -> None:
        super().__init__(db, keys, List)
        self.left = left
        self.count = count

    def serve(self, node: Node, client: Client, db: Db, key: bytes, value: object) -> bytes:
        assert isinstance(value, List)
        ks = node.keyspace
        if self.count == -1:
            item = _pop_items(node, ks, db, key, value, self.left, 1)[0]
            ks.log(db, _POP_NAMES[self.left], key)
            return b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(item), item)
        items = _pop_items(node, ks, db, key, value, self.left, self.count)
        ks.log(db, _POP_NAMES[self.left], key, b"%d" % len(items))
        return _mpop_reply(key, items)

    def as_command(self, key: bytes) -> list[bytes]:
        return [_POP_NAMES[self.left], key]


class MoveWaiter(KeyWaiter):
    """BLMOVE/BRPOPLPUSH waiting for its source."""

    __slots__ = ("dst", "left_from", "left_to")

    def __init__(self, db: int, src: bytes, dst: bytes, left_from: bool, left_to: bool) -> None:
        super().__init__(db, (src,), List)
        self.dst = dst
        self.left_from = left_from
        self.left_to = left_to

    def serve(self, node: Node, client: Client, db: Db, key: bytes, value: object) -> bytes:
        assert isinstance(value, List)
        ks = node.keyspace
        dst = ks.lookup(db, self.dst)
        if dst is not None and type(dst) is not List:
            return _WRONGTYPE_REPLY  # Redis 7.0: unblocked with the error, nothing moved
        item = _move(node, ks, db, key, value, self.dst, dst,
                     self.left_from, self.left_to)
        ks.log(db, b"LMOVE", key, self.dst, _SIDE_NAMES[self.left_from],
               _SIDE_NAMES[self.left_to])
        return _bulk(item)

    def as_command(self, key: bytes) -> list[bytes]:
        return [b"LMOVE", key, self.dst, _SIDE_NAMES[self.left_from], _SIDE_NAMES[self.left_to]]


def _blocking_pop(node: Node, client: Client, keys: list[bytes], left: bool, count: int,
                  timeout_ms: int) -> bytes | None:
    """BLPOP/BRPOP (count -1), BLMPOP: pop from the first non-empty key,
    else block (Redis's blockingPopGenericCommand)."""
    ks = node.keyspace
    db = ks.dbs[client.db]
    for key in keys:
        lst = _list_or_none(ks, db, key)
        if lst is None:
            continue
        if count == -1:
            item = lst.popleft() if left else lst.pop()
            _removed(node, ks, db, key, lst, item_size(item))
            ks.log(db, _POP_NAMES[left], key)
            return b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(item), item)
        items = _pop_items(node, ks, db, key, lst, left, count)
        ks.log(db, _POP_NAMES[left], key, b"%d" % len(items))
        return _mpop_reply(key, items)
    blocking = ks.blocking
    if blocking.deny():
        return resp.null_array(client.proto)  # inside EXEC/a script: as timed out
    blocking.block(client, PopWaiter(client.db, tuple(dict.fromkeys(keys)), left, count),
                   timeout_ms)
    return None


@key_command("BLPOP", -3, "write", keys=(1, -2, 1))
def blpop(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    """BLPOP key [key ...] timeout"""
    return _blocking_pop(node, client, argv[1:-1], True, -1, timeout_ms_arg(argv[-1]))


@key_command("BRPOP", -3, "write", keys=(1, -2, 1))
def brpop(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    """BRPOP key [key ...] timeout"""
    return _blocking_pop(node, client, argv[1:-1], False, -1, timeout_ms_arg(argv[-1]))


@key_command("BLMPOP", -5, "write", keys=(0, 0, 0))
def blmpop(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    """BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]"""
    keys, left, count = _mpop_args(argv, 2)
    return _blocking_pop(node, client, keys, left, count, timeout_ms_arg(argv[1]))


def _blocking_move(node: Node, client: Client, src_key: bytes, dst_key: bytes,
                   left_from: bool, left_to: bool, timeout_ms: int) -> bytes | None:
    """Redis's blmoveGenericCommand: move now, or block on the source (a
    destination of the wrong type is found out when it is served)."""
    ks = node.keyspace
    if _list_or_none(ks, ks.dbs[client.db], src_key) is not None:
        return _lmove(node, client, src_key, dst_key, left_from, left_to)
    blocking = ks.blocking
    if blocking.deny():
        return resp.null(client.proto)  # (a null bulk here, a null array on timeout)
    blocking.block(client, MoveWaiter(client.db, src_key, dst_key, left_from, left_to),
                   timeout_ms)
    return None


@key_command("BRPOPLPUSH", 4, "write denyoom", keys=(1, 2, 1))
def brpoplpush(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    """BRPOPLPUSH source destination timeout"""
    return _blocking_move(node, client, argv[1], argv[2], False, True,
                          timeout_ms_arg(argv[3]))


@key_command("BLMOVE", 6, "write denyoom", keys=(1, 2, 1))
def blmove(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    """BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout"""
    left_from = _side(argv[3])
    left_to = _side(argv[4])
    return _blocking_move(node, client, argv[1], argv[2], left_from, left_to,
                          timeout_ms_arg(argv[5]))
