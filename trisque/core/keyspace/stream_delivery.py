"""How entries reach a consumer group's consumers, and what the AOF keeps of
it (t_stream.c's streamReplyWithRange with a group, its PEL reads, and
the propagation helpers).

XREADGROUP, XCLAIM and XAUTOCLAIM change a group's PEL at a time and for
a consumer of their own; the AOF keeps their effects, as Redis propagates
them:

- a PEL entry created, re-delivered or claimed: ``XCLAIM key group
  consumer 0 id TIME <ms> RETRYCOUNT <n> FORCE JUSTID LASTID <group's
  last id>``, which sets exactly that entry (FORCE creates it, JUSTID
  keeps the count);
- a PEL entry whose stream entry is gone and that a claim drops: its
  XACK (Redis sends the XCLAIM, which drops it on replay as the entry is
  missing; ours replays a forced XCLAIM of a missing entry as a PEL entry
  to restore, which an AOF rewrite needs: a PEL may hold entries trimmed
  or deleted from the stream);
- the group's last delivered ID and read counter after new entries were
  read: ``XGROUP SETID key group id ENTRIESREAD n`` (Redis sends it only
  for NOACK and counts on XCLAIM's LASTID otherwise, which leaves
  entries-read behind after a reload; ours is exact);
- a consumer created: ``XGROUP CREATECONSUMER`` (Redis only for NOACK:
  a consumer that read nothing was lost on reload).

A history read (XREADGROUP with an ID, not ``>``) bumps each entry's
delivery count and time; Redis does not propagate it, we log its XCLAIM
so a restart keeps the counts.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING

from ...protocol import resp
from .stream_ids import MASK64, MAX_ID, format_id
from .streams import INVALID_ENTRIES_READ, Consumer, Group, Nack, Stream

if TYPE_CHECKING:
    from ..node import Node
    from .db import Db


def unrecorded(node: Node) -> bool:
    """Whether no AOF (nor a rewrite) takes records now: the caller then
    neither builds its record nor calls the log (dear on XADD's and
    XREADGROUP's path); it is counted as ``keyspace.log`` counts one."""
    if node.log_active:
        return False
    ks = node.keyspace
    if not ks.replaying:
        ks.changes += 1
    return True


def log_claim(node: Node, db: Db, key: bytes, group_name: bytes, g: Group, entry_id: int,
              nack: Nack) -> None:
    if unrecorded(node):
        return
    consumer = nack.consumer.name if nack.consumer is not None else b""
    node.keyspace.log(db, b"XCLAIM", key, group_name, consumer, b"0", format_id(entry_id),
                      b"TIME", b"%d" % nack.delivery_time, b"RETRYCOUNT",
                      b"%d" % nack.delivery_count, b"FORCE", b"JUSTID", b"LASTID",
                      format_id(g.last_id))


def log_drop(node: Node, db: Db, key: bytes, group_name: bytes, entry_id: int) -> None:
    """A PEL entry dropped by a claim because its stream entry is gone."""
    node.keyspace.log(db, b"XACK", key, group_name, format_id(entry_id))


def log_group_id(node: Node, db: Db, key: bytes, group_name: bytes, g: Group) -> None:
    if unrecorded(node):
        return
    node.keyspace.log(db, b"XGROUP", b"SETID", key, group_name, format_id(g.last_id),
                      b"ENTRIESREAD", b"%d" % g.entries_read)


def consumer_for(node: Node, db: Db, key: bytes, s: Stream, group_name: bytes, g: Group,
                 name: bytes) -> Consumer:
    """streamLookupConsumer (which refreshes seen-time) or
    streamCreateConsumer (logged)."""
    now = node.now_ms()
    consumer = g.consumers.get(name)
    if consumer is not None:
        consumer.seen_time = now
        return consumer
    created = s.create_consumer(g, name, now)
    assert created is not None
    node.keyspace.log(db, b"XGROUP", b"CREATECONSUMER", key, group_name, name)
    return created


def deliver_new(node: Node, db: Db, key: bytes, s: Stream, group_name: bytes, g: Group,
                consumer: Consumer, count: int, noack: bool) -> bytes:
    """streamReplyWithRange with a group: the entries after the group's
    last delivered ID (at most ``count``, 0: all), now delivered to
    ``consumer`` (in its PEL unless ``noack``).  Returns the entries'
    array."""
    entries = s.range(g.last_id + 1, MAX_ID, count)
    now = node.now_ms()
    moved = False
    out = []
    for entry_id, fv in entries:
        if entry_id > g.last_id:
            if (g.entries_read != INVALID_ENTRIES_READ
                    and not s.range_has_tombstones(entry_id)):
                g.entries_read += 1
            elif s.entries_added:
                g.entries_read = s.estimate_distance(entry_id)
            g.last_id = entry_id
            moved = True
        text = b"%d-%d" % (entry_id >> 64, entry_id & MASK64)
        out.append(b"*2\r\n$%d\r\n%s\r\n*%d\r\n" % (len(text), text, len(fv)))
        out.append(b"".join([b"$%d\r\n%s\r\n" % (len(item), item) for item in fv]))
        if noack:
            continue
        nack = g.pel.get(entry_id)
        if nack is None:
            nack = Nack(consumer, now)
            s.add_nack(g, entry_id, nack)
        else:  # (delivered before: XGROUP SETID moved the group back)
            if nack.consumer is not None:
                nack.consumer.pel.pop(entry_id, None)
            nack.consumer = consumer
            nack.delivery_time = now
            nack.delivery_count = 1
            consumer.pel[entry_id] = None
        log_claim(node, db, key, group_name, g, entry_id, nack)
    if moved:
        log_group_id(node, db, key, group_name, g)
    return b"*%d\r\n%s" % (len(entries), b"".join(out))


def deliver_history(node: Node, db: Db, key: bytes, s: Stream, group_name: bytes, g: Group,
                    consumer: Consumer, start: int, count: int, proto: int) -> bytes:
    """streamReplyWithRangeFromConsumerPEL: the consumer's own pending
    entries from ``start`` (an entry no longer in the stream comes as its
    ID and a null)."""
    ids = consumer.pel_sorted()
    ids = ids[bisect_left(ids, start):]
    if count:
        ids = ids[:count]
    now = node.now_ms()
    out = [b"*%d\r\n" % len(ids)]
    for entry_id in ids:
        fv = s.get(entry_id)
        text = b"%d-%d" % (entry_id >> 64, entry_id & MASK64)
        if fv is None:
            out.append(b"*2\r\n$%d\r\n%s\r\n%s" % (len(text), text, resp.null_array(proto)))
            continue
        out.append(b"*2\r\n$%d\r\n%s\r\n*%d\r\n" % (len(text), text, len(fv)))
        out.append(b"".join([b"$%d\r\n%s\r\n" % (len(item), item) for item in fv]))
        nack = g.pel[entry_id]
        nack.delivery_time = now
        nack.delivery_count += 1
        log_claim(node, db, key, group_name, g, entry_id, nack)
    return b"".join(out)
