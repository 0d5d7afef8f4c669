"""The list type: items packed into a few big bytes objects, as Redis's
quicklist of listpacks, with a short run of plain items at each end for
the hot pushes and pops; the list keeps its own byte count, so ``memory``
is O(1) however long the list is.

A ``List`` is three parts, in list order:

- ``head``: plain ``bytes`` items, stored reversed (``head[-1]`` is the
  first item), so LPUSH and LPOP are a Python list's append and pop;
- ``mid``: packed nodes, each a tuple ``(data, lens)``: the items' bytes
  joined into one ``bytes`` and their lengths in an ``array('I')`` (4
  bytes an item instead of a 33-byte object header and an 8-byte slot);
  a node grows by merging packs up to ``NODE_BYTES`` of data (Redis's
  list-max-listpack-size -2: 8 KB);
- ``tail``: plain items in order (``tail[-1]`` is the last), for RPUSH
  and RPOP.

An end that holds ``2 * PACK`` plain items packs all but the ``PACK``
nearest its side (so a push packs at most once in ``PACK`` pushes); a pop that
finds its end empty unpacks the nearest node (or, with no node, takes the
other end's plain items).  Every other access walks the parts (index
arithmetic by the nodes' item counts); LINSERT re-packs the whole list,
O(n) as in Redis.

Every change to a list's items goes through the count: whoever pushes or
pops adds or subtracts ``item_size(item)`` (commands_lists.py does, and
reports the same delta to the keyspace with ``Keyspace.grow``).  An empty
list never stays in the keyspace (Redis: empty collections vanish); the
command that empties one deletes its key.

Index arithmetic is Redis's (t_list.c): negative indexes count from the
tail, and ranges are clamped the way LRANGE and LTRIM clamp them.
"""

from __future__ import annotations

from array import array
from itertools import chain, islice
from struct import Struct
from typing import Iterable, Iterator

from mypy_extensions import mypyc_attr

from .types import ValueType, register_type

# Estimated bytes per item beyond its bytes: its length in a node's array
# (4), its share of the node and of the plain ends (bench/README.md, "Keyspace").
ITEM_OVERHEAD = 8
# An empty List: the object and its three Python lists.
LIST_OVERHEAD = 256
REWRITE_BATCH = 64  # items per RPUSH record in an AOF rewrite (as Redis)
PACK = 32  # an end holding 2 * PACK plain items packs all but PACK of them
NODE_BYTES = 8192  # packs merge into a node up to this many bytes of data

Node = tuple[bytes, "array[int]"]


def _node(items: list[bytes]) -> Node:
    return b"".join(items), array("I", map(len, items))


def _unpack(node: Node) -> tuple[bytes, ...]:
    """A node's items (one struct format "<len>s" an item: cheaper than
    slicing them out one by one)."""
    data, lens = node
    return Struct(("%ds" * len(lens)) % tuple(lens)).unpack(data)


def _item_at(node: Node, i: int) -> bytes:
    data, lens = node
    start = sum(lens[:i])
    return data[start:start + lens[i]]


class List:
    __slots__ = ("head", "mid", "tail", "packed", "nbytes")

    def __init__(self, items: Iterable[bytes] = ()) -> None:
        self.head: list[bytes] = []  # reversed: head[-1] is the first item
        self.mid: list[Node] = []
        self.tail: list[bytes] = list(items)
        self.packed = 0  # items in mid
        self.nbytes: int = sum(ITEM_OVERHEAD + len(item) for item in self.tail)
        if len(self.tail) >= 2 * PACK:
            self.pack_tail()

    # ------------------------------------------------------------ packing

    def pack_tail(self) -> None:
        """Pack every plain item of the tail but the last ``PACK``, after
        mid's last item."""
        tail = self.tail
        n = len(tail) - PACK
        items = tail[:n]
        del tail[:n]
        mid = self.mid
        self.packed += n
        size = sum(map(len, items))
        if mid and size + len(mid[-1][0]) <= NODE_BYTES:
            data, lens = mid[-1]
            mid[-1] = (data + b"".join(items), lens + array("I", map(len, items)))
        elif size <= NODE_BYTES:
            mid.append(_node(items))
        else:
            mid.extend(map(_node, _chunks(items)))

    def pack_head(self) -> None:
        """Pack every plain item of the head but the first ``PACK``, before
        mid's first item."""
        head = self.head
        n = len(head) - PACK
        items = head[:n]
        del head[:n]
        items.reverse()  # (head is reversed)
        mid = self.mid
        self.packed += n
        size = sum(map(len, items))
        if mid and size + len(mid[0][0]) <= NODE_BYTES:
            data, lens = mid[0]
            mid[0] = (b"".join(items) + data, array("I", map(len, items)) + lens)
        elif size <= NODE_BYTES:
            mid.insert(0, _node(items))
        else:
            mid[0:0] = map(_node, _chunks(items))

    # ------------------------------------------------------ deque's calls

    def __len__(self) -> int:
        return len(self.head) + self.packed + len(self.tail)

    def __bool__(self) -> bool:
        return bool(self.tail or self.head or self.packed)

    def append(self, item: bytes) -> None:
        tail = self.tail
        tail.append(item)
        if len(tail) >= 2 * PACK:
            self.pack_tail()

    def appendleft(self, item: bytes) -> None:
        head = self.head
        head.append(item)
        if len(head) >= 2 * PACK:
            self.pack_head()

    def extend(self, items: Iterable[bytes]) -> None:
        tail = self.tail
        tail.extend(items)
        if len(tail) >= 2 * PACK:
            self.pack_tail()

    def extendleft(self, items: Iterable[bytes]) -> None:
        """Each item pushed to the front in turn (deque's extendleft)."""
        head = self.head
        head.extend(items)
        if len(head) >= 2 * PACK:
            self.pack_head()

    def pop(self) -> bytes:
        """The last item, removed (IndexError if empty)."""
        return self._refill(False).pop()

    def popleft(self) -> bytes:
        """The first item, removed (IndexError if empty)."""
        return self._refill(True).pop()

    def _refill(self, left: bool) -> list[bytes]:
        """The plain end of that side (head if ``left``), refilled if empty
        from the nearest node, or else from the other end's plain items."""
        end, other = (self.head, self.tail) if left else (self.tail, self.head)
        if not end:
            if self.mid:
                node = self.mid.pop(0 if left else -1)
                self.packed -= len(node[1])
                items = _unpack(node)
                end.extend(reversed(items) if left else items)
            elif other:
                end.extend(reversed(other))
                other.clear()
            else:
                raise IndexError("pop from an empty list")
        return end

    def clear(self) -> None:
        self.head = []
        self.mid = []
        self.tail = []
        self.packed = 0

    def __iter__(self) -> Iterator[bytes]:
        return chain(reversed(self.head), chain.from_iterable(map(_unpack, self.mid)),
                     self.tail)

    def __reversed__(self) -> Iterator[bytes]:
        return chain(reversed(self.tail),
                     chain.from_iterable(reversed(_unpack(node)) for node in reversed(self.mid)),
                     self.head)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, List):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"List({list(self)!r})"

    def _locate(self, index: int) -> tuple[int, int]:
        """(which node of mid, index in it) of absolute ``index``, which
        must fall in mid."""
        pos = len(self.head)
        for n, (_, lens) in enumerate(self.mid):
            if index < pos + len(lens):
                return n, index - pos
            pos += len(lens)
        raise IndexError(index)

    def _absolute(self, index: int) -> int:
        length = len(self)
        if index < 0:
            index += length
        if not 0 <= index < length:
            raise IndexError("list index out of range")
        return index

    def __getitem__(self, index: int) -> bytes:
        index = self._absolute(index)
        head = self.head
        if index < len(head):
            return head[len(head) - 1 - index]
        after = index - len(head) - self.packed
        if after >= 0:
            return self.tail[after]
        n, i = self._locate(index)
        return _item_at(self.mid[n], i)

    def __setitem__(self, index: int, item: bytes) -> None:
        index = self._absolute(index)
        head = self.head
        if index < len(head):
            head[len(head) - 1 - index] = item
            return
        after = index - len(head) - self.packed
        if after >= 0:
            self.tail[after] = item
            return
        n, i = self._locate(index)
        items = list(_unpack(self.mid[n]))
        items[i] = item
        self.mid[n] = _node(items)

    def index(self, item: bytes) -> int:
        for i, candidate in enumerate(self):
            if candidate == item:
                return i
        raise ValueError("item not in list")

    def insert(self, index: int, item: bytes) -> None:
        items = list(self)
        items.insert(index, item)
        self.replace(items)

    # ----------------------------------------------------------- ours

    def replace(self, items: list[bytes]) -> None:
        """Hold ``items`` instead (byte count left to the caller)."""
        self.clear()
        self.tail = items
        if len(items) >= 2 * PACK:
            self.pack_tail()

    def slice(self, start: int, stop: int) -> list[bytes]:
        """Items ``start`` to ``stop`` (absolute, 0 <= start <= stop <=
        len), skipping whole nodes."""
        out: list[bytes] = []
        head = self.head
        nh = len(head)
        if start < nh:
            part = head[max(nh - stop, 0):nh - start]
            part.reverse()
            out.extend(part)
        pos = nh
        if stop > pos and start < pos + self.packed:
            for node in self.mid:
                n = len(node[1])
                if pos + n > start:
                    out.extend(_unpack(node)[max(start - pos, 0):stop - pos])
                pos += n
                if pos >= stop:
                    break
        else:
            pos += self.packed
        if stop > pos:
            out.extend(self.tail[max(start - pos, 0):stop - pos])
        return out


def _chunks(items: list[bytes]) -> Iterator[list[bytes]]:
    """``items`` cut into runs of at most ``NODE_BYTES`` (at least one item each)."""
    run: list[bytes] = []
    size = 0
    for item in items:
        if run and size + len(item) > NODE_BYTES:
            yield run
            run, size = [], 0
        run.append(item)
        size += len(item)
    if run:
        yield run


def item_size(item: bytes) -> int:
    return ITEM_OVERHEAD + len(item)


def items_size(items: Iterable[bytes]) -> int:
    return sum(ITEM_OVERHEAD + len(item) for item in items)


def clamp_range(start: int, end: int, length: int) -> tuple[int, int] | None:
    """LRANGE's and LTRIM's (start, end) as absolute inclusive indexes, or
    None for an empty range."""
    if start < 0:
        start += length
    if end < 0:
        end += length
    if start < 0:
        start = 0
    if start > end or start >= length:
        return None
    if end >= length:
        end = length - 1
    return start, end


def items_in_range(lst: List, start: int, end: int) -> list[bytes]:
    """Items ``start..end`` (absolute, inclusive)."""
    return lst.slice(start, end + 1)


def positions(lst: List, element: bytes, from_tail: bool, skip: int, count: int,
              maxlen: int) -> list[int]:
    """LPOS: indexes of ``element`` after skipping ``skip`` matches, from
    the tail if ``from_tail``, at most ``count`` (0: all), comparing at most
    ``maxlen`` items (0: all)."""
    length = len(lst)
    out: list[int] = []
    items: Iterator[bytes] = reversed(lst) if from_tail else iter(lst)
    if maxlen:
        items = islice(items, maxlen)
    for i, item in enumerate(items):
        if item == element:
            if skip:
                skip -= 1
                continue
            out.append(length - 1 - i if from_tail else i)
            if len(out) == count:
                break
    return out


def remove(lst: List, element: bytes, count: int) -> list[bytes]:
    """LREM: drop up to |count| items equal to ``element`` (from the tail
    if count < 0, all if 0); returns the removed items."""
    limit = -count if count < 0 else count
    kept: list[bytes] = []
    removed: list[bytes] = []
    items: Iterator[bytes] = reversed(lst) if count < 0 else iter(lst)
    for item in items:
        if item == element and (not limit or len(removed) < limit):
            removed.append(item)
        else:
            kept.append(item)
    if removed:
        if count < 0:
            kept.reverse()
        lst.replace(kept)
    return removed


# ------------------------------------------------------------ the type

def list_memory(value: object) -> int:
    assert isinstance(value, List)
    return LIST_OVERHEAD + value.nbytes


def list_encoding(value: object) -> str:
    return "quicklist"  # Redis 7.0 answers this for every list


def list_freeze(value: object) -> object:
    assert isinstance(value, List)
    return FrozenList(value)


@mypyc_attr(native_class=False)  # (mypyc compiles no tuple subclass)
class FrozenList(tuple[bytes, ...]):
    """A list's items as an AOF rewrite captured them."""
    __slots__ = ()


def list_records(key: bytes, frozen: object) -> list[list[bytes]]:
    assert isinstance(frozen, FrozenList)
    return [[b"RPUSH", key, *frozen[i:i + REWRITE_BATCH]]
            for i in range(0, len(frozen), REWRITE_BATCH)]


def list_copy(value: object) -> object:
    """The parts copied; packed nodes are shared (a node is never changed
    in place: packing and unpacking replace it)."""
    assert isinstance(value, List)
    out = List()
    out.head = list(value.head)
    out.mid = list(value.mid)
    out.tail = list(value.tail)
    out.packed = value.packed
    out.nbytes = value.nbytes
    return out


LIST = ValueType("list", (List, FrozenList), list_memory, list_encoding, list_freeze,
                 list_records, list_copy)
register_type(LIST)
