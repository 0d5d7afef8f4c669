"""The stream type without a server (core/keyspace/streams.py, stream_ids.py):
ID parsing, ranges over node boundaries, node splits where Redis splits
its listpacks, trimming, deleted entries out of order (after XSETID
lowered the last ID), and the records an AOF rewrite writes."""

import pytest

from trisque.core.keyspace.stream_ids import MAX_ID, format_id, parse_id, parse_interval
from trisque.core.keyspace.streams import (FrozenStream, Nack, Stream, _lp_str,
                                           stream_memory, stream_records)
from trisque.protocol.errors import CommandError


def sid(ms, seq=0):
    return ms << 64 | seq


def filled(n, max_entries=100, max_bytes=4096, fields=(b"f", b"v")):
    s = Stream()
    for i in range(1, n + 1):
        s.append(i, 0, list(fields), max_bytes, max_entries)
    return s


def test_parse_ids_as_redis():
    assert parse_id(b"5") == (sid(5), True)
    assert parse_id(b"5", 7) == (sid(5, 7), True)
    assert parse_id(b"5-*", seq_star=True) == (sid(5), False)
    assert parse_id(b"-") == (0, True) and parse_id(b"+") == (MAX_ID, True)
    assert parse_id(b"007-01") == (sid(7, 1), True)  # (strtoull's leading zeros)
    assert parse_id(b" 3") == (sid(3), True)
    for bad in (b"-1", b"1-x", b"", b"18446744073709551616", b"5-*", b"1-" + b"9" * 200):
        with pytest.raises(CommandError, match="Invalid stream ID"):
            parse_id(bad)
    with pytest.raises(CommandError):
        parse_id(b"+", strict=True)
    assert parse_interval(b"(5-1", 0) == (sid(5, 1), True)
    assert format_id(sid(18446744073709551615, 3)) == b"18446744073709551615-3"


def test_ranges_across_nodes_both_ways():
    s = filled(250, max_entries=10)
    assert len(s.nodes) == 25
    ids = [entry_id >> 64 for entry_id, _ in s.range(sid(95), sid(123))]
    assert ids == list(range(95, 124))
    rev = [entry_id >> 64 for entry_id, _ in s.range(sid(95), sid(123), 5, rev=True)]
    assert rev == [123, 122, 121, 120, 119]
    assert s.range(sid(300), MAX_ID) == [] and s.range(0, sid(0, 5)) == []
    assert s.get(sid(7)) == [b"f", b"v"] and s.get(sid(7, 1)) is None


def test_nodes_split_by_entries_and_by_listpack_bytes():
    assert len(filled(100).nodes) == 1 and len(filled(101).nodes) == 2
    # 30-byte values: a node reaches 4096 listpack bytes before 100 entries
    big = filled(300, fields=(b"field", b"x" * 30))
    assert 1 < len(big.nodes) < 300 // 100 * 4
    assert all(node.lp_bytes() < 4096 + 40 for node in big.nodes)
    assert _lp_str(b"12") == 2 and _lp_str(b"-5000") == 4 and _lp_str(b"012") == 5


def test_node_arrays_room_is_counted_and_cut_when_the_next_node_opens():
    s = filled(150, max_entries=100)
    full, open_node = s.nodes
    assert len(full.offsets) == full.size() == 100  # (cut to its entries: no spare room)
    assert open_node.size() == 50 and len(open_node.offsets) == 100
    wide = filled(3)
    wide.append(10, 1 << 40, [b"f", b"v"], 4096, 100)  # (a seq past 32 bits: 'Q')
    assert wide.nodes[0].seq.typecode == "Q" and wide.get(sid(10, 1 << 40)) == [b"f", b"v"]
    for stream in (s, wide, filled(500, max_entries=0)):
        # the running count equals the nodes' memory recomputed
        assert stream.nbytes == sum(node.memory() for node in stream.nodes)
        assert [i >> 64 for i, _ in stream.range(0, sid(3), rev=True)] == [3, 2, 1]


def test_trim_exact_and_approximate():
    s = filled(250, max_entries=100)
    assert s.trim(200, None, True, 0) == 0  # ~: only whole nodes, none fits
    assert s.trim(150, None, True, 0) == 100 and s.length == 150
    assert s.trim(149, None, False, 0) == 1 and s.first_id == sid(102)
    assert s.trim(0, sid(201), False, 0) == 99 and s.first_id == sid(201)


def test_deleted_entries_out_of_order_are_skipped_as_redis():
    s = filled(3)
    s.append(100, 0, [b"f", b"v"], 4096, 100)
    assert s.delete(sid(100))
    s.set_last_id(sid(50))  # (XSETID below the deleted entry)
    s.append(60, 0, [b"f", b"w"], 4096, 100)
    assert not s.nodes[0].ordered
    assert s.get(sid(60)) == [b"f", b"w"]
    assert [i >> 64 for i, _ in s.range(sid(60), sid(60))] == [60]
    assert [i >> 64 for i, _ in s.range(0, MAX_ID, rev=True)] == [60, 3, 2, 1]


def test_rewrite_records_rebuild_nodes_pel_and_counters():
    s = filled(5)
    s.delete(sid(1))
    s.delete(sid(3))
    s.max_deleted = sid(3)
    g = s.create_group(b"g", sid(4), 4)
    consumer = s.create_consumer(g, b"alice", 1000)
    s.add_nack(g, sid(3), Nack(consumer, 1234))  # (an entry deleted since)
    s.create_consumer(g, b"idle", 1000)
    before = stream_memory(s)
    records = list(stream_records(b"k", FrozenStream(s)))
    assert stream_memory(s) == before
    names = [r[0] + (b" " + r[1] if r[0] == b"XGROUP" else b"") for r in records]
    assert names == [b"XADD"] * 5 + [b"XTRIM", b"XDEL", b"XSETID", b"XGROUP CREATE",
                                     b"XCLAIM", b"XGROUP CREATECONSUMER"]
    assert records[5] == [b"XTRIM", b"k", b"MINID", b"2-0"]
    assert records[6] == [b"XDEL", b"k", b"3-0"]
    assert records[7][-1] == b"3-0" and b"ENTRIESADDED" in records[7]
    assert records[9][:6] == [b"XCLAIM", b"k", b"g", b"alice", b"0", b"3-0"]
    empty = Stream()
    assert list(stream_records(b"e", FrozenStream(empty)))[0][:5] == [
        b"XADD", b"e", b"MAXLEN", b"0", b"0-1"]


def test_sorted_ids_follow_a_sorted_list_across_chunk_splits():
    """A group's PEL in ID order (sorted_ids.py): adds mostly at the end,
    some in between, removals mostly at the front, checked against a plain
    sorted list after every step, across chunk splits and emptied chunks."""
    import random
    from bisect import insort

    from trisque.core.keyspace.sorted_ids import CHUNK, SortedIds

    rng = random.Random(7)
    ids = SortedIds()
    model: list[int] = []
    next_id = 1
    most_chunks = 0
    for step in range(12 * CHUNK):
        roll = rng.random()
        if roll < 0.65 or not model:
            if rng.random() < 0.8:
                next_id += rng.randrange(1, 4)
                new = next_id
            else:
                new = rng.randrange(1, next_id + 1)
                if new in model:
                    continue
            ids.add(new)
            insort(model, new)
        else:
            gone = model[0] if rng.random() < 0.6 else rng.choice(model)
            ids.remove(gone)
            model.remove(gone)
        assert len(ids) == len(model)
        most_chunks = max(most_chunks, len(ids.chunks))
        if step % 97 == 0 or len(model) < 3:
            assert list(ids.since(0)) == model
            if model:
                assert (ids.first(), ids.last()) == (model[0], model[-1])
                start = rng.randrange(0, next_id + 2)
                assert ids.take(start, 5) == [i for i in model if i >= start][:5]
    assert most_chunks >= 3 and max(len(c) for c in ids.chunks) <= 2 * CHUNK
    assert list(ids.without(dict.fromkeys(model[::2])).since(0)) == model[1::2]
    assert list(SortedIds(model).since(model[len(model) // 2])) == model[len(model) // 2:]


def test_copy_shares_nothing_the_copy_changes():
    """COPY's value (stream_copy): the compiled classes cannot be
    deep-copied, so each part is copied by hand; changing the copy's
    entries, PEL and consumers leaves the original as it was."""
    from trisque.core.keyspace.streams import Consumer, stream_copy

    s = filled(250)
    g = s.create_group(b"g", 0, 0)
    alice = s.create_consumer(g, b"alice", 5)
    for i in (1, 2, 3, 150):
        s.add_nack(g, sid(i), Nack(alice, 7))
    s.add_nack(g, sid(4), Nack(None, 7))
    before = s.range(0, MAX_ID)
    copy = stream_copy(s)
    assert copy.range(0, MAX_ID) == before and stream_memory(copy) == stream_memory(s)
    cg = copy.group(b"g")
    assert list(cg.pel_ids.since(0)) == [sid(i) for i in (1, 2, 3, 4, 150)]
    assert cg.pel[sid(1)].consumer is cg.consumers[b"alice"] is not alice
    copy.append(300, 0, [b"f", b"v"], 4096, 100)
    copy.delete(sid(2))
    copy.remove_nack(cg, sid(1))
    copy.create_consumer(cg, b"bob", 9)
    cg.pel[sid(3)].delivery_count = 9
    assert s.range(0, MAX_ID) == before and s.length == 250
    assert list(g.pel_ids.since(0)) == [sid(i) for i in (1, 2, 3, 4, 150)]
    assert list(alice.pel) == [sid(i) for i in (1, 2, 3, 150)]
    assert set(g.consumers) == {b"alice"} and g.pel[sid(3)].delivery_count == 1
    assert isinstance(cg.consumers[b"bob"], Consumer)
