"""XREAD and XREADGROUP (t_stream.c's xreadCommand), and their blocking
form on the keyspace's blocking machinery (blocking.py; Redis's
serveClientsBlockedOnStreamKey).

A reader that finds nothing new and gave BLOCK waits (``StreamWaiter``)
for an XADD to one of its streams, which makes the key ready (unlike a
list, whose waiters are only woken by its creation): its waiters are then
offered the stream first come first served.  A plain XREAD is served when
the stream's last ID passed the one it waits after (``$`` is the last ID
when it blocked); a XREADGROUP waits after its group's last delivered ID,
read again when it is offered (others in the group may have taken the
new entries).  A XREADGROUP whose stream is deleted or becomes another
type is answered ``-UNBLOCKED``, whose group was destroyed ``-NOGROUP``
(Redis 7.0).  A reply serves one stream: the one that woke it.

What a XREADGROUP changes is logged by stream_delivery.py (XCLAIM, XGROUP
SETID and CREATECONSUMER records); XREAD changes nothing and logs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ...protocol import resp
from ...protocol.errors import CommandError
from ..command import Commands
from .args import int_arg
from .blocking import KeyWaiter
from .stream_delivery import consumer_for, deliver_history, deliver_new
from .stream_ids import MAX_ID, parse_strict
from .commands_streams import SYNTAX, entries_reply
from .streams import Stream
from .types import WRONGTYPE

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node
    from .db import Db

COMMANDS = Commands(keys=(0, 0, 0))  # (the keys follow STREAMS)
key_command = COMMANDS.command

BLOCKED_DEFAULT_COUNT: Final = 1000  # XREAD_BLOCKED_DEFAULT_COUNT
NEW_ENTRIES: Final = -1  # the ">" ID of XREADGROUP


def _timeout_ms(arg: bytes) -> int:
    """getTimeoutFromObjectOrReply in milliseconds."""
    value = int_arg(arg, "ERR timeout is not an integer or out of range")
    if value < 0:
        raise CommandError("ERR timeout is negative")
    return value


def _in_script(node: Node, client: Client) -> bool:
    scripting = node.scripting
    return (scripting is not None and scripting.running is not None
            and scripting.running.client is client)


def _key_reply(key: bytes, entries: bytes, proto: int) -> bytes:
    """One stream's part of the reply: [key, entries] (RESP3: a map entry)."""
    if proto == 3:
        return b"$%d\r\n%s\r\n%s" % (len(key), key, entries)
    return b"*2\r\n$%d\r\n%s\r\n%s" % (len(key), key, entries)


def _option(arg: bytes) -> bytes:
    """An option in capitals (as usually sent: no copy, no method call)."""
    if arg == b"STREAMS" or arg == b"GROUP" or arg == b"COUNT" or arg == b"BLOCK":
        return arg
    return arg.upper()


def _wrap(parts: list[bytes], proto: int) -> bytes:
    return (b"%%%d\r\n" if proto == 3 else b"*%d\r\n") % len(parts) + b"".join(parts)


class StreamWaiter(KeyWaiter):
    """XREAD / XREADGROUP blocked on its streams."""

    __slots__ = ("after", "count", "group", "consumer", "noack")

    def __init__(self, db: int, after: dict[bytes, int], count: int, group: bytes | None,
                 consumer: bytes, noack: bool) -> None:
        super().__init__(db, tuple(after), Stream)
        self.after = after  # key -> the ID it waits after (XREAD)
        self.count = count
        self.group = group
        self.consumer = consumer
        self.noack = noack

    def offer(self, node: Node, client: Client, db: Db, key: bytes,
              value: object | None) -> bytes | None:
        if not isinstance(value, Stream):
            if self.group is not None:
                return b"-UNBLOCKED the stream key no longer exists\r\n"
            return None
        s = value
        if self.group is None:
            after = self.after[key]
            if s.last_id <= after:
                return None
            entries = entries_reply(s.range(after + 1, MAX_ID, self.count))
            return _wrap([_key_reply(key, entries, client.proto)], client.proto)
        g = s.group(self.group)
        if g is None:
            return (b"-NOGROUP the consumer group this client was blocked on no "
                    b"longer exists\r\n")
        if s.last_id <= g.last_id:
            return None
        before = s.nbytes
        consumer = consumer_for(node, db, key, s, self.group, g, self.consumer)
        entries = deliver_new(node, db, key, s, self.group, g, consumer, self.count,
                              self.noack)
        _changed(node, db, key, s, before)
        return _wrap([_key_reply(key, entries, client.proto)], client.proto)


def _changed(node: Node, db: Db, key: bytes, s: Stream, before: int) -> None:
    delta = s.nbytes - before
    if delta:
        node.keyspace.grow(db, delta)
    if db.watched:
        node.keyspace.touched(db, key)


def _xread(node: Node, client: Client, argv: list[bytes], xreadgroup: bool) -> bytes | None:
    timeout = -1
    count = 0
    streams_arg = 0
    group_name: bytes | None = None
    consumer_name = b""
    noack = False
    argc = len(argv)
    i = 1
    while i < argc:
        more = argc - i - 1
        opt = _option(argv[i])
        if opt == b"BLOCK" and more:
            if _in_script(node, client):
                raise CommandError("ERR %s command is not allowed with BLOCK option from "
                                   "scripts" % argv[0].decode("utf-8", "replace"))
            i += 1
            timeout = _timeout_ms(argv[i])
        elif opt == b"COUNT" and more:
            i += 1
            count = max(int_arg(argv[i]), 0)
        elif opt == b"STREAMS" and more:
            streams_arg = i + 1
            if (argc - streams_arg) % 2:
                raise CommandError("ERR Unbalanced XREAD list of streams: for each stream "
                                   "key an ID or '$' must be specified.")
            break
        elif opt == b"GROUP" and more >= 2:
            if not xreadgroup:
                raise CommandError("ERR The GROUP option is only supported by XREADGROUP. "
                                   "You called XREAD instead.")
            group_name = argv[i + 1]
            consumer_name = argv[i + 2]
            i += 2
        elif opt == b"NOACK":
            if not xreadgroup:
                raise CommandError("ERR The NOACK option is only supported by XREADGROUP. "
                                   "You called XREAD instead.")
            noack = True
        else:
            raise CommandError(SYNTAX)
        i += 1
    if not streams_arg:
        raise CommandError(SYNTAX)
    if xreadgroup and group_name is None:
        raise CommandError("ERR Missing GROUP option for XREADGROUP")
    n = (argc - streams_arg) // 2
    keys = argv[streams_arg:streams_arg + n]
    ks = node.keyspace
    db = ks.dbs[client.db]
    ids: list[int] = []
    streams: list[Stream | None] = []
    for j in range(n):
        key = keys[j]
        value = ks.lookup(db, key)
        if value is not None and type(value) is not Stream:
            raise CommandError(WRONGTYPE)
        s = value if isinstance(value, Stream) else None
        if group_name is not None and (s is None or s.group(group_name) is None):
            raise CommandError("NOGROUP No such key '%s' or consumer group '%s' in "
                               "XREADGROUP with GROUP option" % (
                                   key.decode("utf-8", "replace"),
                                   group_name.decode("utf-8", "replace")))
        streams.append(s)
        arg = argv[streams_arg + n + j]
        if arg == b"$":
            if xreadgroup:
                raise CommandError(
                    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to "
                    "read the history of this consumer by specifying a proper ID, or use "
                    "the > ID to get new messages. The $ ID would just return an empty "
                    "result set.")
            ids.append(s.last_id if s is not None else 0)
        elif arg == b">":
            if not xreadgroup:
                raise CommandError("ERR The > ID can be specified only when calling "
                                   "XREADGROUP using the GROUP <group> <consumer> option.")
            ids.append(NEW_ENTRIES)
        else:
            after = parse_strict(arg)
            # (Redis marks ">" with the largest ID: given, it means ">")
            ids.append(NEW_ENTRIES if after == MAX_ID and xreadgroup else after)
    proto = client.proto
    parts = []
    for j in range(n):
        s = streams[j]
        if s is None:
            continue
        key = keys[j]
        after = ids[j]
        if group_name is None:
            if s.length and s.last_valid_id() > after:
                parts.append(_key_reply(key, entries_reply(s.range(after + 1, MAX_ID, count)),
                                        proto))
            continue
        g = s.group(group_name)
        assert g is not None
        if after != NEW_ENTRIES:
            before = s.nbytes
            consumer = consumer_for(node, db, key, s, group_name, g, consumer_name)
            entries = deliver_history(node, db, key, s, group_name, g, consumer, after + 1,
                                      count, proto)  # (after the ID given, as Redis)
            _changed(node, db, key, s, before)
        elif s.last_id > g.last_id and s.length and s.last_valid_id() > g.last_id:
            before = s.nbytes
            consumer = consumer_for(node, db, key, s, group_name, g, consumer_name)
            entries = deliver_new(node, db, key, s, group_name, g, consumer, count, noack)
            _changed(node, db, key, s, before)
        else:
            continue
        parts.append(_key_reply(key, entries, proto))
    if parts:
        return _wrap(parts, proto)
    if timeout < 0:
        return resp.null_array(proto)
    blocking = ks.blocking
    if blocking.deny():
        return resp.null_array(proto)  # inside EXEC/a script: as timed out
    after_ids: dict[bytes, int] = {}
    for j in range(n):
        after_ids.setdefault(keys[j], ids[j])
    blocking.block(client, StreamWaiter(client.db, after_ids, count or BLOCKED_DEFAULT_COUNT,
                                        group_name, consumer_name, noack), timeout)
    return None


@key_command("XREAD", -4, "readonly",
             summary="XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] "
                     "id [id ...]")
def xread(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    return _xread(node, client, argv, False)


@key_command("XREADGROUP", -7, "write",
             summary="XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] "
                     "[NOACK] STREAMS key [key ...] id [id ...]")
def xreadgroup(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    return _xread(node, client, argv, True)
