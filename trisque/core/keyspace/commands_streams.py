"""Stream commands without groups: XADD, XLEN, XRANGE, XREVRANGE, XDEL,
XTRIM, XSETID, XINFO, with Redis 7.0's replies and errors (t_stream.c).

AOF: XADD logs the ID it chose (``*`` and ``<ms>-*`` are not
deterministic), and a trim it made as ``XTRIM key MAXLEN|MINID = <what is
left>`` (an approximate trim depends on when it ran: Redis rewrites ``~``
to ``=`` with the resulting length or first ID the same way).  XDEL,
XSETID log as they came when they changed something.  The groups'
commands are in commands_stream_groups.py, XREAD/XREADGROUP in
commands_stream_read.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ...protocol import resp
from ...protocol.errors import CommandError
from ..command import Commands
from .args import int_arg
from .containers import bulks, changed, lookup_typed
from .stream_delivery import unrecorded
from .stream_ids import (MASK64, MAX_ID, bulk_id, format_id, parse_id, parse_interval,
                         parse_strict)
from .streams import INVALID_ENTRIES_READ, Stream

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: group generic, the key at argv[1]
key_command = COMMANDS.command

SYNTAX = "ERR syntax error"
BOTH_STRATEGIES = ("ERR syntax error, MAXLEN and MINID options at the same time are "
                   "not compatible")
NO_SUCH_KEY = "ERR no such key"


def stream_of(node: Node, client: Client, key: bytes) -> Stream | None:
    return lookup_typed(node, client, key, Stream)


# ------------------------------------------------------------- replies

def entry_reply(entry_id: int, fv: list[bytes]) -> bytes:
    text = b"%d-%d" % (entry_id >> 64, entry_id & MASK64)
    return b"*2\r\n$%d\r\n%s\r\n*%d\r\n%s" % (len(text), text, len(fv), bulks(fv))


def entries_reply(entries: list[tuple[int, list[bytes]]]) -> bytes:
    return b"*%d\r\n%s" % (len(entries), b"".join([entry_reply(i, fv) for i, fv in entries]))


def map_header(n: int, proto: int) -> bytes:
    return b"%%%d\r\n" % n if proto == 3 else b"*%d\r\n" % (2 * n)


def name(text: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(text), text)


# ------------------------------------------------------------ trimming

class TrimArgs:
    """streamAddTrimArgs: what XADD and XTRIM were asked."""

    __slots__ = ("strategy", "maxlen", "minid", "approx", "limit", "nomkstream",
                 "id", "id_given", "seq_given", "id_pos")

    def __init__(self) -> None:
        self.strategy = b""  # b"MAXLEN", b"MINID" or b"" (none)
        self.maxlen = 0
        self.minid = 0
        self.approx = False
        self.limit = 0
        self.nomkstream = False
        self.id = 0
        self.id_given = False
        self.seq_given = True
        self.id_pos = -1


# ``XADD key * field value...`` (no option, an automatic ID): what
# parse_trim_args would build for it; shared, never changed.
AUTO_ID_ONLY: Final = TrimArgs()
AUTO_ID_ONLY.id_pos = 2
# ``$<n>\r\n`` for every length an ID's text can have (at most 41 bytes):
# XADD's reply without formatting the length
BULK_HEADERS: Final = [b"$%d\r\n" % n for n in range(42)]


def parse_trim_args(node: Node, argv: list[bytes], xadd: bool) -> TrimArgs:
    """streamParseAddOrTrimArgsOrReply."""
    args = TrimArgs()
    argc = len(argv)
    limit_given = False
    i = 2
    while i < argc:
        more = argc - 1 - i
        opt = argv[i]
        upper = opt.upper()
        if xadd and opt == b"*":
            args.id_pos = i
            break
        if upper in (b"MAXLEN", b"MINID") and more:
            if args.strategy:
                raise CommandError(BOTH_STRATEGIES)
            args.approx = False
            nxt = argv[i + 1]
            if more >= 2 and nxt == b"~":
                args.approx = True
                i += 1
            elif more >= 2 and nxt == b"=":
                i += 1
            if upper == b"MAXLEN":
                args.maxlen = int_arg(argv[i + 1])
                if args.maxlen < 0:
                    raise CommandError("ERR The MAXLEN argument must be >= 0.")
            else:
                args.minid = parse_id(argv[i + 1], 0, True)[0]
            i += 1
            args.strategy = upper
        elif upper == b"LIMIT" and more:
            args.limit = int_arg(argv[i + 1])
            if args.limit < 0:
                raise CommandError("ERR The LIMIT argument must be >= 0.")
            limit_given = True
            i += 1
        elif xadd and upper == b"NOMKSTREAM":
            args.nomkstream = True
        elif xadd:
            args.id, args.seq_given = parse_id(opt, 0, True, True)
            args.id_given = True
            args.id_pos = i
            break
        else:
            raise CommandError(SYNTAX)
        i += 1
    if args.limit and not args.strategy:
        raise CommandError("ERR syntax error, LIMIT cannot be used without specifying a "
                           "trimming strategy")
    if not xadd and not args.strategy:
        raise CommandError("ERR syntax error, XTRIM must be called with a trimming strategy")
    if node.keyspace.replaying:
        args.limit = 0  # (as Redis from its AOF: the record says what to trim)
    elif limit_given:
        if not args.approx:
            raise CommandError("ERR syntax error, LIMIT cannot be used without the special "
                               "~ option")
    elif args.approx:
        limit = 100 * node.config.stream_node_max_entries
        args.limit = 10000 if limit <= 0 else min(limit, 1000000)
    else:
        args.limit = 0
    if xadd and args.id_pos < 0:
        args.id_pos = argc  # (no ID: the arity check fails)
    return args


def trim(s: Stream, args: TrimArgs) -> int:
    return s.trim(args.maxlen, args.minid if args.strategy == b"MINID" else None,
                  args.approx, args.limit)


def trim_record(s: Stream, key: bytes, args: TrimArgs) -> list[bytes]:
    """What a trim that removed entries logs (streamRewriteTrimArgument:
    an approximate one as exact with what it left)."""
    if args.strategy == b"MAXLEN":
        return [b"XTRIM", key, b"MAXLEN", b"=", b"%d" % (s.length if args.approx else args.maxlen)]
    if args.approx:
        first = s.nodes[0].id_at(0) if s.nodes else MAX_ID  # (tombstones included)
        return [b"XTRIM", key, b"MINID", b"=", format_id(first)]
    return [b"XTRIM", key, b"MINID", b"=", format_id(args.minid)]


# ------------------------------------------------------------ commands

@key_command("XADD", -5, "write denyoom fast",
             summary="XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] "
                     "*|id field value [field value ...]")
def xadd(node: Node, client: Client, argv: list[bytes]) -> bytes:
    args = AUTO_ID_ONLY if argv[2] == b"*" else parse_trim_args(node, argv, True)
    field_pos = args.id_pos + 1
    pairs = len(argv) - field_pos
    if pairs < 2 or pairs % 2:
        raise CommandError("ERR wrong number of arguments for 'xadd' command")
    if args.id_given and args.seq_given and args.id == 0:
        raise CommandError("ERR The ID specified in XADD must be greater than 0-0")
    key = argv[1]
    ks = node.keyspace
    db = ks.dbs[client.db]
    s = stream_of(node, client, key)
    created = s is None
    if s is None:
        if args.nomkstream:
            return resp.null(client.proto)
        s = Stream()
    last_ms = s.last_ms
    last_seq = s.last_seq
    if last_seq == MASK64 and last_ms == MASK64:
        raise CommandError("ERR The stream has exhausted the last possible ID, unable to "
                           "add more items")
    # the new ID as ms and seq, without 128-bit ints on the usual path
    if not args.id_given:
        ms = node.now_ms()
        if ms > last_ms:
            seq = 0
            id_text = b"%d-0" % ms
        elif last_seq == MASK64:
            ms = last_ms + 1  # (streamIncrID)
            seq = 0
            id_text = b"%d-0" % ms
        else:
            ms = last_ms
            seq = last_seq + 1
            id_text = b"%d-%d" % (ms, seq)
    else:
        last = s.last_id
        if not args.seq_given and args.id >> 64 == last_ms:
            if last_seq == MASK64:
                raise CommandError("ERR The ID specified in XADD is equal or smaller than "
                                   "the target stream top item")
            new_id = last + 1
        else:
            new_id = args.id
        if new_id <= last:
            raise CommandError("ERR The ID specified in XADD is equal or smaller than the "
                               "target stream top item")
        ms = new_id >> 64
        seq = new_id & MASK64
        id_text = format_id(new_id)
    fv = argv[field_pos:]
    total = 0
    for item in fv:
        total += len(item)
    if total > 1 << 30:
        raise CommandError("ERR Elements are too large to be stored")
    before = s.nbytes
    config = node.config
    s.append(ms, seq, fv, config.stream_node_max_bytes, config.stream_node_max_entries, total)
    if created:
        ks.store(db, key, s)
    else:
        changed(node, db, key, s.nbytes - before, False)
    if not unrecorded(node):
        ks.log(db, b"XADD", key, id_text, *fv)
    if args.strategy:
        before = s.nbytes
        if trim(s, args):
            changed(node, db, key, s.nbytes - before, False)
            ks.log(db, *trim_record(s, key, args))
    ks.blocking.signal(db, key)
    return b"%s%s\r\n" % (BULK_HEADERS[len(id_text)], id_text)


@key_command("XLEN", 2, "readonly fast", summary="XLEN key")
def xlen(node: Node, client: Client, argv: list[bytes]) -> bytes:
    s = stream_of(node, client, argv[1])
    return b":%d\r\n" % (s.length if s is not None else 0)


def _xrange(node: Node, client: Client, argv: list[bytes], rev: bool) -> bytes:
    """xrangeGenericCommand."""
    start_arg, end_arg = (argv[3], argv[2]) if rev else (argv[2], argv[3])
    start, start_ex = parse_interval(start_arg, 0)
    if start_ex:
        if start == MAX_ID:
            raise CommandError("ERR invalid start ID for the interval")
        start += 1
    end, end_ex = parse_interval(end_arg, MASK64)
    if end_ex:
        if end == 0:
            raise CommandError("ERR invalid end ID for the interval")
        end -= 1
    count = -1
    j = 4
    while j < len(argv):
        if argv[j].upper() == b"COUNT" and j + 1 < len(argv):
            count = max(int_arg(argv[j + 1]), 0)
            j += 2
        else:
            raise CommandError(SYNTAX)
    s = stream_of(node, client, argv[1])
    if s is None:
        return b"*0\r\n"
    if count == 0:
        return resp.null_array(client.proto)
    return entries_reply(s.range(start, end, max(count, 0), rev))


@key_command("XRANGE", -4, "readonly", summary="XRANGE key start end [COUNT count]")
def xrange(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _xrange(node, client, argv, False)


@key_command("XREVRANGE", -4, "readonly", summary="XREVRANGE key end start [COUNT count]")
def xrevrange(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _xrange(node, client, argv, True)


@key_command("XDEL", -3, "write fast", summary="XDEL key id [id ...]")
def xdel(node: Node, client: Client, argv: list[bytes]) -> bytes:
    s = stream_of(node, client, argv[1])
    if s is None:
        return resp.ZERO
    ids = [parse_strict(arg) for arg in argv[2:]]
    before = s.nbytes
    deleted = 0
    first_entry = False
    for entry_id in ids:
        if s.delete(entry_id):
            if entry_id == s.first_id:
                first_entry = True
            if entry_id > s.max_deleted:
                s.max_deleted = entry_id
            deleted += 1
    if deleted:
        if s.length == 0:
            s.first_id = 0
        elif first_entry:
            s.first_id = s.edge_id(True)
        db = node.keyspace.dbs[client.db]
        changed(node, db, argv[1], s.nbytes - before, False)
        node.keyspace.log(db, *argv)
    return b":%d\r\n" % deleted


@key_command("XTRIM", -4, "write",
             summary="XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]")
def xtrim(node: Node, client: Client, argv: list[bytes]) -> bytes:
    args = parse_trim_args(node, argv, False)
    s = stream_of(node, client, argv[1])
    if s is None:
        return resp.ZERO
    before = s.nbytes
    deleted = trim(s, args)
    if deleted:
        db = node.keyspace.dbs[client.db]
        changed(node, db, argv[1], s.nbytes - before, False)
        node.keyspace.log(db, *trim_record(s, argv[1], args))
    return b":%d\r\n" % deleted


@key_command("XSETID", -3, "write denyoom fast",
             summary="XSETID key last-id [ENTRIESADDED entries-added] "
                     "[MAXDELETEDID max-deleted-id]")
def xsetid(node: Node, client: Client, argv: list[bytes]) -> bytes:
    new_id = parse_strict(argv[2])
    max_deleted = 0
    entries_added = -1
    i = 3
    while i < len(argv):
        more = len(argv) - 1 - i
        opt = argv[i].upper()
        if opt == b"ENTRIESADDED" and more:
            entries_added = int_arg(argv[i + 1])
            if entries_added < 0:
                raise CommandError("ERR entries_added must be positive")
            i += 2
        elif opt == b"MAXDELETEDID" and more:
            max_deleted = parse_strict(argv[i + 1])
            if new_id < max_deleted:
                raise CommandError("ERR The ID specified in XSETID is smaller than the "
                                   "provided max_deleted_entry_id")
            i += 2
        else:
            raise CommandError(SYNTAX)
    s = stream_of(node, client, argv[1])
    if s is None:
        raise CommandError(NO_SUCH_KEY)
    if s.length:
        if new_id < s.last_valid_id():
            raise CommandError("ERR The ID specified in XSETID is smaller than the target "
                               "stream top item")
        if entries_added != -1 and s.length > entries_added:
            raise CommandError("ERR The entries_added specified in XSETID is smaller than "
                               "the target stream length")
    s.set_last_id(new_id)
    if entries_added != -1:
        s.entries_added = entries_added
    if max_deleted:
        s.max_deleted = max_deleted
    db = node.keyspace.dbs[client.db]
    changed(node, db, argv[1], 0, False)
    node.keyspace.log(db, *argv)
    return resp.OK


# --------------------------------------------------------------- XINFO

_XINFO_HELP = [
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
]
_XINFO_ARITY = {b"CONSUMERS": 4, b"GROUPS": 3, b"STREAM": -3, b"HELP": 2}


def subcommand_syntax(argv: list[bytes]) -> CommandError:
    """addReplySubcommandSyntaxError."""
    return CommandError("ERR unknown subcommand or wrong number of arguments for '%s'. "
                        "Try %s HELP." % (argv[1][:128].decode("utf-8", "replace"),
                                          argv[0].decode("utf-8", "replace").upper()))


def check_subcommand(argv: list[bytes], arities: dict[bytes, int]) -> bytes:
    """The container command's check (Redis 7.0's processCommand): an
    unknown subcommand, or a wrong number of arguments for a known one."""
    sub = argv[1].upper()
    arity = arities.get(sub)
    if arity is None:
        raise CommandError("ERR unknown subcommand '%s'. Try %s HELP." % (
            argv[1][:128].decode("utf-8", "replace"), argv[0].decode().upper()))
    if (arity > 0 and len(argv) != arity) or len(argv) < -arity:
        raise CommandError("ERR wrong number of arguments for '%s|%s' command" % (
            argv[0].decode().lower(), sub.decode().lower()))
    return sub


def _int(n: int) -> bytes:
    return b":%d\r\n" % n


def _nullable(n: int | None, proto: int) -> bytes:
    return resp.null(proto) if n is None else b":%d\r\n" % n


def _entry_or_null(entry: list[tuple[int, list[bytes]]], proto: int) -> bytes:
    return entry_reply(*entry[0]) if entry else resp.null(proto)


def stream_info(s: Stream, argv: list[bytes], proto: int) -> bytes:
    """xinfoReplyWithStreamInfo."""
    options = argv[3:]
    full = bool(options)
    count = 10
    if full:
        if len(options) not in (1, 3) or options[0].upper() != b"FULL":
            raise subcommand_syntax(argv)
        if len(options) == 3:
            if options[1].upper() != b"COUNT":
                raise subcommand_syntax(argv)
            count = int_arg(options[2])
            if count < 0:
                count = 10
    out = [map_header(9 if full else 10, proto),
           name(b"length"), _int(s.length),
           name(b"radix-tree-keys"), _int(len(s.nodes)),
           name(b"radix-tree-nodes"), _int(radix_nodes(s)),
           name(b"last-generated-id"), bulk_id(s.last_id),
           name(b"max-deleted-entry-id"), bulk_id(s.max_deleted),
           name(b"entries-added"), _int(s.entries_added),
           name(b"recorded-first-entry-id"), bulk_id(s.first_id)]
    if not full:
        out += [name(b"groups"), _int(len(s.groups) if s.groups else 0),
                name(b"first-entry"), _entry_or_null(s.range(0, MAX_ID, 1), proto),
                name(b"last-entry"), _entry_or_null(s.range(0, MAX_ID, 1, True), proto)]
        return b"".join(out)
    out += [name(b"entries"), entries_reply(s.range(0, MAX_ID, count)), name(b"groups")]
    groups = sorted(s.groups.items()) if s.groups else []
    out.append(b"*%d\r\n" % len(groups))
    for group_name, g in groups:
        out += [map_header(7, proto), name(b"name"), name(group_name),
                name(b"last-delivered-id"), bulk_id(g.last_id),
                name(b"entries-read"),
                _nullable(None if g.entries_read == INVALID_ENTRIES_READ else g.entries_read,
                          proto),
                name(b"lag"), _nullable(s.lag(g), proto),
                name(b"pel-count"), _int(len(g.pel)), name(b"pending")]
        ids = g.pel_ids.take(0, count)
        out.append(b"*%d\r\n" % len(ids))
        for entry_id in ids:
            nack = g.pel[entry_id]
            consumer = nack.consumer.name if nack.consumer is not None else b""
            out.append(b"*4\r\n%s%s:%d\r\n:%d\r\n" % (bulk_id(entry_id), name(consumer),
                                                     nack.delivery_time, nack.delivery_count))
        consumers = sorted(g.consumers.items())
        out += [name(b"consumers"), b"*%d\r\n" % len(consumers)]
        for consumer_name, c in consumers:
            out += [map_header(4, proto), name(b"name"), name(consumer_name),
                    name(b"seen-time"), _int(c.seen_time),
                    name(b"pel-count"), _int(len(c.pel)), name(b"pending")]
            pel = c.pel_sorted()
            if count:
                pel = pel[:count]
            out.append(b"*%d\r\n" % len(pel))
            for entry_id in pel:
                nack = g.pel[entry_id]
                out.append(b"*3\r\n%s:%d\r\n:%d\r\n" % (bulk_id(entry_id), nack.delivery_time,
                                                       nack.delivery_count))
    return b"".join(out)


def radix_nodes(s: Stream) -> int:
    """What XINFO calls radix-tree-nodes: Redis counts its radix tree's
    inner nodes; ours is no radix tree.  An estimate with Redis's order
    of magnitude (a key of 16 bytes shares its prefix with its
    neighbours'): the keys plus one."""
    return len(s.nodes) + 1


@key_command("XINFO", -2, "readonly", keys=(2, 2, 1),
             summary="XINFO STREAM key [FULL [COUNT count]] | GROUPS key | "
                     "CONSUMERS key group | HELP")
def xinfo(node: Node, client: Client, argv: list[bytes]) -> bytes:
    sub = check_subcommand(argv, _XINFO_ARITY)
    if sub == b"HELP":
        return resp.encode([resp.Status(line) for line in _XINFO_HELP], client.proto)
    s = stream_of_or_error(node, client, argv[2])
    proto = client.proto
    if sub == b"CONSUMERS":
        g = s.group(argv[3])
        if g is None:
            raise CommandError("NOGROUP No such consumer group '%s' for key name '%s'" % (
                argv[3].decode("utf-8", "replace"), argv[2].decode("utf-8", "replace")))
        now = node.now_ms()
        out = [b"*%d\r\n" % len(g.consumers)]
        for consumer_name, c in sorted(g.consumers.items()):
            out += [map_header(3, proto), name(b"name"), name(consumer_name),
                    name(b"pending"), _int(len(c.pel)),
                    name(b"idle"), _int(max(0, now - c.seen_time))]
        return b"".join(out)
    if sub == b"GROUPS":
        groups = sorted(s.groups.items()) if s.groups else []
        out = [b"*%d\r\n" % len(groups)]
        for group_name, g in groups:
            out += [map_header(6, proto), name(b"name"), name(group_name),
                    name(b"consumers"), _int(len(g.consumers)),
                    name(b"pending"), _int(len(g.pel)),
                    name(b"last-delivered-id"), bulk_id(g.last_id),
                    name(b"entries-read"),
                    _nullable(None if g.entries_read == INVALID_ENTRIES_READ
                              else g.entries_read, proto),
                    name(b"lag"), _nullable(s.lag(g), proto)]
        return b"".join(out)
    return stream_info(s, argv, proto)


def stream_of_or_error(node: Node, client: Client, key: bytes) -> Stream:
    s = stream_of(node, client, key)
    if s is None:
        raise CommandError(NO_SUCH_KEY)
    return s
