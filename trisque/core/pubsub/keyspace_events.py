"""Keyspace notifications (Redis 7.0's notify.c): with
``notify-keyspace-events`` set, a command that changes keys publishes, per
key and event, ``__keyspace@<db>__:<key>`` with the event as message (K)
and ``__keyevent@<db>__:<event>`` with the key as message (E), for the
classes chosen (g generic, $ strings, l lists, s sets, h hashes, z sorted
sets, t streams, x expired, e evicted, n new keys, m key misses, d module;
A is g$lshzxetd).

How events are found, without touching every command:

- A key created (``Keyspace.store`` of a missing key) is noted as "new"
  and an expired key deleted (``Keyspace.expire_key``) publishes
  "expired" at once: both are central in the keyspace, as in Redis's
  dbAdd and deleteExpiredKeyAndPropagate.
- The command's own events come from ``EVENTS``: per command name, what
  Redis's handler notifies, computed after it ran from its arguments and
  the keys' state, and only if it wrote (the keyspace's count of logged
  writes moved: Redis notifies after a change only).  Some need a look
  before it runs (which of DEL's keys exist, which list BLPOP pops).
  A "new" goes right before the first event about its key (Redis's dbAdd
  comes just before the command's notify), or first for RENAME and MOVE.
- The node looks at one int per command (``Keyspace.notify_flags``): with
  the option empty (the default) nothing else runs.

- A blocked client served later (a BLPOP answered by another client's
  push) notifies its pop as the same command run at once would
  (``serve_waiter``), after the push's own events.

Notifications are node-local, as Redis Cluster's: published to this
node's subscribers only, never sent over the cluster bus.  Not emitted:
"keymiss" (m is accepted), "evicted" (a node evicts no key), module
events, and the events of a blocked XREADGROUP when it is served.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Final

from ..admin.config_values import ConfigError
from ..keyspace.streams import Stream

if TYPE_CHECKING:
    from ..client import Client
    from ..command import Command
    from ..keyspace.db import Db
    from ..keyspace.keyspace import Keyspace
    from ..node import Node

KEYSPACE: Final = 1 << 0  # K
KEYEVENT: Final = 1 << 1  # E
GENERIC: Final = 1 << 2  # g
STRING: Final = 1 << 3  # $
LIST: Final = 1 << 4  # l
SET: Final = 1 << 5  # s
HASH: Final = 1 << 6  # h
ZSET: Final = 1 << 7  # z
EXPIRED: Final = 1 << 8  # x
EVICTED: Final = 1 << 9  # e
STREAM: Final = 1 << 10  # t
KEY_MISS: Final = 1 << 11  # m (not in A)
MODULE: Final = 1 << 13  # d
NEW: Final = 1 << 14  # n (not in A)
ALL: Final = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE

_LETTERS: Final = {"A": ALL, "g": GENERIC, "$": STRING, "l": LIST, "s": SET, "h": HASH,
                   "z": ZSET, "x": EXPIRED, "e": EVICTED, "K": KEYSPACE, "E": KEYEVENT,
                   "t": STREAM, "m": KEY_MISS, "d": MODULE, "n": NEW}
BAD_CLASS: Final = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."


def parse_classes(text: str) -> int:
    """The flags of a notify-keyspace-events value, -1 for a letter that
    names no class (keyspaceEventsStringToFlags)."""
    flags = 0
    for letter in text:
        flag = _LETTERS.get(letter)
        if flag is None:
            return -1
        flags |= flag
    return flags


def classes_text(flags: int) -> str:
    """The value CONFIG GET shows: A for all of A's classes, then K E m."""
    if flags & ALL == ALL:
        text = "A"
    else:
        text = "".join(letter for letter, flag in (
            ("g", GENERIC), ("$", STRING), ("l", LIST), ("s", SET), ("h", HASH),
            ("z", ZSET), ("x", EXPIRED), ("e", EVICTED), ("t", STREAM), ("d", MODULE),
            ("n", NEW)) if flags & flag)
    return text + "".join(letter for letter, flag in (
        ("K", KEYSPACE), ("E", KEYEVENT), ("m", KEY_MISS)) if flags & flag)


def follow(keyspace: Keyspace) -> None:
    """Keep ``keyspace.notify_flags`` to CONFIG's notify-keyspace-events,
    shown as Redis shows it (KEA reads back AKE)."""
    config = keyspace.node.config

    def change(text: str) -> None:
        flags = parse_classes(text)
        if flags < 0:
            raise ConfigError("CONFIG SET failed (possibly related to argument "
                              f"'notify-keyspace-events') - {BAD_CLASS}")
        keyspace.notify_flags = flags
        config.notify_keyspace_events = classes_text(flags)

    change(config.notify_keyspace_events)
    config.on_change["notify-keyspace-events"] = change


def publish(node: Node, kind: int, event: bytes, key: bytes, db_id: int) -> None:
    """notifyKeyspaceEvent: to this node's subscribers only."""
    flags = node.keyspace.notify_flags
    if not flags & kind:
        return
    pubsub = node.pubsub
    if flags & KEYSPACE:
        pubsub.publish(b"__keyspace@%d__:%s" % (db_id, key), event)
    if flags & KEYEVENT:
        pubsub.publish(b"__keyevent@%d__:%s" % (db_id, event), key)


# An event of a command: (class, name, key, db id or -1 for the client's).
Event = tuple[int, bytes, bytes, int]
Before = Callable[["Keyspace", "Db", list[bytes]], Any]
After = Callable[["Keyspace", "Db", list[bytes], Any], list[Event]]


class CommandEvents:
    """What one command notifies: ``after`` (given what ``before`` saw,
    if any) lists its events; ``news_first``: "new" events go first."""

    __slots__ = ("before", "after", "news_first")

    def __init__(self, after: After, before: Before | None = None,
                 news_first: bool = False) -> None:
        self.after = after
        self.before = before
        self.news_first = news_first


def run_command(node: Node, client: Client, command: Command, argv: list[bytes]) -> Any:
    """node._run's handler call while notifications are on: the handler,
    then its events.  Returns the reply."""
    keyspace = node.keyspace
    entry = EVENTS.get(command.name)
    db = keyspace.dbs[client.db]
    seen = entry.before(keyspace, db, argv) if entry is not None and entry.before else None
    # wrote: logged more than the DELs of keys expired meanwhile
    writes = keyspace.changes - keyspace.expired_keys
    outer_created = keyspace.created
    created: list[tuple[int, bytes]] = []
    keyspace.created = created
    try:
        reply = command.handler(node, client, argv)
    finally:
        keyspace.created = outer_created
    if keyspace.changes - keyspace.expired_keys == writes and not created:
        return reply
    events = entry.after(keyspace, db, argv, seen) if entry is not None else []
    _emit(node, client.db, events, created, entry is not None and entry.news_first)
    return reply


def serve_waiter(node: Node, client: Client, waiter: Any, db: Db, key: bytes,
                 value: object) -> bytes | None:
    """blocking.serve_ready's offer to a blocked client while notifications
    are on: what the client's pop (or move) did notifies as the same
    command run at once would (Redis's serveClientBlockedOnList...)."""
    keyspace = node.keyspace
    writes = keyspace.changes - keyspace.expired_keys
    outer_created = keyspace.created
    created: list[tuple[int, bytes]] = []
    keyspace.created = created
    try:
        reply = waiter.offer(node, client, db, key, value)
    finally:
        keyspace.created = outer_created
    if keyspace.changes - keyspace.expired_keys == writes and not created:
        return reply
    argv = waiter.as_command(key)
    entry = EVENTS.get(argv[0].decode()) if argv else None
    events = entry.after(keyspace, db, argv, None) if entry is not None else []
    _emit(node, db.id, events, created, False)
    return reply


def _emit(node: Node, client_db: int, events: list[Event], created: list[tuple[int, bytes]],
          news_first: bool) -> None:
    pending = list(created)
    if news_first:
        for db_id, key in pending:
            publish(node, NEW, b"new", key, db_id)
        pending = []
    for kind, name, key, db_id in events:
        db_id = client_db if db_id < 0 else db_id
        if pending and (db_id, key) in pending:
            pending.remove((db_id, key))
            publish(node, NEW, b"new", key, db_id)
        publish(node, kind, name, key, db_id)
    for db_id, key in pending:  # (created by a command without events of its own)
        publish(node, NEW, b"new", key, db_id)


# ------------------------------------------------------------ the commands

def _exists(ks: Keyspace, db: Db, key: bytes) -> bool:
    return key in db.keys and not ks.is_expired(db, key, ks.node.now_ms())


def _size(ks: Keyspace, db: Db, key: bytes) -> int:
    if not _exists(ks, db, key):
        return 0
    value = db.keys[key]
    return value.length if type(value) is Stream else len(value)  # type: ignore[arg-type]


def _gone(db: Db, key: bytes) -> bool:
    return key not in db.keys


def _one(kind: int, name: bytes, key_at: int = 1) -> After:
    """The event ``name`` on the key at ``key_at``."""
    def after(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
        return [(kind, name, argv[key_at], -1)]
    return after


def _or_del(kind: int, name: bytes) -> After:
    """``name`` on the first key, and "del" if that emptied it."""
    def after(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
        events = [(kind, name, argv[1], -1)]
        if _gone(db, argv[1]):
            events.append((GENERIC, b"del", argv[1], -1))
        return events
    return after


def _store(kind: int, name: bytes, key_at: int = 1) -> After:
    """A *STORE command: ``name`` on its destination, "del" if the result
    was empty (the destination existed: something was written)."""
    def after(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
        key = argv[key_at]
        return [(GENERIC, b"del", key, -1) if _gone(db, key) else (kind, name, key, -1)]
    return after


_EXPIRE_OPTIONS: Final = frozenset((b"EX", b"PX", b"EXAT", b"PXAT"))


def _set(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    events: list[Event] = [(STRING, b"set", argv[1], -1)]
    if any(arg.upper() in _EXPIRE_OPTIONS for arg in argv[3:]):
        events.append((GENERIC, b"expire", argv[1], -1))
    return events


def _set_expire(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    return [(STRING, b"set", argv[1], -1), (GENERIC, b"expire", argv[1], -1)]


def _mset(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    return [(STRING, b"set", key, -1) for key in argv[1::2]]


def _getex(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    key = argv[1]
    if _gone(db, key):
        return [(GENERIC, b"del", key, -1)]
    if any(arg.upper() == b"PERSIST" for arg in argv[2:]):
        return [(GENERIC, b"persist", key, -1)]
    return [(GENERIC, b"expire", key, -1)]


def _expire(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    key = argv[1]
    return [(GENERIC, b"del" if _gone(db, key) else b"expire", key, -1)]


def _existing(ks: Keyspace, db: Db, argv: list[bytes]) -> list[bytes]:
    return [key for key in dict.fromkeys(argv[1:]) if _exists(ks, db, key)]


def _deleted(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    return [(GENERIC, b"del", key, -1) for key in seen if _gone(db, key)]


def _rename(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    return [(GENERIC, b"rename_from", argv[1], -1), (GENERIC, b"rename_to", argv[2], -1)]


def _copy(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    target = -1
    for i, arg in enumerate(argv[3:-1], 3):
        if arg.upper() == b"DB":
            target = int(argv[i + 1])
    return [(GENERIC, b"copy_to", argv[2], target)]


def _move(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    return [(GENERIC, b"move_from", argv[1], db.id), (GENERIC, b"move_to", argv[1], int(argv[2]))]


def _lmove(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    """LMOVE/BLMOVE/RPOPLPUSH/BRPOPLPUSH: the push, then the pop."""
    source, target = argv[1], argv[2]
    if argv[0].upper() in (b"RPOPLPUSH", b"BRPOPLPUSH"):
        wherefrom, whereto = b"RIGHT", b"LEFT"
    else:
        wherefrom, whereto = argv[3].upper(), argv[4].upper()
    events: list[Event] = [
        (LIST, b"lpush" if whereto == b"LEFT" else b"rpush", target, -1),
        (LIST, b"lpop" if wherefrom == b"LEFT" else b"rpop", source, -1)]
    if _gone(db, source):
        events.append((GENERIC, b"del", source, -1))
    return events


def _sizes(keys: Callable[[list[bytes]], list[bytes]]) -> Before:
    def before(ks: Keyspace, db: Db, argv: list[bytes]) -> Any:
        return [(key, _size(ks, db, key)) for key in keys(argv)]
    return before


def _popped(kind: int, name_of: Callable[[list[bytes]], bytes]) -> After:
    """A pop from the first of several keys that had something (BLPOP,
    LMPOP, BZPOPMIN, ZMPOP...): the key whose size changed."""
    def after(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
        for key, size in seen:
            if _size(ks, db, key) != size:
                events = [(kind, name_of(argv), key, -1)]
                if _gone(db, key):
                    events.append((GENERIC, b"del", key, -1))
                return events
        return []
    return after


def _mpop_keys(argv: list[bytes]) -> list[bytes]:
    at = 2 if argv[0].upper() in (b"BLMPOP", b"BZMPOP") else 1
    try:
        return argv[at + 1:at + 1 + int(argv[at])]
    except ValueError:
        return []


def _mpop_where(argv: list[bytes]) -> bytes:
    for arg in argv:
        word = arg.upper()
        if word in (b"LEFT", b"RIGHT", b"MIN", b"MAX"):
            return {b"LEFT": b"lpop", b"RIGHT": b"rpop", b"MIN": b"zpopmin",
                    b"MAX": b"zpopmax"}[word]
    return b""


def _smove(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    source, target = argv[1], argv[2]
    events: list[Event] = [(SET, b"srem", source, -1)]
    if _gone(db, source):
        events.append((GENERIC, b"del", source, -1))
    if not seen:  # the member was not in the destination yet
        events.append((SET, b"sadd", target, -1))
    return events


def _smove_before(ks: Keyspace, db: Db, argv: list[bytes]) -> Any:
    target = db.keys.get(argv[2]) if _exists(ks, db, argv[2]) else None
    try:
        return target is not None and argv[3] in target  # type: ignore[operator]
    except TypeError:
        return False


def _zadd(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    incr = any(arg.upper() == b"INCR" for arg in argv[2:])
    return [(ZSET, b"zincr" if incr else b"zadd", argv[1], -1)]


def _xadd(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    events: list[Event] = [(STREAM, b"xadd", argv[1], -1)]
    if _size(ks, db, argv[1]) < seen + 1:
        events.append((STREAM, b"xtrim", argv[1], -1))
    return events


def _length(ks: Keyspace, db: Db, argv: list[bytes]) -> Any:
    return _size(ks, db, argv[1])


def _xgroup(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    sub = argv[1].lower()
    name = {b"create": b"xgroup-create", b"setid": b"xgroup-setid",
            b"destroy": b"xgroup-destroy", b"createconsumer": b"xgroup-createconsumer",
            b"delconsumer": b"xgroup-delconsumer"}.get(sub)
    return [] if name is None else [(STREAM, name, argv[2], -1)]


def _consumers(ks: Keyspace, db: Db, key: bytes, group: bytes) -> set[bytes]:
    value = db.keys.get(key)
    if type(value) is not Stream or not value.groups or group not in value.groups:
        return set()
    return set(value.groups[group].consumers)


def _claim_before(ks: Keyspace, db: Db, argv: list[bytes]) -> Any:
    return _consumers(ks, db, argv[1], argv[2])


def _claim(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    """XCLAIM / XAUTOCLAIM key group consumer: the consumer they create."""
    created = argv[3] not in seen and argv[3] in _consumers(ks, db, argv[1], argv[2])
    return [(STREAM, b"xgroup-createconsumer", argv[1], -1)] if created else []


def _readgroup_keys(argv: list[bytes]) -> list[bytes]:
    upper = [arg.upper() for arg in argv]
    if b"STREAMS" not in upper:
        return []
    rest = argv[upper.index(b"STREAMS") + 1:]
    return rest[:len(rest) // 2]


def _readgroup_before(ks: Keyspace, db: Db, argv: list[bytes]) -> Any:
    group = argv[2]
    return [(key, _consumers(ks, db, key, group)) for key in _readgroup_keys(argv)]


def _readgroup(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    group, consumer = argv[2], argv[3]
    return [(STREAM, b"xgroup-createconsumer", key, -1) for key, before in seen
            if consumer not in before and consumer in _consumers(ks, db, key, group)]


def _sortstore(ks: Keyspace, db: Db, argv: list[bytes], seen: Any) -> list[Event]:
    upper = [arg.upper() for arg in argv]
    if b"STORE" not in upper[2:-1]:
        return []
    key = argv[upper.index(b"STORE", 2) + 1]
    return [(GENERIC, b"del", key, -1) if _gone(db, key) else (LIST, b"sortstore", key, -1)]


EVENTS: Final[dict[str, CommandEvents]] = {
    # generic
    "DEL": CommandEvents(_deleted, lambda ks, db, argv: _existing(ks, db, argv)),
    "UNLINK": CommandEvents(_deleted, lambda ks, db, argv: _existing(ks, db, argv)),
    "RENAME": CommandEvents(_rename, news_first=True),
    "RENAMENX": CommandEvents(_rename, news_first=True),
    "MOVE": CommandEvents(_move, news_first=True),
    "COPY": CommandEvents(_copy),
    "RESTORE": CommandEvents(_one(GENERIC, b"restore")),
    "EXPIRE": CommandEvents(_expire),
    "PEXPIRE": CommandEvents(_expire),
    "EXPIREAT": CommandEvents(_expire),
    "PEXPIREAT": CommandEvents(_expire),
    "PERSIST": CommandEvents(_one(GENERIC, b"persist")),
    # strings
    "SET": CommandEvents(_set),
    "SETNX": CommandEvents(_one(STRING, b"set")),
    "GETSET": CommandEvents(_one(STRING, b"set")),
    "SETEX": CommandEvents(_set_expire),
    "PSETEX": CommandEvents(_set_expire),
    "MSET": CommandEvents(_mset),
    "MSETNX": CommandEvents(_mset),
    "INCR": CommandEvents(_one(STRING, b"incrby")),
    "DECR": CommandEvents(_one(STRING, b"incrby")),  # (Redis's incrDecrCommand's)
    "INCRBY": CommandEvents(_one(STRING, b"incrby")),
    "DECRBY": CommandEvents(_one(STRING, b"incrby")),
    "INCRBYFLOAT": CommandEvents(_one(STRING, b"incrbyfloat")),
    "APPEND": CommandEvents(_one(STRING, b"append")),
    "SETRANGE": CommandEvents(_one(STRING, b"setrange")),
    "GETDEL": CommandEvents(_one(GENERIC, b"del")),
    "GETEX": CommandEvents(_getex),
    "SETBIT": CommandEvents(_one(STRING, b"setbit")),
    "BITFIELD": CommandEvents(_one(STRING, b"setbit")),
    "BITOP": CommandEvents(_store(STRING, b"set", 2)),
    "PFADD": CommandEvents(_one(STRING, b"pfadd")),
    "PFMERGE": CommandEvents(_one(STRING, b"pfadd")),
    # lists
    "LPUSH": CommandEvents(_one(LIST, b"lpush")),
    "LPUSHX": CommandEvents(_one(LIST, b"lpush")),
    "RPUSH": CommandEvents(_one(LIST, b"rpush")),
    "RPUSHX": CommandEvents(_one(LIST, b"rpush")),
    "LINSERT": CommandEvents(_one(LIST, b"linsert")),
    "LSET": CommandEvents(_one(LIST, b"lset")),
    "LTRIM": CommandEvents(_or_del(LIST, b"ltrim")),
    "LREM": CommandEvents(_or_del(LIST, b"lrem")),
    "LPOP": CommandEvents(_or_del(LIST, b"lpop")),
    "RPOP": CommandEvents(_or_del(LIST, b"rpop")),
    "LMOVE": CommandEvents(_lmove),
    "BLMOVE": CommandEvents(_lmove),
    "RPOPLPUSH": CommandEvents(_lmove),
    "BRPOPLPUSH": CommandEvents(_lmove),
    "BLPOP": CommandEvents(_popped(LIST, lambda argv: b"lpop"),
                           _sizes(lambda argv: argv[1:-1])),
    "BRPOP": CommandEvents(_popped(LIST, lambda argv: b"rpop"),
                           _sizes(lambda argv: argv[1:-1])),
    "LMPOP": CommandEvents(_popped(LIST, _mpop_where), _sizes(_mpop_keys)),
    "BLMPOP": CommandEvents(_popped(LIST, _mpop_where), _sizes(_mpop_keys)),
    "SORT": CommandEvents(_sortstore),
    # sets
    "SADD": CommandEvents(_one(SET, b"sadd")),
    "SREM": CommandEvents(_or_del(SET, b"srem")),
    "SPOP": CommandEvents(_or_del(SET, b"spop")),
    "SMOVE": CommandEvents(_smove, _smove_before),
    "SINTERSTORE": CommandEvents(_store(SET, b"sinterstore")),
    "SUNIONSTORE": CommandEvents(_store(SET, b"sunionstore")),
    "SDIFFSTORE": CommandEvents(_store(SET, b"sdiffstore")),
    # hashes
    "HSET": CommandEvents(_one(HASH, b"hset")),
    "HMSET": CommandEvents(_one(HASH, b"hset")),
    "HSETNX": CommandEvents(_one(HASH, b"hset")),
    "HINCRBY": CommandEvents(_one(HASH, b"hincrby")),
    "HINCRBYFLOAT": CommandEvents(_one(HASH, b"hincrbyfloat")),
    "HDEL": CommandEvents(_or_del(HASH, b"hdel")),
    # sorted sets
    "ZADD": CommandEvents(_zadd),
    "ZINCRBY": CommandEvents(_one(ZSET, b"zincr")),
    "ZREM": CommandEvents(_or_del(ZSET, b"zrem")),
    "ZREMRANGEBYSCORE": CommandEvents(_or_del(ZSET, b"zremrangebyscore")),
    "ZREMRANGEBYRANK": CommandEvents(_or_del(ZSET, b"zremrangebyrank")),
    "ZREMRANGEBYLEX": CommandEvents(_or_del(ZSET, b"zremrangebylex")),
    "ZPOPMIN": CommandEvents(_or_del(ZSET, b"zpopmin")),
    "ZPOPMAX": CommandEvents(_or_del(ZSET, b"zpopmax")),
    "BZPOPMIN": CommandEvents(_popped(ZSET, lambda argv: b"zpopmin"),
                              _sizes(lambda argv: argv[1:-1])),
    "BZPOPMAX": CommandEvents(_popped(ZSET, lambda argv: b"zpopmax"),
                              _sizes(lambda argv: argv[1:-1])),
    "ZMPOP": CommandEvents(_popped(ZSET, _mpop_where), _sizes(_mpop_keys)),
    "BZMPOP": CommandEvents(_popped(ZSET, _mpop_where), _sizes(_mpop_keys)),
    "ZUNIONSTORE": CommandEvents(_store(ZSET, b"zunionstore")),
    "ZINTERSTORE": CommandEvents(_store(ZSET, b"zinterstore")),
    "ZDIFFSTORE": CommandEvents(_store(ZSET, b"zdiffstore")),
    "ZRANGESTORE": CommandEvents(_store(ZSET, b"zrangestore")),
    # streams
    "XADD": CommandEvents(_xadd, _length),
    "XDEL": CommandEvents(_one(STREAM, b"xdel")),
    "XTRIM": CommandEvents(_one(STREAM, b"xtrim")),
    "XSETID": CommandEvents(_one(STREAM, b"xsetid")),
    "XGROUP": CommandEvents(_xgroup),
    "XCLAIM": CommandEvents(_claim, _claim_before),
    "XAUTOCLAIM": CommandEvents(_claim, _claim_before),
    "XREADGROUP": CommandEvents(_readgroup, _readgroup_before),
}
