"""The one-step job record (core.jobs.job.serialize, every bus and AOF
record) and the bus's job-record decoder agree with the shared codec
(protocol/jobcodec.py)."""

import struct

import pytest

from trisque.protocol import bus, jobcodec
from trisque.core.jobs.job import ACTIVE, DUMMY_ACK, Job, serialize


def _job(nodes, flags=0, nacks=0, deliveries=0):
    job = Job(b"D-0123abcd-" + b"A" * 24 + b"-0a0b", b"queue", b"body \x00\xff",
              ACTIVE, 3, 1_700_000_000_000_000_123, 1_700_000_086_400_000, 5, 30)
    job.flags = flags
    job.nacks = nacks
    job.deliveries = deliveries
    job.nodes_delivered = nodes
    return job


def codec_record(job, etime_ms):
    """The job through jobcodec.encode, field by field: the reference."""
    return jobcodec.encode(job.id, job.state, job.flags & ~DUMMY_ACK, job.repl, job.ctime,
                           etime_ms, job.delay_s, job.retry_s, job.nacks, job.deliveries,
                           job.queue, job.body, job.nodes_delivered)


def test_job_record_is_the_codec_layout():
    a, b, c = "a" * 40, "b" * 40, "c" * 40
    for job in (_job((a, b, c)), _job((a,), flags=DUMMY_ACK | 3, nacks=7, deliveries=2),
                _job(()), _job((a.encode(), b))):
        for etime in (1, 86_400_000):
            record = serialize(job, etime)
            assert record == codec_record(job, etime)
            fields, end = jobcodec.decode(record)
            assert end == len(record)
            assert fields[5] == etime
    # a cached ID block is reused only for the same holders
    assert serialize(_job((b, a)), 1) == codec_record(_job((b, a)), 1)


def test_jobid_frames_round_trip():
    header = bus.Header("f" * 40, 7711, 17711)
    items = [(b"D-%08x-%s-0001" % (i, b"B" * 24), i * 1000) for i in range(300)]
    for type_ in bus.JOBID_TYPES:
        msg = bus.decode(bus.jobids(header, type_, items, 4))
        assert msg.type == type_ and msg.mflags == 4
        assert msg.body == items
    assert bus.decode(bus.jobids(header, bus.GOTJOB, [])).body == []


def test_jobid_frames_take_bare_ids_as_aux_zero():
    """A replica's GOTJOB items are the IDs alone: the frame is byte for
    byte the one of (id, 0) pairs, also mixed with pairs, and with a pair
    whose aux is not 0 (the pack-per-item path)."""
    header = bus.Header("f" * 40, 7711, 17711)
    ids = [b"D-%08x-%s-0001" % (i, b"B" * 24) for i in range(5)]
    pairs = [(i, 0) for i in ids]
    assert bus.jobids(header, bus.GOTJOB, ids) == bus.jobids(header, bus.GOTJOB, pairs)
    mixed = [ids[0], pairs[1], ids[2]]
    assert bus.jobids(header, bus.GOTJOB, mixed) == bus.jobids(header, bus.GOTJOB, pairs[:3])
    with_aux = [ids[0], (ids[1], 7), ids[2]]
    msg = bus.decode(bus.jobids(header, bus.DELJOB, with_aux, 4))
    assert (msg.type, msg.mflags, msg.body) == (bus.DELJOB, 4, [(ids[0], 0), (ids[1], 7),
                                                                 (ids[2], 0)])


def test_gotjob_frames_decode_raw_for_the_origin():
    """cluster.receive takes a GOTJOB's items raw (bus.decode's
    gotjob_raw): the same items once unpacked, the length still checked,
    and every other type decoded as always."""
    header = bus.Header("f" * 40, 7711, 17711)
    ids = [b"D-%08x-%s-0001" % (i, b"C" * 24) for i in range(7)]
    frame = bus.jobids(header, bus.GOTJOB, ids)
    msg = bus.decode(frame, True)
    assert msg.type == bus.GOTJOB and msg.body == bus.jobids_raw(ids)
    assert bus.jobid_items(msg.body) == bus.decode(frame).body == [(i, 0) for i in ids]
    with_aux = bus.jobids(header, bus.GOTJOB, [(ids[0], 3)])
    assert bus.jobid_items(bus.decode(with_aux, True).body) == [(ids[0], 3)]
    assert bus.decode(bus.jobids(header, bus.GOTJOB, []), True).body == b""
    assert bus.decode(bus.jobids(header, bus.DELJOB, ids), True).body == [(i, 0) for i in ids]
    for bad in (frame[:-1], frame + b"x"):
        bad = bytearray(bad)
        bad[4:8] = struct.pack("<I", len(bad))
        with pytest.raises(bus.BusError):
            bus.decode(bytes(bad), True)


def test_job_frames_with_a_given_size_are_the_same_frames():
    """The outbox passes the records' size it already counted: the frame
    is the one jobs() makes counting them itself."""
    header = bus.Header("f" * 40, 7711, 17711)
    records = [serialize(_job(("a" * 40,), nacks=i), 1000 + i) for i in range(3)]
    frame = bus.jobs(header, bus.REPLJOB, records, bus.NOREPLY)
    assert bus.jobs(header, bus.REPLJOB, records, bus.NOREPLY,
                    sum(map(len, records))) == frame
    assert struct.unpack_from("<I", frame, 4)[0] == len(frame)
    assert bus.decode(frame).body == [jobcodec.decode(r)[0] for r in records]
    assert bus.decode(bus.jobs(header, bus.YOURJOBS, [])).body == []


def test_a_lone_record_sent_to_several_holders_is_framed_once():
    """A REPLJOB's lone record goes to each new holder: the frame made for
    the first is returned again for the same record object (the same
    bytes a fresh frame has), and never for another record, type or flags."""
    header = bus.Header("f" * 40, 7711, 17711)
    record = serialize(_job(("a" * 40, "b" * 40)), 1000)
    first = bus.jobs(header, bus.REPLJOB, [record], 0, len(record))
    assert bus.jobs(header, bus.REPLJOB, [record], 0, len(record)) is first
    assert first == bus.HEADER.pack(bus.MAGIC, bus.VERSION, bus.HEADER_SIZE + 4 + len(record),
                                    bus.REPLJOB, 0, header.flags, header.node_id, 7711,
                                    17711) + struct.pack("<I", 1) + record
    assert struct.unpack_from("<I", first, 4)[0] == len(first)
    assert bus.decode(first).body == [jobcodec.decode(record)[0]]
    noreply = bus.jobs(header, bus.REPLJOB, [record], bus.NOREPLY)
    assert noreply is not first and bus.decode(noreply).mflags == bus.NOREPLY
    yours = bus.jobs(header, bus.YOURJOBS, [record])
    assert bus.decode(yours).type == bus.YOURJOBS
    same_bytes = bytes(bytearray(record))  # equal, another object: framed anew
    again = bus.jobs(header, bus.REPLJOB, [same_bytes])
    assert again == first and again is not first
    big = serialize(Job(b"D-0123abcd-" + b"B" * 24 + b"-0a0b", b"q", b"x" * (bus.LAST_FRAME_KEPT_BYTES + 1),
                        ACTIVE, 3, 1_700_000_000_000_000_123, 1_700_000_086_400_000, 0, 30), 1000)
    framed = bus.jobs(header, bus.REPLJOB, [big])
    assert bus.jobs(header, bus.REPLJOB, [big]) is not framed  # a large one is not kept
    assert header.last_record is not big


def test_lone_record_frames_after_any_other_are_the_packed_frames():
    """jobs() keeps the last lone record's frame head (header and count)
    for the next record of the same length, type and flags: each frame is
    still the packed one, whatever frame came before it."""
    header = bus.Header("f" * 40, 7711, 17711)
    for body in (b"x", b"y", b"xy", b"x", b"xyz" * 50, b"abc" * 50):
        for type_, mflags in ((bus.REPLJOB, 0), (bus.REPLJOB, 0), (bus.REPLJOB, bus.NOREPLY),
                              (bus.YOURJOBS, 0), (bus.REPLJOB, 0)):
            job = Job(b"D-0123abcd-" + b"C" * 24 + b"-0a0b", b"q", body,
                      ACTIVE, 3, 1_700_000_000_000_000_123, 1_700_000_086_400_000, 0, 30)
            job.nodes_delivered = ("a" * 40,)
            record = serialize(job, 1000)
            frame = bus.jobs(header, type_, [record], mflags)
            assert frame == bus.HEADER.pack(
                bus.MAGIC, bus.VERSION, bus.HEADER_SIZE + 4 + len(record), type_, mflags,
                header.flags, header.node_id, 7711, 17711) + struct.pack("<I", 1) + record
            assert bus.decode(frame).body == [jobcodec.decode(record)[0]]


def test_job_frames_decode_like_the_codec_and_refuse_bad_records():
    header = bus.Header("f" * 40, 7711, 17711)
    a, b = "a" * 40, "b" * 40
    jobs = [_job((a, b)), _job((b,), nacks=3, deliveries=1), _job(())]
    records = [serialize(job, 1000 + i) for i, job in enumerate(jobs)]
    for type_ in bus.JOBS_TYPES:
        msg = bus.decode(bus.jobs(header, type_, records))
        assert msg.body == [jobcodec.decode(r)[0] for r in records]
        assert msg.body[0][12] == (a, b)
    good = bus.jobs(header, bus.REPLJOB, records)
    bad = {
        "truncated": good[:-1],
        "count-lies": good[:bus.HEADER.size] + struct.pack("<I", 4) + good[bus.HEADER.size + 4:],
        "extra-bytes": good + b"x",
        "bad-state": bus.jobs(header, bus.REPLJOB, [jobcodec.encode(
            jobs[0].id, 4, 0, 1, 1, 1000, 0, 1, 0, 0, b"q", b"b", ())]),
        "bad-id": bus.jobs(header, bus.REPLJOB, [jobcodec.encode(
            b"X" * 40, 1, 0, 1, 1, 1000, 0, 1, 0, 0, b"q", b"b", ())]),
        "bad-id-byte": bus.jobs(header, bus.REPLJOB, [jobcodec.encode(
            jobs[0].id[:20] + b"\r" + jobs[0].id[21:], 1, 0, 1, 1, 1000, 0, 1, 0, 0,
            b"q", b"b", ())]),
        "bad-node-id": bus.jobs(header, bus.REPLJOB, [jobcodec.encode(
            jobs[0].id, 1, 0, 1, 1, 1000, 0, 1, 0, 0, b"q", b"b", (b"\xff" * 40,))]),
    }
    for name, frame in bad.items():
        frame = bytearray(frame)
        frame[4:8] = struct.pack("<I", len(frame))
        with pytest.raises(bus.BusError):
            bus.decode(bytes(frame))
        with pytest.raises(bus.BusError):
            bus.decode(frame)  # a bytearray is decoded the same way


def _reference_jobids(header, type_, items, mflags):
    """A job-ID frame packed field by field, as the format says (bus.py)."""
    pairs = [(i, 0) if isinstance(i, bytes) else i for i in items]
    payload = struct.pack("<I", len(pairs)) + b"".join(
        struct.pack("<40sI", job_id, aux) for job_id, aux in pairs)
    return struct.pack("<3sBIHBB40sHH", bus.MAGIC, bus.VERSION, 56 + len(payload), type_,
                       mflags, header.flags, header.node_id, header.port,
                       header.bus_port) + payload


def test_jobid_frames_of_one_item_and_with_aux_are_the_packed_frames():
    """A lone item's frame (its header kept by the Header, by type and
    mflags) and a frame whose items have an aux (SETACK, GOTACK: the aux's
    bytes from a table) are byte for byte the frames packed item by item,
    whatever the ID's length and the aux's size."""
    header = bus.Header("e" * 40, 7711, 17711, bus.F_PUBSUB | bus.F_POLICIES)
    job_id = b"D-0123abcd-" + b"A" * 24 + b"-0a0b"
    cases = [[job_id], [(job_id, 0)], [(job_id, 3)], [(job_id, 255)], [(job_id, 256)],
             [(job_id, 2**32 - 1)], [b"D-short"], [(b"D-short", 9)],
             [job_id, (job_id, 3), (job_id, 1000), b"D-short", (b"D-short", 2)]]
    for _round in range(2):  # (the second from the Header's kept heads)
        for type_ in bus.JOBID_TYPES:
            for mflags in (0, bus.NOREPLY, bus.INCR_NACKS | bus.INCR_DELIV):
                for items in cases:
                    frame = bus.jobids(header, type_, items, mflags)
                    assert frame == _reference_jobids(header, type_, items, mflags), items
                    msg = bus.decode(frame)
                    assert (msg.type, msg.mflags, msg.sender) == (type_, mflags, "e" * 40)
                    assert msg.body == [struct.unpack("<40sI", frame[60 + 44 * i:104 + 44 * i])
                                        for i in range(len(items))]
    other = bus.Header("d" * 40, 7712, 17712)
    assert bus.jobids(other, bus.SETACK, [(job_id, 3)]) == _reference_jobids(
        other, bus.SETACK, [(job_id, 3)], 0)
    with pytest.raises(struct.error):
        bus.jobids(header, bus.GOTACK, [(job_id, -1)])


def test_frame_length_reads_the_header_and_names_what_is_wrong():
    header = bus.Header("e" * 40, 7711, 17711)
    frame = bus.jobids(header, bus.DELJOB, [b"D-0123abcd-" + b"A" * 24 + b"-0a0b"])
    for buf in (frame, bytearray(frame), memoryview(frame), b"xy" + frame):
        offset = 2 if buf[:2] == b"xy" else 0
        assert bus.frame_length(buf, offset) == len(frame)
        assert bus.frame_length(buf[:offset + 7], offset) is None
    with pytest.raises(bus.BusError, match="unsupported bus version 7"):
        bus.frame_length(frame[:3] + b"\x07" + frame[4:])
    with pytest.raises(bus.BusError, match="bad magic"):
        bus.frame_length(b"TQX" + frame[3:])
    with pytest.raises(bus.BusError, match="authenticates"):
        bus.frame_length(bus.SEALED_MAGIC + frame[3:])
    with pytest.raises(bus.BusError, match="bad frame length 55"):
        bus.frame_length(frame[:4] + struct.pack("<I", 55) + frame[8:])
    with pytest.raises(bus.FrameTooBig):
        bus.frame_length(frame, 0, len(frame) - 1)
    for bad in (frame[:3] + b"\x07" + frame[4:], b"TQX" + frame[3:]):
        with pytest.raises(bus.BusError, match="bad frame header"):
            bus.decode(bad)


def test_gossip_addresses_are_checked_once_and_bad_ones_still_refused():
    header = bus.Header("e" * 40, 7711, 17711)
    good = bus.gossip(header, bus.PING, [("a" * 40, 0, "127.0.0.1", 7711, 17711, 0)])
    for _ in range(2):
        assert bus.decode(good).body == [("a" * 40, 0, "127.0.0.1", 7711, 17711, 0)]
    for ip in ("127.0.0.300", "not-an-ip", "127.0.0.1 "):
        bad = bus.gossip(header, bus.PING, [("a" * 40, 0, ip, 7711, 17711, 0)])
        for _ in range(2):
            with pytest.raises(bus.BusError):
                bus.decode(bad)


def test_a_lone_records_id_is_checked_byte_by_byte():
    """A REPLJOB of one record checks its ID in place (the others joined):
    every position refuses a byte no job ID holds, and the fixed ones
    ("D-", the dashes) refuse any other; the same IDs in a frame of two
    records are judged the same."""
    header = bus.Header("f" * 40, 7711, 17711)
    good = b"D-0123abcd-" + b"Az09+/" * 4 + b"-0a0b"
    assert len(good) == 40

    def refused(job_id, count):
        records = [jobcodec.encode(job_id, 1, 0, 1, 1, 1000, 0, 1, 0, 0, b"q", b"b", ())]
        if count == 2:
            records.append(jobcodec.encode(good, 1, 0, 1, 1, 1000, 0, 1, 0, 0, b"q", b"b",
                                           ()))
        try:
            bus.decode(bus.jobs(header, bus.REPLJOB, records))
        except bus.BusError:
            return True
        return False
    for count in (1, 2):
        assert not refused(good, count)
        for pos in range(40):
            for byte in (b"\x00", b"\r", b" ", b"!", b"\x7f", b"\x80", b"\xff", b"_"):
                assert refused(good[:pos] + byte + good[pos + 1:], count), (pos, byte)
        for pos in (0, 1, 10, 35):
            assert refused(good[:pos] + b"a" + good[pos + 1:], count), pos


def test_frame_headers_are_the_struct_layout():
    """jobs() and jobids() build the header from parts kept per type and
    mflags (bus._counted): byte for byte the header packed field by field,
    for every type, mflags and count, on two headers made apart."""
    counted = struct.Struct("<3sBIHBB40sHHI")
    record = serialize(_job(("a" * 40,)), 1)
    ids = [b"D-%08x-%s-0001" % (i, b"E" * 24) for i in range(3)]
    for header in (bus.Header("f" * 40, 7711, 17711), bus.Header("e" * 40, 1, 65535, 3)):
        for _ in range(2):  # made, then from what the header keeps
            for mflags in (0, bus.NOREPLY, 4):
                for records in ([record], [record, record + b""], []):
                    size = len(record) * len(records)
                    head = counted.pack(bus.MAGIC, bus.VERSION, bus.HEADER_SIZE + 4 + size,
                                        bus.REPLJOB, mflags, header.flags, header.node_id,
                                        header.port, header.bus_port, len(records))
                    assert bus.jobs(header, bus.REPLJOB, records, mflags) == head + b"".join(records)
                for type_ in (bus.GOTJOB, bus.DELJOB, bus.SETACK):
                    frame = bus.jobids(header, type_, ids, mflags)
                    head = counted.pack(bus.MAGIC, bus.VERSION, bus.HEADER_SIZE + 4 + 3 * 44,
                                        type_, mflags, header.flags, header.node_id,
                                        header.port, header.bus_port, 3)
                    assert frame == head + b"".join(struct.pack("<40sI", i, 0) for i in ids)
                    one = bus.jobids(header, type_, [(ids[0], 5)], mflags)
                    assert one == counted.pack(bus.MAGIC, bus.VERSION, bus.HEADER_SIZE + 4 + 44,
                                               type_, mflags, header.flags, header.node_id,
                                               header.port, header.bus_port, 1) + \
                        struct.pack("<40sI", ids[0], 5)


def test_lone_item_frames_past_the_kept_heads_are_the_packed_frames():
    """The Header keeps lone-item heads for types below 32 and mflags below
    8; any other type or mflags (a u8 on the wire) is framed all the same,
    and a kept head is never taken for another type or mflags."""
    header = bus.Header("e" * 40, 7711, 17711, bus.F_PUBSUB)
    job_id = b"D-0123abcd-" + b"A" * 24 + b"-0a0b"
    for _round in range(2):
        for type_ in (bus.GOTJOB, bus.SETACK, 31, 32, 255, 256 + bus.GOTJOB):
            for mflags in (0, 1, 7, 8, 9, 32, 255):
                for items in ([job_id], [(job_id, 5)]):
                    assert bus.jobids(header, type_, items, mflags) == _reference_jobids(
                        header, type_, items, mflags), (type_, mflags)


def test_frames_from_peers_in_turn_name_each_sender():
    """read_header keeps the last two senders: frames alternating between
    two peers, then a third, each read as its own sender; a bad sender ID
    is refused whatever came before."""
    job_id = b"D-0123abcd-" + b"A" * 24 + b"-0a0b"
    peers = ["a" * 40, "b" * 40, "c" * 40]
    frames = {p: bus.jobids(bus.Header(p, 7711, 17711), bus.GOTJOB, [job_id]) for p in peers}
    for sender in peers[:2] * 3 + [peers[2], peers[0], peers[2], peers[1], peers[1]]:
        assert bus.read_header(frames[sender]) == (bus.GOTJOB, 0, sender)
    bad = frames[peers[0]][:12] + b"A" * 40 + frames[peers[0]][52:]
    with pytest.raises(bus.BusError):
        bus.read_header(bad)
    assert bus.read_header(frames[peers[1]])[2] == peers[1]
