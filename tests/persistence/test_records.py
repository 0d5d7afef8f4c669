"""AOF records (protocol/aof.py) and their replay into a node core
(server/aof/load.py), without processes: a fake clock, real files."""

import os

import hiredis
import pytest

from trisque.protocol import aof
from trisque.core.jobs.job import ACTIVE, QUEUED, serialize
from trisque.server.aof import load as aof_load
from trisque.server.aof.job_record import loadjob_record
from trisque.server.aof.rewrite import job_snapshot

from tests.cluster.test_codec_paths import codec_record
from tests.unit.conftest import Core


def records(*argvs):
    return b"".join(aof.command(*argv) for argv in argvs)


def parse_all(data):
    out, pos = [], 0
    while pos < len(data):
        argv, pos = aof.parse(data, pos, len(data))
        if argv[0] == aof.LOADJOB:
            start, stop = argv[1]
            argv = [aof.LOADJOB, data[start:stop]]
        out.append(argv)
    return out


# ------------------------------------------------------------- framing

def test_records_are_plain_resp_commands():
    data = aof.loadjob(b"\x00\r\n\xff payload") + aof.deljob(b"D-" + b"x" * 38)
    data += aof.command("SET", b"k", "v")
    reader = hiredis.Reader()
    reader.feed(data)
    assert reader.gets() == [b"LOADJOB", b"\x00\r\n\xff payload"]
    assert reader.gets() == [b"DELJOB", b"D-" + b"x" * 38]
    assert reader.gets() == [b"SET", b"k", b"v"]
    assert reader.gets() is False
    assert parse_all(data) == [[b"LOADJOB", b"\x00\r\n\xff payload"],
                               [b"DELJOB", b"D-" + b"x" * 38],
                               [b"SET", b"k", b"v"]]


def test_every_cut_of_a_record_is_truncation_not_corruption():
    data = records(["DELJOB", "a" * 40]) + aof.loadjob(b"p" * 50)
    first_end = len(aof.command("DELJOB", "a" * 40))
    for cut in range(first_end + 1, len(data)):
        assert aof.parse(data, 0, cut)[1] == first_end
        with pytest.raises(aof.Truncated) as info:
            aof.parse(data, first_end, cut)
        assert info.value.offset == first_end


@pytest.mark.parametrize("bad, offset", [
    (b"+OK\r\n", 0),
    (b"*0\r\n", 0),
    (b"*-1\r\n", 0),
    (b"*1\r\n:5\r\n", 4),
    (b"*1\r\n$x\r\nab\r\n", 4),
    (b"*1\r\n$2\r\nabcd\r\n", 10),
    (b"*2\r\n$7\r\nLOADJOB\r\n$3\r\nabcXY", 24),
    (b"*" + b"9" * 40 + b"\r\n", 1),
    (b"\x00" * 64, 0),
])
def test_bad_bytes_are_format_errors_with_their_offset(bad, offset):
    with pytest.raises(aof.FormatError) as info:
        aof.parse(bad, 0, len(bad))
    assert info.value.offset == offset


# -------------------------------------------------------------- replay

def write(tmp_path, data):
    path = tmp_path / "disque.aof"
    path.write_bytes(data)
    return str(path)


def load(core, path, truncate_ok=True, enqueue_once=False):
    gen = aof_load.load(core.node, path, truncate_ok, enqueue_once)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


def snapshot(core):
    return b"".join(job_snapshot(core.node))


def test_jobs_come_back_active_and_requeue_after_retry(tmp_path):
    before = Core()
    ids = [before("ADDJOB", "q", "b%d" % i, 0, "RETRY", 5) for i in range(3)]
    zero = before("ADDJOB", "q", "once", 0, "RETRY", 0)
    assert before("GETJOB", "FROM", "q")[0][1] == ids[0]  # delivered: active
    path = write(tmp_path, snapshot(before))

    after = Core()
    options = load(after, path)
    assert options.jobs == 4
    for job_id in ids + [zero]:
        assert after.show(job_id)["state"] == b"active"
    assert after("QLEN", "q") == 0
    after.advance(4.7)  # RETRY 5 +- 0.25 s, counted from the load
    assert after("QLEN", "q") == 0
    after.advance(0.6)
    assert after("QLEN", "q") == 3  # the RETRY 0 job is never requeued
    assert after.show(zero)["state"] == b"active"
    after.node.check_invariants()


def test_enqueue_once_restores_queued_jobs_without_counting_deliveries(tmp_path):
    before = Core()
    queued = [before("ADDJOB", "q", "b%d" % i, 0) for i in range(3)]
    zero = before("ADDJOB", "q", "z", 0, "RETRY", 0)
    delivered = before("ADDJOB", "other", "d", 0)
    before("GETJOB", "FROM", "other")
    path = write(tmp_path, snapshot(before))

    after = Core()
    options = load(after, path, enqueue_once=True)
    assert options.enqueued == 4
    assert [j[1] for j in after("QPEEK", "q", 10)] == queued + [zero]
    assert after.show(delivered)["state"] == b"active"
    for job_id in queued + [zero]:
        assert after.show(job_id)["additional-deliveries"] == 0
    assert after("GETJOB", "COUNT", 10, "FROM", "q")[-1][1] == zero
    after.advance(400)
    assert after.show(zero)["state"] == b"active"  # at most once: not again


def test_expired_jobs_are_dropped_and_deljob_forgets(tmp_path):
    before = Core()
    keep = before("ADDJOB", "q", "keep", 0, "TTL", 100)
    short = before("ADDJOB", "q", "short", 0, "TTL", 2)
    gone = before("ADDJOB", "q", "gone", 0)
    data = snapshot(before) + aof.deljob(gone)
    path = write(tmp_path, data)

    after = Core()
    after.now += 3
    options = load(after, path)
    assert (options.jobs, options.expired, options.deleted) == (2, 1, 1)
    assert after.show(keep) is not None
    assert after.show(short) is None and after.show(gone) is None


def test_a_duplicate_loadjob_keeps_the_first_copy(tmp_path):
    before = Core()
    job_id = before("ADDJOB", "q", "x", 0)
    job = before.job(job_id)
    first = aof.loadjob(serialize(job, job.etime_ms))
    job.nacks = 7
    path = write(tmp_path, first + aof.loadjob(serialize(job, job.etime_ms)))
    after = Core()
    assert load(after, path).jobs == 1
    assert after.show(job_id)["nacks"] == 0


def test_truncated_tail_is_cut_off_or_refused(tmp_path):
    before = Core()
    for i in range(3):
        before("ADDJOB", "q", "b%d" % i, 0)
    data = snapshot(before)
    last = data.rindex(b"*2\r\n$7\r\nLOADJOB")
    path = write(tmp_path, data[:-7])
    with pytest.raises(aof_load.LoadError) as info:
        load(Core(), path, truncate_ok=False)
    assert f"from offset {last}" in str(info.value)
    assert os.path.getsize(path) == len(data) - 7
    after = Core()
    assert load(after, path, truncate_ok=True).jobs == 2
    assert os.path.getsize(path) == last


def test_corrupt_records_are_refused_with_offset_and_hint(tmp_path):
    before = Core()
    for i in range(3):
        before("ADDJOB", "q", "b%d" % i, 0)
    data = bytearray(snapshot(before))
    second = data.index(b"*2\r\n$7\r\nLOADJOB", 1)
    data[second] = ord("#")
    path = write(tmp_path, bytes(data))
    with pytest.raises(aof_load.LoadError) as info:
        load(Core(), path)
    message = str(info.value)
    assert f"at offset {second}" in message and f"truncate -s {second}" in message

    # A LOADJOB whose payload does not decode is corrupt too.
    bad = aof.loadjob(b"\x01" * 20)
    path = write(tmp_path, bytes(data[:second]) + bad)
    with pytest.raises(aof_load.LoadError) as info:
        load(Core(), path)
    assert "corrupted LOADJOB data" in str(info.value)

    path = write(tmp_path, aof.command("FLUSHEVERYTHING"))
    with pytest.raises(aof_load.LoadError) as info:
        load(Core(), path)
    assert "Unknown command 'FLUSHEVERYTHING'" in str(info.value)


def test_snapshot_skips_acked_and_gone_jobs():
    core = Core()
    ids = [core("ADDJOB", "q", "b%d" % i, 0) for i in range(4)]
    chunks = job_snapshot(core.node)  # taken now, serialized lazily
    core("ACKJOB", ids[0])
    core("DELJOB", ids[1])
    core("GETJOB", "FROM", "q")  # ids[2] becomes active
    data = b"".join(chunks)
    loaded = [argv[1] for argv in parse_all(data)]
    assert len(loaded) == 2
    states = sorted(p[40] for p in loaded)
    assert states == [ACTIVE, QUEUED]


def test_fast_record_matches_the_codec():
    core = Core()
    ids = [core("ADDJOB", "q", body, 0, *opts) for body, opts in (
        ("", ()), ("x" * 1000, ("RETRY", 0)), ("\r\n", ("DELAY", 5, "TTL", 60)))]
    for job_id in ids:
        job = core.job(job_id)
        for nodes in (job.nodes_delivered, ("b" * 40, "c" * 40),
                      (b"d" * 40, "e" * 40), ()):
            job.nodes_delivered = nodes
            job.flags |= 8  # DUMMY_ACK never goes to the file
            job.nacks, job.deliveries = 3, 4
            assert loadjob_record(job) == aof.loadjob(codec_record(job, job.etime_ms))


def test_fast_decode_matches_the_codec():
    from trisque.core.jobs.job import deserialize
    core = Core()
    job = core.job(core("ADDJOB", "q", "x\r\ny", 0, "DELAY", 3))
    for nodes in ((), ("b" * 40,), ("b" * 40, "c" * 40, "d" * 40)):
        job.nodes_delivered = nodes
        data = b"pad" + serialize(job, 12345) + b"tail"
        fast = aof_load.decode_job(data, 3, len(data) - 4)
        slow, end = deserialize(data, 3)
        assert end == len(data) - 4
        for field in ("id", "queue", "body", "state", "flags", "repl", "ctime",
                      "etime_ms", "delay_s", "retry_s", "nacks", "deliveries",
                      "nodes_delivered"):
            assert getattr(fast, field) == getattr(slow, field), field
        with pytest.raises(ValueError):
            aof_load.decode_job(data, 3, len(data) - 3)
