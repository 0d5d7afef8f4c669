"""Fuzzing the AOF loader (server/aof/load.py) and the checker
(trisque-server --check-aof [--fix], server/aof/check.py).

A file cut anywhere loads the records before the cut, or is refused with
that offset; a file with bytes changed, inserted or deleted loads (a change
inside a body cannot be told from data: there is no checksum) or is
refused with LoadError and an offset, never anything else; and --fix cuts
a refused file back to a prefix that loads."""

import os
import subprocess
import sys

from hypothesis import given, strategies as st

from tests.fuzz_settings import FUZZ
from tests.harness import server_command
from tests.unit.conftest import Core
from trisque.protocol import aof
from trisque.server.aof import check as aof_check
from trisque.server.aof import keys as aof_keys  # noqa: F401 (keyspace records)
from trisque.server.aof import load as aof_load
from trisque.server.aof.rewrite import job_snapshot


def sample_aof():
    core = Core()
    ids = [core("ADDJOB", "q%d" % (i % 2), "body-%d" % i, 0, "RETRY", 5) for i in range(4)]
    records = [b"".join(job_snapshot(core.node))]
    records.append(aof.deljob(ids[0]))
    records.append(aof.command("SELECT", "0"))
    records.append(aof.command("SET", "k", "v"))
    records.append(aof.command("RPUSH", "l", "a", "b", "c"))
    records.append(aof.command("MULTI") + aof.command("INCR", "n") + aof.command("HSET", "h", "f", "1")
                   + aof.command("EXEC"))
    records.append(aof.command("PEXPIREAT", "k", "99999999999999"))
    return b"".join(records)


SAMPLE = sample_aof()


def boundaries(data):
    """Offsets where a record starts (a MULTI block counts as one)."""
    out, pos, depth = [0], 0, 0
    while pos < len(data):
        argv, pos = aof.parse(data, pos, len(data))
        name = argv[0] if isinstance(argv[0], bytes) else b""
        depth += name.upper() == b"MULTI"
        depth -= name.upper() == b"EXEC"
        if not depth:
            out.append(pos)
    return out


BOUNDARIES = boundaries(SAMPLE)


def load(path, truncate_ok):
    core = Core()
    gen = aof_load.load(core.node, path, truncate_ok, False)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return core, stop.value


def keys_and_jobs(core):
    return (len(core.node.jobs), sorted(core.node.keyspace.dbs[0].keys))


@FUZZ
@given(st.integers(min_value=0, max_value=len(SAMPLE)))
def test_a_cut_loads_the_records_before_it_or_is_refused_at_them(tmp_path_factory, cut):
    path = str(tmp_path_factory.mktemp("aof") / "disque.aof")
    with open(path, "wb") as f:
        f.write(SAMPLE[:cut])
    good = max(b for b in BOUNDARIES if b <= cut)
    if cut != good:
        try:
            load(path, truncate_ok=False)
            raise AssertionError("a torn file loaded")
        except aof_load.LoadError as exc:
            assert exc.offset == good and f"from offset {good}" in str(exc)
    core, _ = load(path, truncate_ok=True)
    assert os.path.getsize(path) == good
    with open(path, "wb") as f:
        f.write(SAMPLE[:good])
    assert keys_and_jobs(load(path, truncate_ok=False)[0]) == keys_and_jobs(core)


_TOKENS = [b"*", b"$", b"\r\n", b"-1", b"0", b"9", b"99999999999", b"LOADJOB",
           b"DELJOB", b"MULTI", b"EXEC", b"SET", b"\x00", b"*1\r\n$4\r\nEXEC\r\n"]


@FUZZ
@given(st.lists(st.tuples(st.integers(min_value=0), st.sampled_from(["set", "insert", "delete"]),
                          st.sampled_from(_TOKENS), st.integers(0, 255)), min_size=1, max_size=4))
def test_corruption_is_refused_with_its_offset_and_fixed(tmp_path_factory, mutations):
    data = bytearray(SAMPLE)
    for where, how, token, value in mutations:
        pos = where % (len(data) + 1)
        if how == "set" and pos < len(data):
            data[pos] = value
        elif how == "insert":
            data[pos:pos] = token
        else:
            del data[pos:pos + len(token)]
    path = str(tmp_path_factory.mktemp("aof") / "disque.aof")
    with open(path, "wb") as f:
        f.write(data)
    error = aof_check.check(path)  # the loader, truncation refused
    if error is None:
        return
    assert error.offset is not None and 0 <= error.offset <= len(data), error
    assert "offset" in str(error)
    cut = aof_check.fix(path, error.offset)
    assert aof_check.check(path) is None  # the prefix loads
    with open(path, "rb") as f, open(cut, "rb") as g:
        assert f.read() + g.read() == bytes(data)  # nothing lost


def test_check_aof_command_line(tmp_path):
    path = tmp_path / "disque.aof"
    path.write_bytes(SAMPLE + b"*2\r\n$3\r\nSET\r\n")
    run = [*server_command(), "--check-aof"]
    done = subprocess.run(run + [str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and f"ok_up_to={len(SAMPLE)}" in done.stdout, done
    done = subprocess.run(run + ["--fix", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "Successfully truncated AOF" in done.stdout, done
    assert path.read_bytes() == SAMPLE
    done = subprocess.run(run + [str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "AOF is valid" in done.stdout
    assert sys.executable  # (server_command runs this interpreter)
