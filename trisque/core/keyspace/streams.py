"""The stream type: entries in nodes as Redis's radix tree of listpacks,
and the consumer groups that read them (t_stream.c, stream.h).

Entries.  A ``Stream`` is a list of ``StreamNode``s in ID order (``keys``
holds each node's master ID, the ID of the first entry ever added to it, so
a node is found by bisecting ``keys``).  A node packs its entries:

- ``ms``: each entry's milliseconds minus the node's (``array('I')``,
  widened to ``'Q'`` the first time a difference does not fit), ``seq``:
  each entry's sequence (``'I'``, widened likewise): an entry is found by
  bisecting ``ms`` then ``seq`` within the equal-ms run;
- ``blob``: the entries' fields and values one after another, each entry a
  flags byte (deleted; same fields as the node's first entry, whose field
  names are then not stored again, as Redis's SAMEFIELDS) then
  length-prefixed strings; ``offsets``: where each entry starts.

The three arrays have room for more entries than the node holds (zeros
past ``size()``): an entry is written in place, a generic item store when
compiled, where an append is a method call.  They grow fourfold (up to
stream-node-max-entries) when full and are cut to the node's size when
the next node opens, so a full node has no spare room.

About 20 bytes an entry of small fields beyond their values, against
Redis's ~15 (bench/README.md, "Streams").  Deleted entries stay in their
node flagged (Redis's tombstones) until the whole node goes.

Node boundaries are Redis's, because approximate trimming (``MAXLEN ~``)
removes whole nodes and replies differ with them: a node takes entries
until it holds ``stream-node-max-entries`` (live and deleted) or its
listpack would reach ``stream-node-max-bytes``; ``body`` follows the size
the node's listpack would have in Redis, element by element (listpack.c's
encodings), so the split falls where Redis's does.

Groups.  ``groups`` maps a name to a ``Group``: ``last_id``,
``entries_read`` (-1: unknown), the PEL (``pel``: ID -> ``Nack``, with
``pel_ids`` its IDs in order for ranges, sorted_ids.py) and ``consumers`` (name ->
``Consumer``, each with its own PEL, ``pel``: ID -> the same ``Nack``).
Redis keeps groups and consumers in radix trees, so every listing is in
name order: replies sort the names.

``nbytes`` follows every change (the commands report the difference to
the keyspace), for ``maxmemory``.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from typing import Final, Iterator

from .sorted_ids import SortedIds
from .stream_ids import MASK64, MAX_ID, format_id
from .types import Records, ValueType, register_type

DELETED: Final = 1
SAMEFIELDS: Final = 2
STREAM_OVERHEAD: Final = 200  # the Stream object, its two lists
NODE_OVERHEAD: Final = 400  # a node: the object, three arrays and a bytearray
MIN_CAPACITY: Final = 8  # entries a node's arrays first have room for
GROUP_OVERHEAD: Final = 400  # a group: object, dicts, the sorted PEL list
CONSUMER_OVERHEAD: Final = 250  # a consumer: object, dict, dict slot, name header
NACK_OVERHEAD: Final = 200  # a PEL entry: the Nack, two dict slots, a list slot, the int
LISTPACK_MAX_SIZE: Final = 1 << 30  # STREAM_LISTPACK_MAX_SIZE
INVALID_ENTRIES_READ: Final = -1  # SCG_INVALID_ENTRIES_READ
I_MAX: Final = (1 << 32) - 1
REWRITE_BATCH: Final = 64  # IDs per XDEL record of an AOF rewrite
_SMALL_VARINTS: Final = [bytes([n]) for n in range(0x80)]
_SAMEFIELDS_FLAGS: Final = bytes([SAMEFIELDS])
_NO_FLAGS: Final = bytes([0])


# ---------------------------------------------- Redis's listpack sizes

def _lp_int(value: int) -> int:
    """Bytes of an integer element of a listpack, backlen included."""
    if 0 <= value <= 127:
        return 2
    if -4096 <= value <= 4095:
        return 3
    if -32768 <= value <= 32767:
        return 4
    if -8388608 <= value <= 8388607:
        return 5
    if -2147483648 <= value <= 2147483647:
        return 6
    return 10


def _backlen(n: int) -> int:
    return 1 if n <= 127 else 2 if n < 16383 else 3 if n < 2097151 else 4 if n < 268435455 else 5


def _lp_str(data: bytes) -> int:
    """Bytes of a string element (lpAppend stores one that reads as an
    int64 as an integer: lpStringToInt64)."""
    n = len(data)
    if 0 < n < 21 and (48 <= data[0] <= 57 or data[0] == 45):  # (else not a number)
        digits = data[1:] if data[0] == 45 else data
        if digits and digits.isdigit() and (digits[0] != 48 or data == b"0"):
            value = int(data)
            if -(1 << 63) <= value < (1 << 63):
                return _lp_int(value)
    size = 1 + n if n < 64 else 2 + n if n < 4096 else 5 + n
    return size + _backlen(size)


def _signed64(value: int) -> int:
    value &= MASK64
    return value - (1 << 64) if value >= 1 << 63 else value


# ------------------------------------------------------------ encoding

def _varint_bytes(n: int) -> bytes:
    """``n`` as the blob writes lengths: 7 bits a byte, low first."""
    if n < 0x80:
        return _SMALL_VARINTS[n]  # (a list lookup: no bytes built)
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _decode(blob: bytearray, pos: int, fields: tuple[bytes, ...]) -> list[bytes]:
    """The entry at ``blob[pos]``: its fields and values, flat."""
    flags = blob[pos]
    pos += 1
    out: list[bytes] = []
    if flags & SAMEFIELDS:
        for field in fields:
            n = blob[pos]
            pos += 1
            if n & 0x80:
                n, pos = _varint(blob, pos - 1)
            out.append(field)
            out.append(bytes(blob[pos:pos + n]))
            pos += n
        return out
    count, pos = _varint(blob, pos)
    for _ in range(count * 2):
        n = blob[pos]
        pos += 1
        if n & 0x80:
            n, pos = _varint(blob, pos - 1)
        out.append(bytes(blob[pos:pos + n]))
        pos += n
    return out


def _varint(blob: bytearray, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = blob[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


class StreamNode:
    """Up to stream-node-max-entries entries (see the module)."""

    __slots__ = ("master", "master_ms", "master_seq", "ms", "seq", "offsets", "blob",
                 "fields", "live", "dead", "body", "ordered", "last_ms_delta", "last_seq")

    def __init__(self, master: int, fields: tuple[bytes, ...]) -> None:
        self.master = master
        self.master_ms = master >> 64
        self.master_seq = master & MASK64
        self.ms = array("I")
        self.seq = array("I")
        self.offsets = array("I")
        self.blob = bytearray()
        self.fields = fields
        self.live = 0
        self.dead = 0
        # Redis's listpack bytes but the count and deleted elements: the
        # header (6), the end byte, the master entry (its field count, its
        # fields, the 0 terminator).
        self.body = 7 + _lp_int(len(fields)) + sum(map(_lp_str, fields)) + 2
        # False once an entry went in below a deleted one (XSETID can lower
        # the last ID under a deleted entry's): live entries stay in order,
        # deleted ones may not, so lookups scan as Redis does.
        self.ordered = True
        # the last entry's ms (minus master_ms) and seq, for append's order
        # check without reading the arrays
        self.last_ms_delta = 0
        self.last_seq = 0

    def copy(self) -> StreamNode:
        out = StreamNode(self.master, self.fields)
        out.ms = array(self.ms.typecode, self.ms)
        out.seq = array(self.seq.typecode, self.seq)
        out.offsets = array("I", self.offsets)
        out.blob = bytearray(self.blob)
        out.live = self.live
        out.dead = self.dead
        out.body = self.body
        out.ordered = self.ordered
        out.last_ms_delta = self.last_ms_delta
        out.last_seq = self.last_seq
        return out

    def size(self) -> int:
        """Entries in the node, live and deleted (the arrays may have room
        for more)."""
        return self.live + self.dead

    def lp_bytes(self) -> int:
        return self.body + _lp_int(self.live) + _lp_int(self.dead)

    def memory(self) -> int:
        return NODE_OVERHEAD + len(self.blob) + len(self.ms) * (
            self.ms.itemsize + self.seq.itemsize + 4)

    def id_at(self, i: int) -> int:
        return (self.master_ms + self.ms[i]) << 64 | self.seq[i]

    def deleted(self, i: int) -> bool:
        return bool(self.blob[self.offsets[i]] & DELETED)

    def entry(self, i: int) -> list[bytes]:
        return _decode(self.blob, self.offsets[i], self.fields)

    def seek(self, stream_id: int) -> int:
        """The index of the first entry whose ID is >= ``stream_id`` (in
        a node not ``ordered``: of the first live one)."""
        size = self.live + self.dead
        if not self.ordered:
            for i in range(size):
                if not self.deleted(i) and self.id_at(i) >= stream_id:
                    return i
            return size
        dms = (stream_id >> 64) - self.master_ms
        if dms < 0:
            return 0
        ms = self.ms
        lo = bisect_left(ms, dms, 0, size)
        if lo == size or ms[lo] != dms:
            return lo  # (no entry in that ms)
        seq = stream_id & MASK64
        if self.seq[lo] >= seq:
            return lo  # (the first of them is it)
        if lo + 1 == size or ms[lo + 1] != dms:
            return lo + 1  # (the only one in that ms, and before it: a group's next read)
        return bisect_left(self.seq, seq, lo + 1, bisect_right(ms, dms, lo + 1, size))

    def append(self, ms: int, seq: int, fv: list[bytes], max_entries: int) -> int:
        """Add the entry ``<ms>-<seq>``; returns the bytes it added to ``memory()``."""
        ms_delta = ms - self.master_ms
        size = self.live + self.dead
        grew = 0
        if size == len(self.offsets):
            grew = self._grow(max_entries)
        if size and (ms_delta < self.last_ms_delta or (
                ms_delta == self.last_ms_delta and seq < self.last_seq)):
            # below the node's last entry (deleted: XSETID lowered the
            # stream's last ID)
            self.ordered = False
        if ms_delta > I_MAX and self.ms.typecode == "I":
            self.ms = array("Q", self.ms)
            grew += 4 * len(self.ms)
        if seq > I_MAX and self.seq.typecode == "I":
            self.seq = array("Q", self.seq)
            grew += 4 * len(self.seq)
        self.last_ms_delta = ms_delta
        self.last_seq = seq
        blob = self.blob
        self.ms[size] = ms_delta
        self.seq[size] = seq
        self.offsets[size] = len(blob)
        fields = self.fields
        n = len(fv) // 2
        same = n == len(fields)
        if same:
            for j in range(n):
                if fv[2 * j] != fields[j]:
                    same = False
                    break
        rel = seq - self.master_seq
        if not -2147483648 <= rel <= 2147483647:  # (within, _signed64 changes nothing)
            rel = _signed64(rel)
        lp = _lp_int(ms_delta) + _lp_int(rel) + 2
        # the entry is built as one bytes and added to the blob at once
        # (each bytearray call is a generic method call when compiled;
        # bytes + bytes is native, bytes += is not)
        if same:
            record = _SAMEFIELDS_FLAGS
            for j in range(1, len(fv), 2):
                value = fv[j]
                record = record + _varint_bytes(len(value)) + value
                lp += _lp_str(value)
            lp += _lp_int(n + 3)
        else:
            record = _NO_FLAGS + _varint_bytes(n)
            for item in fv:
                record = record + _varint_bytes(len(item)) + item
                lp += _lp_str(item)
            lp += _lp_int(n) + _lp_int(2 * n + 4)
        blob += record
        self.body += lp
        self.live += 1
        return grew + len(record)

    def _grow(self, max_entries: int) -> int:
        """Room for four times the entries (up to ``max_entries`` if set;
        three steps to a default node's 100); returns the bytes added."""
        capacity = len(self.offsets)
        new = max(4 * capacity, MIN_CAPACITY)
        if 0 < max_entries < new:
            new = max(max_entries, capacity + 1)
        more = new - capacity
        self.ms.frombytes(bytes(more * self.ms.itemsize))
        self.seq.frombytes(bytes(more * self.seq.itemsize))
        self.offsets.frombytes(bytes(more * 4))
        return more * (self.ms.itemsize + self.seq.itemsize + 4)

    def close(self) -> int:
        """The next node opened: cut the arrays to the entries; returns
        the bytes freed (negative)."""
        size = self.live + self.dead
        spare = len(self.offsets) - size
        if not spare:
            return 0
        del self.ms[size:]
        del self.seq[size:]
        del self.offsets[size:]
        return -spare * (self.ms.itemsize + self.seq.itemsize + 4)


class Nack:
    """A PEL entry: who has it, since when, how many deliveries."""

    __slots__ = ("consumer", "delivery_time", "delivery_count")

    def __init__(self, consumer: Consumer | None, delivery_time: int) -> None:
        self.consumer = consumer
        self.delivery_time = delivery_time
        self.delivery_count = 1


class Consumer:
    """A group's reader.  Its ``pel`` holds the IDs of its pending entries
    only (their Nack is the group's): a Nack names its consumer, and a
    pointer back would make a reference cycle per entry, which the node's
    collector never looks for in old objects (shell/collector.py)."""

    __slots__ = ("name", "seen_time", "pel")

    def __init__(self, name: bytes, seen_time: int) -> None:
        self.name = name
        self.seen_time = seen_time
        self.pel: dict[int, None] = {}

    def pel_sorted(self) -> list[int]:
        return sorted(self.pel)


class Group:
    __slots__ = ("last_id", "entries_read", "pel", "pel_ids", "consumers")

    def __init__(self, last_id: int, entries_read: int) -> None:
        self.last_id = last_id
        self.entries_read = entries_read
        self.pel: dict[int, Nack] = {}
        self.pel_ids = SortedIds()  # pel's IDs
        self.consumers: dict[bytes, Consumer] = {}


class Stream:
    __slots__ = ("nodes", "keys", "length", "last_id", "last_ms", "last_seq", "first_id",
                 "max_deleted", "entries_added", "groups", "nbytes")

    def __init__(self) -> None:
        self.nodes: list[StreamNode] = []
        self.keys: list[int] = []  # each node's master ID
        self.length = 0
        self.last_id = 0
        # last_id's two halves, so XADD picks the next ID without 128-bit ints
        self.last_ms = 0
        self.last_seq = 0
        self.first_id = 0  # recorded-first-entry-id
        self.max_deleted = 0  # max-deleted-entry-id
        self.entries_added = 0
        self.groups: dict[bytes, Group] | None = None
        self.nbytes = 0

    # ------------------------------------------------------------ entries

    def set_last_id(self, stream_id: int) -> None:
        self.last_id = stream_id
        self.last_ms = stream_id >> 64
        self.last_seq = stream_id & MASK64

    def append(self, ms: int, seq: int, fv: list[bytes], max_bytes: int,
               max_entries: int, total: int = -1) -> None:
        """streamAppendItem after its checks: ``<ms>-<seq>`` > last_id;
        ``total``: the bytes of ``fv`` if the caller counted them."""
        if total < 0:
            total = 0
            for item in fv:
                total += len(item)
        stream_id = ms << 64 | seq
        node = self.nodes[-1] if self.nodes else None
        if node is not None:
            if max_bytes <= 0 or max_bytes > LISTPACK_MAX_SIZE:
                max_bytes = LISTPACK_MAX_SIZE
            if node.lp_bytes() + total >= max_bytes:
                node = None
            elif max_entries and node.live + node.dead >= max_entries:
                node = None
            if node is None:
                self.nbytes += self.nodes[-1].close()
        if node is None:
            node = StreamNode(stream_id, tuple(fv[0::2]))
            self.nodes.append(node)
            self.keys.append(stream_id)
            self.nbytes += NODE_OVERHEAD
        self.nbytes += node.append(ms, seq, fv, max_entries)
        self.length += 1
        self.entries_added += 1
        self.last_id = stream_id
        self.last_ms = ms
        self.last_seq = seq
        if self.length == 1:
            self.first_id = stream_id

    def _node_index(self, stream_id: int) -> int:
        """The node that would hold ``stream_id`` (0 if before them all)."""
        i = bisect_right(self.keys, stream_id) - 1
        return i if i > 0 else 0

    def range(self, start: int, end: int, count: int = 0,
              rev: bool = False) -> list[tuple[int, list[bytes]]]:
        """Live entries with start <= ID <= end, at most ``count`` (0: all),
        oldest first (``rev``: newest first)."""
        out: list[tuple[int, list[bytes]]] = []
        if start > end or not self.length:
            return out
        nodes = self.nodes
        if not rev:
            n = self._node_index(start)
            i = nodes[n].seek(start) if nodes else 0
            while n < len(nodes):
                node = nodes[n]
                blob, offsets, fields = node.blob, node.offsets, node.fields
                size = node.size()
                while i < size:
                    pos = offsets[i]
                    i += 1
                    if blob[pos] & DELETED:
                        continue  # (before the end check, as Redis: see ordered)
                    entry_id = node.id_at(i - 1)
                    if entry_id > end:
                        return out
                    if entry_id >= start:
                        out.append((entry_id, _decode(blob, pos, fields)))
                        if count and len(out) == count:
                            return out
                n += 1
                i = 0
            return out
        n = self._node_index(end)
        node = nodes[n]
        if node.ordered:
            i = node.seek(end)
            if i < node.size() and node.id_at(i) == end:
                i += 1
            i -= 1
        else:
            i = node.size() - 1
        while n >= 0:
            node = nodes[n]
            blob, offsets, fields = node.blob, node.offsets, node.fields
            while i >= 0:
                pos = offsets[i]
                i -= 1
                if blob[pos] & DELETED:
                    continue
                entry_id = node.id_at(i + 1)
                if entry_id > end:
                    continue
                if entry_id < start:
                    return out
                out.append((entry_id, _decode(blob, pos, fields)))
                if count and len(out) == count:
                    return out
            n -= 1
            if n >= 0:
                i = nodes[n].size() - 1
        return out

    def _find(self, stream_id: int) -> tuple[StreamNode, int] | None:
        """The live entry ``stream_id``: (its node, its index), or None."""
        if not self.nodes:
            return None
        node = self.nodes[self._node_index(stream_id)]
        i = node.seek(stream_id)
        if i < node.size() and node.id_at(i) == stream_id and not node.deleted(i):
            return node, i
        return None

    def exists(self, stream_id: int) -> bool:
        return self._find(stream_id) is not None

    def get(self, stream_id: int) -> list[bytes] | None:
        found = self._find(stream_id)
        return None if found is None else found[0].entry(found[1])

    def _remove_node(self, n: int) -> None:
        self.nbytes -= self.nodes[n].memory()
        del self.nodes[n]
        del self.keys[n]

    def delete(self, stream_id: int) -> bool:
        """streamDeleteItem: flag the entry deleted (its node goes with
        its last live entry)."""
        found = self._find(stream_id)
        if found is None:
            return False
        node, i = found
        node.blob[node.offsets[i]] |= DELETED
        node.live -= 1
        node.dead += 1
        self.length -= 1
        if not node.live:
            self._remove_node(self.nodes.index(node))
        return True

    def edge_id(self, first: bool) -> int:
        """The first (last) live entry's ID; 0 (MAX_ID for the last...) as
        streamGetEdgeID when empty: first -> MAX_ID, last -> 0."""
        entries = self.range(0, MAX_ID, 1, not first)
        if entries:
            return entries[0][0]
        return MAX_ID if first else 0

    def last_valid_id(self) -> int:
        """streamLastValidID: the last live entry's ID (0-0 if none), the
        last not deleted in the nodes' order (edge_id without decoding
        the entry: XREADGROUP asks it on every read)."""
        if not self.length:
            return 0
        nodes = self.nodes
        node = nodes[-1]
        last = node.size() - 1
        if last >= 0 and not node.blob[node.offsets[last]] & DELETED:
            return node.id_at(last)  # (the usual case, without the loop)
        for n in range(len(nodes) - 1, -1, -1):
            node = nodes[n]
            blob, offsets = node.blob, node.offsets
            for i in range(node.size() - 1, -1, -1):
                if not blob[offsets[i]] & DELETED:
                    return node.id_at(i)
        return 0

    def trim(self, maxlen: int, minid: int | None, approx: bool, limit: int) -> int:
        """streamTrim by MAXLEN (``minid`` None) or MINID; returns how many
        entries went."""
        deleted = 0
        nodes = self.nodes
        while nodes:
            if minid is None and self.length <= maxlen:
                break
            node = nodes[0]
            entries = node.live
            if limit and deleted + entries > limit:
                break
            if minid is None:
                remove = self.length - entries >= maxlen
            else:
                remove = node.id_at(node.size() - 1) < minid
            if remove:
                self._remove_node(0)
                self.length -= entries
                deleted += entries
                continue
            if approx:
                break
            blob, offsets = node.blob, node.offsets
            for i in range(node.size()):
                if minid is None:
                    if self.length <= maxlen:
                        break
                elif node.id_at(i) >= minid:
                    break
                pos = offsets[i]
                if not blob[pos] & DELETED:
                    blob[pos] |= DELETED
                    node.live -= 1
                    node.dead += 1
                    self.length -= 1
                    deleted += 1
            break
        if self.length == 0:
            self.first_id = 0
        elif deleted:
            self.first_id = self.edge_id(True)
        return deleted

    # ------------------------------------------------------------- groups

    def group(self, name: bytes) -> Group | None:
        groups = self.groups
        return None if groups is None else groups.get(name)

    def create_group(self, name: bytes, last_id: int, entries_read: int) -> Group | None:
        if self.groups is None:
            self.groups = {}
        if name in self.groups:
            return None
        group = self.groups[name] = Group(last_id, entries_read)
        self.nbytes += GROUP_OVERHEAD + len(name)
        return group

    def destroy_group(self, name: bytes) -> bool:
        groups = self.groups
        if groups is None or name not in groups:
            return False
        group = groups.pop(name)
        self.nbytes -= (GROUP_OVERHEAD + len(name) + NACK_OVERHEAD * len(group.pel)
                        + sum(CONSUMER_OVERHEAD + len(c) for c in group.consumers))
        return True

    def create_consumer(self, group: Group, name: bytes, now_ms: int) -> Consumer | None:
        if name in group.consumers:
            return None
        consumer = group.consumers[name] = Consumer(name, now_ms)
        self.nbytes += CONSUMER_OVERHEAD + len(name)
        return consumer

    def delete_consumer(self, group: Group, consumer: Consumer) -> int:
        """streamDelConsumer: its pending entries leave the group's PEL
        too; returns how many it had."""
        pending = len(consumer.pel)
        if pending:
            for entry_id in consumer.pel:
                del group.pel[entry_id]
            group.pel_ids = group.pel_ids.without(consumer.pel)  # (one pass)
        del group.consumers[consumer.name]
        self.nbytes -= CONSUMER_OVERHEAD + len(consumer.name) + NACK_OVERHEAD * pending
        return pending

    def add_nack(self, group: Group, entry_id: int, nack: Nack) -> None:
        """A new PEL entry (not yet in the group's PEL)."""
        group.pel[entry_id] = nack
        group.pel_ids.add(entry_id)
        if nack.consumer is not None:
            nack.consumer.pel[entry_id] = None
        self.nbytes += NACK_OVERHEAD

    def remove_nack(self, group: Group, entry_id: int) -> Nack | None:
        nack = group.pel.pop(entry_id, None)
        if nack is None:
            return None
        group.pel_ids.remove(entry_id)
        if nack.consumer is not None:
            nack.consumer.pel.pop(entry_id, None)
        self.nbytes -= NACK_OVERHEAD
        return nack

    def range_has_tombstones(self, start: int, end: int = MAX_ID) -> bool:
        """streamRangeHasTombstones."""
        if not self.length or not self.max_deleted:
            return False
        if self.first_id > self.max_deleted:
            return False
        return start <= self.max_deleted <= end

    def estimate_distance(self, entry_id: int) -> int:
        """streamEstimateDistanceFromFirstEverEntry (-1: unknown)."""
        if not self.entries_added:
            return 0
        if not self.length and entry_id <= self.last_id:
            return self.entries_added
        if entry_id == self.last_id:
            return self.entries_added
        if entry_id > self.last_id:
            return INVALID_ENTRIES_READ
        if not self.max_deleted or self.max_deleted < self.first_id:
            if entry_id < self.first_id:
                return self.entries_added - self.length
            if entry_id == self.first_id:
                return self.entries_added - self.length + 1
        return INVALID_ENTRIES_READ

    def lag(self, group: Group) -> int | None:
        """streamReplyWithCGLag: None when it cannot be known."""
        if not self.entries_added:
            return 0
        if (group.entries_read != INVALID_ENTRIES_READ
                and not self.range_has_tombstones(group.last_id)):
            return self.entries_added - group.entries_read
        entries_read = self.estimate_distance(group.last_id)
        if entries_read != INVALID_ENTRIES_READ:
            return self.entries_added - entries_read
        return None


# ---------------------------------------------------------- the type

class FrozenStream:
    """A stream captured for an AOF rewrite: its live entries' nodes
    copied, its groups as tuples."""

    __slots__ = ("nodes", "last_id", "entries_added", "max_deleted", "groups")

    def __init__(self, s: Stream) -> None:
        self.nodes = [(node.master_ms, node.ms[:node.size()], node.seq[:node.size()],
                       node.offsets[:node.size()], bytes(node.blob), node.fields)
                      for node in s.nodes]
        self.last_id = s.last_id
        self.entries_added = s.entries_added
        self.max_deleted = s.max_deleted
        self.groups: list[tuple[bytes, int, int, list[tuple[int, bytes, int, int]],
                                list[bytes]]] = []
        for name, g in sorted(s.groups.items()) if s.groups else ():
            pel = []
            for entry_id in g.pel_ids.since(0):
                nack = g.pel[entry_id]
                owner = nack.consumer.name if nack.consumer is not None else b""
                pel.append((entry_id, owner, nack.delivery_time, nack.delivery_count))
            idle = [c.name for c in g.consumers.values() if not c.pel]
            self.groups.append((name, g.last_id, g.entries_read, pel, idle))


def stream_memory(value: object) -> int:
    assert isinstance(value, Stream)
    return STREAM_OVERHEAD + value.nbytes


def stream_encoding(value: object) -> str:
    return "stream"


def stream_freeze(value: object) -> object:
    assert isinstance(value, Stream)
    return FrozenStream(value)


def stream_copy(value: object) -> object:
    """COPY's value: nodes, groups, consumers and PEL entries of its own
    (compiled classes cannot be deep-copied)."""
    assert isinstance(value, Stream)
    out = Stream()
    out.nodes = [node.copy() for node in value.nodes]
    out.keys = list(value.keys)
    out.length = value.length
    out.set_last_id(value.last_id)
    out.first_id = value.first_id
    out.max_deleted = value.max_deleted
    out.entries_added = value.entries_added
    out.nbytes = value.nbytes
    if value.groups is not None:
        out.groups = {}
        for name, g in value.groups.items():
            group = out.groups[name] = Group(g.last_id, g.entries_read)
            for consumer_name, c in g.consumers.items():
                consumer = group.consumers[consumer_name] = Consumer(c.name, c.seen_time)
                consumer.pel = dict(c.pel)
            for entry_id in g.pel_ids.since(0):
                nack = g.pel[entry_id]
                owner = nack.consumer
                copied = Nack(None if owner is None else group.consumers[owner.name],
                              nack.delivery_time)
                copied.delivery_count = nack.delivery_count
                group.pel[entry_id] = copied
            group.pel_ids = SortedIds(list(g.pel_ids.since(0)))
    return out


def stream_records(key: bytes, frozen: object) -> Records:
    """Redis's rewriteStreamObject: an XADD per entry (an empty stream:
    XADD MAXLEN 0 of its last ID), XSETID with the counters, then each
    group, its PEL as XCLAIM ... FORCE JUSTID, its consumers without
    pending entries as XGROUP CREATECONSUMER."""
    assert isinstance(frozen, FrozenStream)
    return _records(key, frozen)


def _records(key: bytes, frozen: FrozenStream) -> Iterator[list[bytes]]:
    """Deleted entries still in a node are added and deleted again, so the
    nodes come back as they were (radix-tree-keys, and where approximate
    trims cut): those before the first live entry by XTRIM MINID (a trim
    left them), the others by XDEL (max-deleted-entry-id is set after)."""
    any_entry = False
    first_live = -1
    deleted: list[bytes] = []
    for master_ms, ms, seq, offsets, blob, fields in frozen.nodes:
        buf = bytearray(blob)
        for i in range(len(offsets)):
            any_entry = True
            entry_id = (master_ms + ms[i]) << 64 | seq[i]
            text = format_id(entry_id)
            yield [b"XADD", key, text, *_decode(buf, offsets[i], fields)]
            if not buf[offsets[i]] & DELETED:
                if first_live < 0:
                    first_live = entry_id
            elif first_live >= 0:
                deleted.append(text)
    if not any_entry:
        yield [b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y"]  # (XSETID sets the ID)
    elif first_live < 0:
        yield [b"XTRIM", key, b"MAXLEN", b"0"]
    else:
        yield [b"XTRIM", key, b"MINID", format_id(first_live)]
    for i in range(0, len(deleted), REWRITE_BATCH):
        yield [b"XDEL", key, *deleted[i:i + REWRITE_BATCH]]
    yield [b"XSETID", key, format_id(frozen.last_id), b"ENTRIESADDED",
           b"%d" % frozen.entries_added, b"MAXDELETEDID", format_id(frozen.max_deleted)]
    for name, last_id, entries_read, pel, idle_consumers in frozen.groups:
        yield [b"XGROUP", b"CREATE", key, name, format_id(last_id), b"ENTRIESREAD",
               b"%d" % entries_read]
        for entry_id, consumer, delivery_time, delivery_count in pel:
            yield [b"XCLAIM", key, name, consumer, b"0", format_id(entry_id), b"TIME",
                   b"%d" % delivery_time, b"RETRYCOUNT", b"%d" % delivery_count,
                   b"JUSTID", b"FORCE"]
        for consumer in idle_consumers:
            yield [b"XGROUP", b"CREATECONSUMER", key, name, consumer]


STREAM = ValueType("stream", (Stream, FrozenStream), stream_memory, stream_encoding,
                   stream_freeze, stream_records, stream_copy)
register_type(STREAM)
