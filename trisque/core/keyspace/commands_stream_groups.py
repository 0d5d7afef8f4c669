"""Consumer group commands: XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, with
Redis 7.0's replies and errors (t_stream.c).  XREADGROUP is in
commands_stream_read.py; what the PEL changes log is stream_delivery.py's.

AOF: XGROUP and XACK log as they came when they changed something
(``$`` in CREATE/SETID replays to the same ID: the stream is the same);
XCLAIM and XAUTOCLAIM log each entry they claimed as the idempotent
XCLAIM of stream_delivery.py, and each they dropped (its stream entry
gone) as its XACK.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Iterable

from ...protocol import resp
from ...protocol.errors import CommandError
from ..command import Commands
from .args import int_arg
from .containers import changed
from .commands_streams import (SYNTAX, check_subcommand, entry_reply, stream_of,
                               subcommand_syntax)
from .stream_delivery import consumer_for, log_claim, log_drop, log_group_id, unrecorded
from .stream_ids import MASK64, bulk_id, parse_id, parse_interval, parse_strict
from .streams import INVALID_ENTRIES_READ, Consumer, Group, Nack, Stream

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: group generic, the key at argv[1]
key_command = COMMANDS.command

_XGROUP_HELP = [
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
]
_XGROUP_ARITY = {b"CREATE": -5, b"SETID": -5, b"DESTROY": 4, b"CREATECONSUMER": 5,
                 b"DELCONSUMER": 5, b"HELP": 2}


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _nogroup(key: bytes, group: bytes) -> CommandError:
    return CommandError("NOGROUP No such key '%s' or consumer group '%s'" % (
        _text(key), _text(group)))


def _group_of(node: Node, client: Client, key: bytes,
              group_name: bytes) -> tuple[Stream | None, Group | None]:
    s = stream_of(node, client, key)
    return s, (s.group(group_name) if s is not None else None)


@key_command("XGROUP", -2, "write denyoom", keys=(2, 2, 1),
             summary="XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n] | SETID key "
                     "group id|$ [ENTRIESREAD n] | DESTROY key group | CREATECONSUMER key "
                     "group consumer | DELCONSUMER key group consumer | HELP")
def xgroup(node: Node, client: Client, argv: list[bytes]) -> bytes:
    sub = check_subcommand(argv, _XGROUP_ARITY)
    argc = len(argv)
    mkstream = False
    entries_read = INVALID_ENTRIES_READ
    s: Stream | None = None
    g: Group | None = None
    ks = node.keyspace
    db = ks.dbs[client.db]
    if argc >= 4:
        i = 5
        while i < argc:
            opt = argv[i].upper()
            if sub == b"CREATE" and opt == b"MKSTREAM":
                mkstream = True
                i += 1
            elif sub in (b"CREATE", b"SETID") and opt == b"ENTRIESREAD" and i + 1 < argc:
                entries_read = int_arg(argv[i + 1])
                if entries_read < 0 and entries_read != INVALID_ENTRIES_READ:
                    raise CommandError("ERR value for ENTRIESREAD must be positive or -1")
                i += 2
            else:
                raise subcommand_syntax(argv)
        s = stream_of(node, client, argv[2])
        if not mkstream:
            if s is None:
                raise CommandError(
                    "ERR The XGROUP subcommand requires the key to exist. Note that for "
                    "CREATE you may want to use the MKSTREAM option to create an empty "
                    "stream automatically.")
            g = s.group(argv[3])
            if g is None and sub in (b"SETID", b"CREATECONSUMER", b"DELCONSUMER"):
                raise CommandError("NOGROUP No such consumer group '%s' for key name '%s'"
                                   % (_text(argv[3]), _text(argv[2])))
    key = argv[2] if argc > 2 else b""
    if sub == b"HELP":
        return resp.encode([resp.Status(line) for line in _XGROUP_HELP], client.proto)
    if sub == b"CREATE" and 5 <= argc <= 8:
        if argv[4] == b"$":
            last_id = s.last_id if s is not None else 0
        else:
            last_id = parse_strict(argv[4])
        created = s is None
        if s is None:
            s = Stream()
        before = s.nbytes
        if s.create_group(argv[3], last_id, entries_read) is None:
            raise CommandError("BUSYGROUP Consumer Group name already exists")
        if created:
            ks.store(db, key, s)
        else:
            changed(node, db, key, s.nbytes - before, False)
        ks.log(db, *argv)
        return resp.OK
    if sub == b"SETID" and argc in (5, 7):
        assert s is not None and g is not None
        if argv[4] == b"$":
            last_id = s.last_id
        else:
            last_id = parse_id(argv[4])[0]
        g.last_id = last_id
        g.entries_read = entries_read
        changed(node, db, key, 0, False)
        ks.log(db, *argv)
        return resp.OK
    if sub == b"DESTROY" and argc == 4:
        assert s is not None
        before = s.nbytes
        if not s.destroy_group(argv[3]):
            return resp.ZERO
        changed(node, db, key, s.nbytes - before, False)
        ks.log(db, *argv)
        ks.blocking.signal(db, key)  # (its blocked XREADGROUPs get -NOGROUP)
        return resp.ONE
    if sub == b"CREATECONSUMER" and argc == 5:
        assert s is not None and g is not None
        before = s.nbytes
        if s.create_consumer(g, argv[4], node.now_ms()) is None:
            return resp.ZERO
        changed(node, db, key, s.nbytes - before, False)
        ks.log(db, *argv)
        return resp.ONE
    if sub == b"DELCONSUMER" and argc == 5:
        assert s is not None and g is not None
        consumer = g.consumers.get(argv[4])
        if consumer is None:
            return resp.ZERO
        before = s.nbytes
        pending = s.delete_consumer(g, consumer)
        changed(node, db, key, s.nbytes - before, False)
        ks.log(db, *argv)
        return b":%d\r\n" % pending
    raise subcommand_syntax(argv)


@key_command("XACK", -4, "write fast", summary="XACK key group id [id ...]")
def xack(node: Node, client: Client, argv: list[bytes]) -> bytes:
    s, g = _group_of(node, client, argv[1], argv[2])
    if s is None or g is None:
        return resp.ZERO
    ids = [parse_strict(arg) for arg in argv[3:]]
    before = s.nbytes
    acked = 0
    for entry_id in ids:
        if s.remove_nack(g, entry_id) is not None:
            acked += 1
    if acked:
        db = node.keyspace.dbs[client.db]
        changed(node, db, argv[1], s.nbytes - before, False)
        if not unrecorded(node):
            node.keyspace.log(db, *argv)
    return b":%d\r\n" % acked


@key_command("XPENDING", -3, "readonly",
             summary="XPENDING key group [[IDLE min-idle-time] start end count [consumer]]")
def xpending(node: Node, client: Client, argv: list[bytes]) -> bytes:
    argc = len(argv)
    if argc != 3 and (argc < 6 or argc > 9):
        raise CommandError(SYNTAX)
    start = end = count = min_idle = 0
    consumer_name: bytes | None = None
    if argc >= 6:
        at = 3
        if argv[3].upper() == b"IDLE":
            min_idle = int_arg(argv[4])
            if argc < 8:
                raise CommandError(SYNTAX)
            at += 2
        count = max(int_arg(argv[at + 2]), 0)
        start, start_ex = parse_interval(argv[at], 0)
        if start_ex:
            if start == (1 << 128) - 1:
                raise CommandError("ERR invalid start ID for the interval")
            start += 1
        end, end_ex = parse_interval(argv[at + 1], MASK64)
        if end_ex:
            if end == 0:
                raise CommandError("ERR invalid end ID for the interval")
            end -= 1
        if at + 3 < argc:
            consumer_name = argv[at + 3]
    s, g = _group_of(node, client, argv[1], argv[2])
    if g is None:
        raise _nogroup(argv[1], argv[2])
    proto = client.proto
    if argc == 3:
        if not g.pel:
            return b"*4\r\n:0\r\n%s%s%s" % (resp.null(proto), resp.null(proto),
                                             resp.null_array(proto))
        owners = []
        for name, consumer in sorted(g.consumers.items()):
            if consumer.pel:
                n = b"%d" % len(consumer.pel)
                owners.append(b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(name), name, len(n), n))
        return b"*4\r\n:%d\r\n%s%s*%d\r\n%s" % (len(g.pel), bulk_id(g.pel_ids.first()),
                                               bulk_id(g.pel_ids.last()), len(owners),
                                               b"".join(owners))
    pel: dict[int, Nack]
    ids: Iterable[int]
    if consumer_name is not None:
        owner_of = g.consumers.get(consumer_name)
        if owner_of is None:
            return b"*0\r\n"
        mine = owner_of.pel_sorted()
        ids = mine[bisect_left(mine, start):]
    else:
        ids = g.pel_ids.since(start)
    pel = g.pel
    now = node.now_ms()
    out = []
    for entry_id in ids:
        if not count or entry_id > end:
            break
        nack = pel[entry_id]
        if min_idle and now - nack.delivery_time < min_idle:
            continue
        count -= 1
        owner = nack.consumer.name if nack.consumer is not None else b""
        out.append(b"*4\r\n%s$%d\r\n%s\r\n:%d\r\n:%d\r\n" % (
            bulk_id(entry_id), len(owner), owner, max(0, now - nack.delivery_time),
            nack.delivery_count))
    return b"*%d\r\n%s" % (len(out), b"".join(out))


def _claim(s: Stream, g: Group, entry_id: int, nack: Nack, consumer: Consumer) -> None:
    """Move ``nack`` (in g's PEL) to ``consumer``."""
    if nack.consumer is not consumer:
        if nack.consumer is not None:
            nack.consumer.pel.pop(entry_id, None)
        nack.consumer = consumer
        consumer.pel[entry_id] = None


@key_command("XCLAIM", -6, "write fast",
             summary="XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] "
                     "[TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] "
                     "[LASTID lastid]")
def xclaim(node: Node, client: Client, argv: list[bytes]) -> bytes:
    key, group_name = argv[1], argv[2]
    s, g = _group_of(node, client, key, group_name)
    if s is None or g is None:
        raise _nogroup(key, group_name)
    min_idle = max(int_arg(argv[4], "ERR Invalid min-idle-time argument for XCLAIM"), 0)
    ids = []
    j = 5
    while j < len(argv):
        try:
            ids.append(parse_strict(argv[j]))
        except CommandError:
            break
        j += 1
    now = node.now_ms()
    retrycount = -1
    delivery_time = -1
    force = justid = False
    last_id = 0
    while j < len(argv):
        more = len(argv) - 1 - j
        opt = argv[j].upper()
        if opt == b"FORCE":
            force = True
        elif opt == b"JUSTID":
            justid = True
        elif opt == b"IDLE" and more:
            j += 1
            delivery_time = now - int_arg(argv[j], "ERR Invalid IDLE option argument for XCLAIM")
        elif opt == b"TIME" and more:
            j += 1
            delivery_time = int_arg(argv[j], "ERR Invalid TIME option argument for XCLAIM")
        elif opt == b"RETRYCOUNT" and more:
            j += 1
            retrycount = int_arg(argv[j], "ERR Invalid RETRYCOUNT option argument for XCLAIM")
        elif opt == b"LASTID" and more:
            j += 1
            last_id = parse_strict(argv[j])
        else:
            raise CommandError("ERR Unrecognized XCLAIM option '%s'" % _text(argv[j]))
        j += 1
    ks = node.keyspace
    db = ks.dbs[client.db]
    before = s.nbytes
    moved_last = False
    if last_id > g.last_id:
        g.last_id = last_id
        moved_last = True
    if delivery_time == -1 or delivery_time < 0 or delivery_time > now:
        delivery_time = now
    consumer: Consumer | None = None
    out = []
    # Replaying our AOF, a forced claim restores a PEL entry whose stream
    # entry is gone (an AOF rewrite keeps them so); live, it drops it.
    restore = force and ks.replaying
    for entry_id in ids:
        nack = g.pel.get(entry_id)
        fv = s.get(entry_id)
        if fv is None and not restore:
            if nack is not None:
                log_drop(node, db, key, group_name, entry_id)
                s.remove_nack(g, entry_id)
            continue
        if force and nack is None:
            nack = Nack(None, now)
            s.add_nack(g, entry_id, nack)
        if nack is None:
            continue
        if nack.consumer is not None and min_idle and now - nack.delivery_time < min_idle:
            continue
        if consumer is None:
            consumer = consumer_for(node, db, key, s, group_name, g, argv[3])
        _claim(s, g, entry_id, nack, consumer)
        nack.delivery_time = delivery_time
        if retrycount >= 0:
            nack.delivery_count = retrycount
        elif not justid:
            nack.delivery_count += 1
        out.append(bulk_id(entry_id) if justid or fv is None else entry_reply(entry_id, fv))
        log_claim(node, db, key, group_name, g, entry_id, nack)
        moved_last = False
    if moved_last:
        log_group_id(node, db, key, group_name, g)
    changed(node, db, key, s.nbytes - before, False)
    return b"*%d\r\n%s" % (len(out), b"".join(out))


@key_command("XAUTOCLAIM", -6, "write fast",
             summary="XAUTOCLAIM key group consumer min-idle-time start [COUNT count] "
                     "[JUSTID]")
def xautoclaim(node: Node, client: Client, argv: list[bytes]) -> bytes:
    key, group_name = argv[1], argv[2]
    min_idle = max(int_arg(argv[4], "ERR Invalid min-idle-time argument for XAUTOCLAIM"), 0)
    start, start_ex = parse_interval(argv[5], 0)
    if start_ex:
        if start == (1 << 128) - 1:
            raise CommandError("ERR invalid start ID for the interval")
        start += 1
    count = 100
    justid = False
    j = 6
    while j < len(argv):
        more = len(argv) - 1 - j
        opt = argv[j].upper()
        if opt == b"COUNT" and more:
            count = int_arg(argv[j + 1], "ERR COUNT must be > 0")
            if not 1 <= count <= ((1 << 63) - 1) // 16:
                raise CommandError("ERR COUNT must be > 0")
            j += 1
        elif opt == b"JUSTID":
            justid = True
        else:
            raise CommandError(SYNTAX)
        j += 1
    s, g = _group_of(node, client, key, group_name)
    if s is None or g is None:
        raise _nogroup(key, group_name)
    ks = node.keyspace
    db = ks.dbs[client.db]
    before = s.nbytes
    attempts = count * 10
    # copied (the loop changes the PEL): what the attempts may read, and the next one
    ids = g.pel_ids.take(start, attempts + 1)
    pos = 0
    now = node.now_ms()
    consumer: Consumer | None = None
    out = []
    deleted = []
    while attempts and count and pos < len(ids):
        attempts -= 1
        entry_id = ids[pos]
        pos += 1
        nack = g.pel[entry_id]
        fv = s.get(entry_id)
        if fv is None:
            log_drop(node, db, key, group_name, entry_id)
            s.remove_nack(g, entry_id)
            deleted.append(bulk_id(entry_id))
            count -= 1
            continue
        if min_idle and now - nack.delivery_time < min_idle:
            continue
        if consumer is None:
            consumer = consumer_for(node, db, key, s, group_name, g, argv[3])
        _claim(s, g, entry_id, nack, consumer)
        nack.delivery_time = now
        if not justid:
            nack.delivery_count += 1
        out.append(bulk_id(entry_id) if justid else entry_reply(entry_id, fv))
        count -= 1
        log_claim(node, db, key, group_name, g, entry_id, nack)
    next_id = ids[pos] if pos < len(ids) else 0
    changed(node, db, key, s.nbytes - before, False)
    return b"*3\r\n%s*%d\r\n%s*%d\r\n%s" % (bulk_id(next_id), len(out), b"".join(out),
                                          len(deleted), b"".join(deleted))
