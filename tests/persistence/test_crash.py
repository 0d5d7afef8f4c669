"""kill -9 with real processes: no job whose ADDJOB was answered is lost,
no job whose ACKJOB was answered comes back, whatever the fsync policy and
even in the middle of a rewrite."""

import os
import signal

import pytest

from tests.harness import wait_for
from tests.persistence.util import (Load, all_job_ids, aof_path, persistence,
                                    sleep_until)


def check_after_restart(server, load):
    server.start()
    c = server.client()
    loaded = all_job_ids(c)
    answered = set(load.added)
    acked = set(load.acked)
    assert answered, "the load never got an answer"
    lost = answered - set(load.ack_sent) - loaded
    assert not lost, f"{len(lost)} of {len(answered)} answered jobs lost"
    back = acked & loaded
    assert not back, f"{len(back)} acked jobs came back"
    assert not load.errors
    return c, loaded


@pytest.mark.parametrize("policy", ["always", "everysec", "no"])
def test_kill9_under_load_loses_no_answered_job(make_server, policy):
    """Every record is handed to the kernel before the reply, so a process
    crash loses nothing under any policy (with ``everysec``/``no`` an OS
    crash could still lose what the kernel had not flushed: at most about
    the last second with everysec).  With ``always`` the replies also waited
    for an fsync: the fsync counter moves with the load."""
    server = make_server(config=f"appendonly yes\nappendfsync {policy}\n")
    load = Load(server, threads=4, pipeline=1)
    piped = Load(server, threads=2, pipeline=20, queue="p", ack=False)
    load.wait_added(300)
    piped.wait_added(1000)
    fsyncs = persistence(server.client())["aof_fsyncs"]
    server.kill()
    load.stop()
    piped.stop()
    if policy == "always":
        assert fsyncs > 10
    load.added += piped.added
    c, loaded = check_after_restart(server, load)
    info = persistence(c)
    assert info["aof_state"] == "on" and info["aof_last_write_status"] == "ok"


def stopped_mid_rewrite(server, c, temp):
    """Start a rewrite and SIGSTOP the node once its file holds 100 KB. The
    file is renamed when the rewrite ends, so it still being there proves
    the kill will land mid-rewrite; False (node resumed) if it ended
    before the stop (a test stalled for the ~0.1 s the rest takes)."""
    assert c.execute_command("BGREWRITEAOF")  # +Background append only file rewriting started
    assert sleep_until(lambda: os.path.exists(temp) and os.path.getsize(temp) > 100000
                       or not persistence(c)["aof_rewrite_in_progress"])
    os.kill(server.proc.pid, signal.SIGSTOP)
    if os.path.exists(temp):
        return True
    os.kill(server.proc.pid, signal.SIGCONT)
    return False


def test_kill9_during_a_rewrite_loses_nothing(make_server):
    server = make_server(config="appendonly yes\n")
    c = server.client()
    pipe = c.pipeline(transaction=False)
    for i in range(25000):
        pipe.execute_command("ADDJOB", "big", "x" * 50, 0)
    first = pipe.execute()
    load = Load(server, threads=3)
    load.wait_added(100)
    # Kill once the rewrite has written part of its file, still serving.
    temp = os.path.join(server.dir, f"temp-rewriteaof-bg-{server.proc.pid}.aof")
    assert any(stopped_mid_rewrite(server, c, temp) for _ in range(3))
    server.kill()
    load.stop()
    load.added += first
    c, loaded = check_after_restart(server, load)
    assert not os.path.exists(temp)
    assert "Removed the leftover rewrite file" in server.log()


def test_rewrite_under_load_then_kill9(make_server):
    """A rewrite that completes while clients write: the new file has every
    job, including the ones added and acked during the rewrite."""
    server = make_server(config="appendonly yes\n")
    c = server.client()
    pipe = c.pipeline(transaction=False)
    for i in range(20000):
        pipe.execute_command("ADDJOB", "big", "y" * 50, 0)
    first = pipe.execute()
    pipe = c.pipeline(transaction=False)
    for job_id in first[:10000]:
        pipe.execute_command("ACKJOB", job_id)
    pipe.execute()
    size_before = persistence(c)["aof_current_size"]
    load = Load(server, threads=3)
    load.wait_added(100)
    c.execute_command("BGREWRITEAOF")
    wait_for(lambda: persistence(c)["aof_rewrite_in_progress"] == 0, 20,
             message="the rewrite")
    count = len(load.added)
    load.wait_added(count + 200)  # still serving, now into the new file
    info = persistence(c)
    assert info["aof_last_bgrewrite_status"] == "ok"
    assert info["aof_base_size"] < size_before
    server.kill()
    load.stop()
    load.added += first[10000:]
    load.acked += first[:10000]
    check_after_restart(server, load)


def test_appendonly_switched_on_at_runtime_survives_kill9(make_server):
    server = make_server()
    c = server.client()
    before = [c.execute_command("ADDJOB", "q", f"b{i}", 0) for i in range(50)]
    assert not os.path.exists(aof_path(server))
    assert c.config_set("appendonly", "yes")
    wait_for(lambda: persistence(c)["aof_state"] == "on", message="aof_state on")
    after = [c.execute_command("ADDJOB", "q", f"a{i}", 0) for i in range(50)]
    assert c.execute_command("CONFIG", "REWRITE") == b"OK"
    server.kill()
    server.start()
    c = server.client()
    assert all_job_ids(c) == set(before + after)
    assert persistence(c)["aof_state"] == "on"
