"""maxmemory on a lone node, with tiny limits: above 75% ADDJOB gets
Disque's -NOREPL (no local copy may be kept, and there is nobody to hand
the job to); at 100% -OOM for commands that add data."""

import platform

import pytest
import redis

from tests.harness import wait_for
from tests.server.util import Raw

NOREPL_OOM = ("NOREPL Not enough reachable nodes for the requested replication "
              "level, since I'm unable to hold a copy of the message for the "
              "following reason: I'm out of memory")
OOM = "OOM command not allowed when used memory > 'maxmemory'."


def used(raw):
    info = raw.call("INFO", "memory").decode()
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    return int(fields["used_memory"]), int(fields["memory_warning_level"])


def test_levels(c, shared):
    with Raw(shared.port) as raw:
        base, level = used(raw)
        assert level == 0
        try:
            # 70%: fine
            raw.call("CONFIG", "SET", "maxmemory", int(base / 0.70))
            job_id = raw.call("ADDJOB", "q", "x", 0)
            assert job_id.startswith(b"D-")
            # 80%: level 1, no local copy
            now, _ = used(raw)
            raw.call("CONFIG", "SET", "maxmemory", int(now / 0.80))
            assert used(raw)[1] == 1
            assert str(raw.call("ADDJOB", "q", "x", 0)) == NOREPL_OOM
            # 97%: level 2, same answer
            raw.call("CONFIG", "SET", "maxmemory", int(now / 0.97))
            assert used(raw)[1] == 2
            assert str(raw.call("ADDJOB", "q", "x", 0)) == NOREPL_OOM
            # 100%: OOM for commands that may add memory
            raw.call("CONFIG", "SET", "maxmemory", now)
            assert used(raw)[1] == 3
            assert str(raw.call("ADDJOB", "q", "x", 0)) == OOM
            assert str(raw.call("ENQUEUE", job_id)) == OOM
            assert str(raw.call("NACK", job_id)) == OOM
            # reading and freeing still work
            assert raw.call("QLEN", "q") == 1
            assert raw.call("SHOW", job_id)[5] == b"queued"
            assert raw.call("GETJOB", "FROM", "q")[0][1] == job_id
            assert raw.call("ACKJOB", job_id) == 1
            assert raw.call("PING") == b"PONG"
            assert raw.call("INFO", "jobs") == b"# Jobs\r\nregistered_jobs:0\r\n"
            assert used(raw)[0] < now
        finally:
            raw.call("CONFIG", "SET", "maxmemory", "1gb")
        assert raw.call("ADDJOB", "q", "x", 0).startswith(b"D-")


def test_one_byte_maxmemory(c):
    c.config_set("maxmemory", 1)
    try:
        # (redis-py strips the OOM code into its exception class)
        with pytest.raises(redis.exceptions.OutOfMemoryError,
                           match="command not allowed when used memory"):
            c.execute_command("ADDJOB", "q", "x", 0)
        assert c.info("memory")["memory_warning_level"] == 3
    finally:
        c.config_set("maxmemory", "1gb")


def test_filling_up_to_the_limit(c, shared):
    """Jobs are accepted until used_memory passes 75% of maxmemory; from
    then on each ADDJOB is refused and nothing is stored for it."""
    base = c.info("memory")["used_memory"]
    body = "b" * 1000
    limit = int((base + 200_000) / 0.75)  # level 1 after ~200 KB more
    c.config_set("maxmemory", limit)
    try:
        accepted = refused = 0
        for _ in range(300):
            try:
                c.execute_command("ADDJOB", "fill", body, 0)
                accepted += 1
            except redis.ResponseError as exc:
                assert str(exc).startswith("NOREPL") or str(exc).startswith("OOM")
                refused += 1
        assert accepted > 10 and refused > 0
        assert c.execute_command("QLEN", "fill") == accepted
        mem = c.info("memory")
        assert mem["used_memory"] >= base + accepted * 1000
        assert mem["used_memory"] <= limit * 0.75 + 5000
    finally:
        c.config_set("maxmemory", "1gb")


def test_maxmemory_zero_is_unlimited(c):
    c.config_set("maxmemory", 0)
    try:
        assert c.execute_command("ADDJOB", "q", "x", 0).startswith(b"D-")
        assert c.info("memory")["memory_warning_level"] == 0
    finally:
        c.config_set("maxmemory", "1gb")


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_a_drained_burst_of_large_jobs_gives_its_memory_back(make_server):
    """120 MB of 200 KB bodies (under heap.py's 1 MiB mmap threshold, so in
    the heap), each followed by a 2 KB job that stays queued and pins the
    heap's top: once the large ones are acked, the node's RSS falls back
    (glibc alone keeps those pages) and the small jobs are intact."""
    srv = make_server()
    c = srv.client()

    def rss():
        return c.info("memory")["used_memory_rss"]
    start = rss()
    body = b"x" * 200_000
    pipe = c.pipeline(transaction=False)
    for i in range(600):
        pipe.execute_command("ADDJOB", "large", body, 0)
        pipe.execute_command("ADDJOB", "small", f"{i:2000}", 0)  # (malloc's, not pymalloc's)
    large = pipe.execute()[::2]
    assert rss() > start + 100 * 2**20
    pipe = c.pipeline(transaction=False)
    for job_id in large:
        pipe.execute_command("ACKJOB", job_id)
    assert pipe.execute() == [1] * 600
    wait_for(lambda: rss() < start + 40 * 2**20, 10, message="RSS back near the start")
    assert c.execute_command("QLEN", "small") == 600
    assert c.execute_command("QLEN", "large") == 0
