"""A real node whose wall clock is set back a minute while it runs (an NTP
step, an operator, a VM resumed): libfaketime, preloaded into the node
alone, shifts its CLOCK_REALTIME by what a file says; its monotonic clock
(trio's) goes on.  The node's waits keep what was left of them
(JobLifecycle.watch_clock) and its cron keeps its pace (server/main.py's
timer loop).  Before, a delivered RETRY 1 job came back after 61 s and
the cron stopped for the minute."""

import os
import tempfile
import threading
import time

import libfaketime
import pytest

from tests.harness import Server, wait_for

SET_BACK_S = 60


class Clock:
    """The node's clock offset, in a file libfaketime reads at each
    reading (FAKETIME_NO_CACHE)."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "faketime")
        self.set(0)

    def set(self, offset_s):
        part = self.path + ".new"
        with open(part, "w") as f:
            f.write(f"{offset_s:+d}\n")
        os.replace(part, self.path)  # never read half-written


@pytest.fixture
def skewed():
    directory = tempfile.mkdtemp(prefix="trisque-clock-")
    clock = Clock(directory)
    ok, env = libfaketime.get_reload_information()
    assert ok
    env = dict(env, FAKETIME_TIMESTAMP_FILE=clock.path, FAKETIME_NO_CACHE="1",
               DONT_FAKE_MONOTONIC="1")
    server = Server(directory=directory, env=env).start()
    client = server.client()
    yield server, client, clock
    client.close()
    server.cleanup()


def _set_back(client, clock):
    before = client.time()[0]
    clock.set(-SET_BACK_S)
    now = client.time()[0]
    assert before - SET_BACK_S - 1 <= now <= before - SET_BACK_S + 1, (before, now)


def test_a_delivered_job_comes_back_after_its_retry(skewed):
    _server, client, clock = skewed
    job_id = client.execute_command("ADDJOB", "q", "body", 0, "RETRY", 1)
    assert client.execute_command("GETJOB", "NOHANG", "FROM", "q")[0][1] == job_id
    _set_back(client, clock)
    started = time.monotonic()

    def redelivered():
        reply = client.execute_command("GETJOB", "TIMEOUT", 500, "FROM", "q")
        return reply and reply[0][1] == job_id
    wait_for(redelivered, timeout=15, message="the job queued again")
    assert time.monotonic() - started < 15
    assert client.execute_command("ACKJOB", job_id) == 1


def test_a_blocked_getjob_times_out(skewed):
    server, client, clock = skewed
    consumer = server.client()
    sent = time.monotonic()
    reply = {}  # (redis-py blocks: the call waits in a thread, the step comes from here)
    thread = threading.Thread(target=lambda: reply.setdefault(
        "r", consumer.execute_command("GETJOB", "TIMEOUT", 2000, "FROM", "empty")))
    thread.start()
    wait_for(lambda: client.info("clients")["blocked_clients"] == 1,
             message="the GETJOB blocked")
    _set_back(client, clock)
    thread.join(15)
    assert not thread.is_alive(), "GETJOB TIMEOUT 2000 still blocked 15 s on"
    assert reply == {"r": None}
    assert time.monotonic() - sent < 15
    consumer.close()


def test_the_cron_keeps_its_pace(skewed):
    """Keys past their TTL are removed by the cron (active expiry), not
    only when read: DBSIZE counts a key until then, as in Redis."""
    _server, client, clock = skewed
    _set_back(client, clock)
    client.set("k", "v", px=100)
    wait_for(lambda: client.dbsize() == 0, timeout=10, message="the key expired by the cron")
    assert client.info("stats")["expired_keys"] == 1
