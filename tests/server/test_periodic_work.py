"""The node's periodic work runs in the client loop's turns
(shell/timers.py): the heap check gives pages back after a drain, and a
blocked GETJOB's timeout and the cron's key expiry still come, on a live
node."""

import platform
import time

import pytest

from tests.harness import Server, wait_for

BODY = b"x" * (256 * 1024)  # under glibc's mmap threshold as tuned: in the heap
JOBS = 200  # ~50 MB: past heap.GIVE_BACK_BYTES once deleted


@pytest.fixture(scope="module")
def node():
    server = Server().start()
    yield server
    server.cleanup()


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_the_heap_is_given_back_after_a_drain(node):
    c = node.client()
    ids = [c.execute_command("ADDJOB", "heapq", BODY, 0) for _ in range(JOBS)]
    high = c.info("memory")["used_memory"]
    # The check looks every 100 ms: past its next tick, the turn serving
    # the PING runs it first, and it has seen the high point.
    time.sleep(0.3)
    c.ping()
    for start in range(0, JOBS, 50):
        c.execute_command("DELJOB", *ids[start:start + 50])
    assert c.info("memory")["used_memory"] < high - 32 * 1024 * 1024
    wait_for(lambda: "Freed heap pages given back" in node.log(), 10,
             message="the heap check after the drain")


def test_a_blocked_getjob_times_out(node):
    c = node.client()
    assert c.execute_command("GETJOB", "TIMEOUT", 50, "FROM", "nothing-here") is None


def test_the_cron_expires_keys_nobody_reads(node):
    c = node.client()
    c.set("short", "v", px=50)
    c.set("long", "v")
    wait_for(lambda: c.dbsize() == 1, 10, message="the cron's active expiry")
    assert c.exists("long") == 1
