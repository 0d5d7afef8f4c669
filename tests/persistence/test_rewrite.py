"""BGREWRITEAOF, automatic rewrites, switching the AOF on and off at
runtime, fsync policies and INFO persistence, with real processes."""

import os

import redis

from tests.harness import wait_for
from tests.persistence.util import (all_job_ids, aof_path, aof_records,
                                    persistence, wait_rewrite_done)


def add_and_ack(c, total, keep, body="b"):
    pipe = c.pipeline(transaction=False)
    for i in range(total):
        pipe.execute_command("ADDJOB", "q", f"{body}{i}", 0)
    ids = pipe.execute()
    pipe = c.pipeline(transaction=False)
    for job_id in ids[keep:]:
        pipe.execute_command("ACKJOB", job_id)
    pipe.execute()
    return ids[:keep]


def test_bgrewriteaof_compacts_to_live_jobs(make_server):
    server = make_server(config="appendonly yes\n")
    c = server.client()
    kept = add_and_ack(c, 2000, 100)
    assert len(aof_records(server)) == 3900
    size = persistence(c)["aof_current_size"]
    assert c.execute_command("BGREWRITEAOF")
    info = wait_rewrite_done(c)
    assert info["aof_last_bgrewrite_status"] == "ok"
    assert info["aof_current_size"] == info["aof_base_size"] < size / 10
    assert info["aof_current_size"] == os.path.getsize(aof_path(server))
    records = aof_records(server)
    assert [r[0] for r in records] == [b"LOADJOB"] * 100
    assert {r[1][:40] for r in records} == set(kept)
    assert not [n for n in os.listdir(server.dir) if n.startswith("temp-")]
    # Appends go to the new file.
    new = c.execute_command("ADDJOB", "q", "new", 0)
    assert aof_records(server)[-1][1][:40] == new
    server.kill()
    server.start()
    assert all_job_ids(server.client()) == set(kept + [new])


def test_bgrewriteaof_twice_is_refused_while_running(make_server):
    server = make_server(config="appendonly yes\n")
    c = server.client()
    add_and_ack(c, 100, 100)
    pipe = c.pipeline(transaction=False)  # both in one batch of requests
    pipe.execute_command("BGREWRITEAOF")
    pipe.execute_command("BGREWRITEAOF")
    first, second = pipe.execute(raise_on_error=False)
    assert first is True  # +Background append only file rewriting started
    assert isinstance(second, redis.ResponseError)
    assert "already in progress" in str(second)
    assert wait_rewrite_done(c)["aof_last_bgrewrite_status"] == "ok"


def test_bgrewriteaof_with_the_aof_off_writes_a_file_once(make_server):
    server = make_server()
    c = server.client()
    ids = [c.execute_command("ADDJOB", "q", f"b{i}", 0) for i in range(10)]
    assert c.execute_command("BGREWRITEAOF")
    wait_for(lambda: os.path.exists(aof_path(server)), message="the file")
    info = wait_rewrite_done(c)
    assert info["aof_state"] == "off"
    assert {r[1][:40] for r in aof_records(server)} == set(ids)
    c.execute_command("ADDJOB", "q", "not logged", 0)
    assert len(aof_records(server)) == 10


def test_automatic_rewrite_keeps_the_file_bounded(make_server):
    server = make_server(config="appendonly yes\nauto-aof-rewrite-min-size 64kb\n"
                                "auto-aof-rewrite-percentage 100\n")
    c = server.client()
    kept = []
    for _ in range(10):
        kept += add_and_ack(c, 300, 10)
    wait_for(lambda: "Starting automatic rewriting of AOF" in server.log(), 5,
             message="an automatic rewrite")
    info = wait_rewrite_done(c)
    assert info["aof_base_size"] > 0

    def bounded():
        info = c.info("persistence")
        if (not info["aof_rewrite_in_progress"]
                and info["aof_current_size"] < 300 * 1000):  # well below 3000 jobs + acks
            return True
        # A rewrite that ran while the writes went on took them into its
        # file, which is its new base (Redis's rule too): the file shrinks
        # at the next automatic rewrite, which only more writes make due.
        add_and_ack(c, 100, 0)
        return False
    wait_for(bounded, 20, interval=0.05, message="the file bounded by automatic rewrites")
    server.kill()
    server.start()
    assert all_job_ids(server.client()) == set(kept)


def test_appendonly_off_at_runtime_stops_logging(make_server):
    server = make_server(config="appendonly yes\n")
    c = server.client()
    logged = c.execute_command("ADDJOB", "q", "logged", 0)
    assert c.config_set("appendonly", "no")
    info = persistence(c)
    assert info["aof_enabled"] == 0 and info["aof_state"] == "off"
    c.execute_command("ADDJOB", "q", "not logged", 0)
    records = aof_records(server)
    assert len(records) == 1 and records[0][1][:40] == logged


def test_fsync_policies(make_server):
    """always: an fsync for every answered write (in a worker thread);
    everysec: about one a second; no: none."""
    server = make_server(config="appendonly yes\nappendfsync always\n")
    c = server.client()
    base = persistence(c)["aof_fsyncs"]
    for i in range(20):
        c.execute_command("ADDJOB", "q", f"b{i}", 0)
    info = persistence(c)
    assert info["aof_fsyncs"] - base >= 20  # one per serial request
    assert info["aof_fsync"] == "always" and info["aof_last_fsync"] > 0

    assert c.config_set("appendfsync", "no")
    base = persistence(c)["aof_fsyncs"]
    for i in range(20):
        c.execute_command("ADDJOB", "q", f"n{i}", 0)
    assert persistence(c)["aof_fsyncs"] == base

    assert c.config_set("appendfsync", "everysec")
    c.execute_command("ADDJOB", "q", "e", 0)
    wait_for(lambda: persistence(c)["aof_fsyncs"] > base, 3, message="everysec fsync")


def test_info_persistence_fields(make_server):
    server = make_server(config="appendonly yes\n")
    info = persistence(server.client())
    for field in ("loading", "aof_enabled", "aof_state", "aof_rewrite_in_progress",
                  "aof_rewrite_scheduled", "aof_last_bgrewrite_status",
                  "aof_last_write_status", "aof_current_size", "aof_base_size",
                  "aof_last_fsync", "aof_pending_bio_fsync"):
        assert field in info, field
    assert info["aof_enabled"] == 1 and info["aof_state"] == "on"
    assert info["aof_last_write_status"] == "ok" and info["loading"] == 0
