"""Periodic jobs (docs/schedules.md) on one real node: errors, SHOW, and
the schedule with its last tick back after kill -9 and after an AOF
rewrite; a deleted schedule stays deleted."""

import re
import time

import pytest
import redis

from tests.harness import wait_for
from tests.persistence.util import aof_records


def shown(c, name):
    reply = c.execute_command("SCHEDULE", "SHOW", name)
    return None if reply is None else dict(zip(reply[::2], reply[1::2]))


@pytest.mark.parametrize("args, error", [
    (["ADD", "s", "61 * * * *", "q", "b"], "invalid cron expression '61 * * * *': Bad minute"),
    (["ADD", "s", "* * *", "q", "b"], "Wrong number of fields"),
    (["ADD", "s", "* * * * *", "q", "b", "ASYNC"], "unsupported SCHEDULE option 'ASYNC'"),
    (["ADD", "s", "* * * * *", "q", "b", "REPLICATE", "0"], "REPLICATE must be between"),
    (["ADD", "s", "* * * * *", "q", "b", "PRIORITY", "10"], "PRIORITY must be between"),
    (["ADD", "s", "* * * * *", "q", "b", "TTL"], "syntax error"),
    (["ADD", "s", "* * * * *", "q", "b", "DELAY", "100", "TTL", "50"], "DELAY is greater"),
    (["ADD", "", "* * * * *", "q", "b"], "schedule name must be"),
    (["FROB"], "syntax error"),
])
def test_bad_input_is_refused_and_nothing_is_stored(make_server, args, error):
    server = make_server(config="appendonly yes\n")
    c = server.client()
    with pytest.raises(redis.ResponseError, match=re.escape(error)):
        c.execute_command("SCHEDULE", *args)
    assert c.execute_command("SCHEDULE", "LIST") == []
    assert c.ping()
    assert not [r for r in aof_records(server) if r[:1] == [b"SCHEDULE"]]


def test_schedule_and_its_last_tick_survive_kill9_and_rewrite(make_server):
    server = make_server(config="appendonly yes\nappendfsync always\n")
    c = server.client()
    assert c.execute_command("SCHEDULE", "ADD", "beat", "* * * * * *", "q", "b",
                             "RETRY", 7, "PRIORITY", 8) == b"OK"
    assert c.execute_command("SCHEDULE", "ADD", "gone", "0 0 1 1 *", "q", "b") == b"OK"
    assert c.execute_command("SCHEDULE", "DEL", "gone") == 1
    assert c.execute_command("SCHEDULE", "DEL", "gone") == 0
    wait_for(lambda: c.execute_command("QLEN", "q") >= 2, 5, message="two ticks")
    info = shown(c, "beat")
    assert info[b"cron"] == b"* * * * * *" and info[b"timezone"] == b"UTC"
    assert info[b"options"] == b"RETRY 7 PRIORITY 8"
    assert info[b"next-tick"] - info[b"last-tick"] == 1000
    job = c.execute_command("SHOW", info[b"last-job"])
    job = dict(zip(job[::2], job[1::2]))
    assert job[b"retry"] == 7 and job[b"priority"] == 8 and job[b"body"] == b"b"
    server.kill()
    server.start()
    c = server.client()
    assert c.execute_command("SCHEDULE", "LIST") == [b"beat"]
    back = shown(c, "beat")
    assert back[b"last-tick"] >= info[b"last-tick"]
    assert back[b"created"] == info[b"created"]
    wait_for(lambda: shown(c, "beat")[b"last-tick"] > back[b"last-tick"], 10,
             message="fires again after the restart")
    c.execute_command("BGREWRITEAOF")
    wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0
             and c.info("persistence")["aof_rewrite_scheduled"] == 0, 10, message="rewritten")
    records = [r for r in aof_records(server) if r[:1] == [b"SCHEDULE"]]
    assert {(r[1], r[2]) for r in records} >= {(b"beat", b"STORE"), (b"beat", b"FIRED"),
                                              (b"gone", b"STORE")}
    before = shown(c, "beat")[b"last-tick"]
    server.stop()
    server.start()
    c = server.client()
    assert c.execute_command("SCHEDULE", "LIST") == [b"beat"], "the deleted one stays deleted"
    assert shown(c, "beat")[b"last-tick"] >= before
    assert c.execute_command("SCHEDULE", "DEL", "beat") == 1
    time.sleep(1.5)
    count = c.execute_command("QLEN", "q")
    time.sleep(1.5)
    assert c.execute_command("QLEN", "q") == count, "DEL stops it"
    assert int(c.info("stats")["schedules"]) == 0


def test_used_memory_counts_schedules(make_server):
    c = make_server().client()
    before = int(c.info("memory")["used_memory"])
    c.execute_command("SCHEDULE", "ADD", "big", "0 0 1 1 *", "q", "x" * 100_000)
    after = int(c.info("memory")["used_memory"])
    assert after - before >= 100_000


def test_a_tombstone_is_dropped_and_the_drop_is_logged(make_server):
    """A node alone drops a deleted schedule's tombstone once
    schedule-tombstone-ms has passed; the AOF says so (DROP), so neither a
    restart nor a rewrite brings it back, and its memory is given back."""
    server = make_server(config="appendonly yes\nappendfsync always\n"
                                "schedule-tombstone-ms 300\n")
    c = server.client()
    before = int(c.info("memory")["used_memory"])
    assert c.execute_command("SCHEDULE", "ADD", "gone", "0 0 1 1 *", "q", "b") == b"OK"
    assert c.execute_command("SCHEDULE", "DEL", "gone") == 1
    wait_for(lambda: c.info("stats")["schedule_tombstones_dropped"] == 1, 5,
             message="the tombstone dropped")
    assert c.info("stats")["schedule_tombstones"] == 0
    assert int(c.info("memory")["used_memory"]) == before
    records = [r for r in aof_records(server) if r[:1] == [b"SCHEDULE"]]
    assert [r[2] for r in records] == [b"STORE", b"STORE", b"DROP"]
    assert records[2][3:] == records[1][3:5]  # the tombstone's version and origin
    server.kill()
    server.start()
    c = server.client()
    assert c.info("stats")["schedule_tombstones"] == 0
    assert c.execute_command("SCHEDULE", "LIST") == []
    c.execute_command("BGREWRITEAOF")
    wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0
             and c.info("persistence")["aof_rewrite_scheduled"] == 0, 10, message="rewritten")
    assert not [r for r in aof_records(server) if r[:1] == [b"SCHEDULE"]]
