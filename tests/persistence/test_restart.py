"""Restarts with real processes and files: what comes back, in which
state; controlled restarts (aof-enqueue-jobs-once + SHUTDOWN REWRITE-AOF);
truncated and corrupt files."""

import os
import shutil
import subprocess
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.harness import wait_for
from tests.persistence.util import (all_job_ids, aof_path, aof_records,
                                    persistence, wait_exit)


def shutdown(server, *args):
    client = server.client(retry=Retry(NoBackoff(), 0))  # it will hang up
    try:
        client.execute_command("SHUTDOWN", *args)
    except redis.ConnectionError:
        pass


def test_restart_returns_unacked_jobs_active_then_requeued(make_server):
    server = make_server(config="appendonly yes\n")
    c = server.client()
    ids = [c.execute_command("ADDJOB", "q", f"b{i}", 0, "RETRY", 1) for i in range(10)]
    for job_id in ids[:3]:
        assert c.execute_command("ACKJOB", job_id) == 1
    c.execute_command("FASTACK", ids[3])
    c.execute_command("DELJOB", ids[4])
    delivered = c.execute_command("GETJOB", "FROM", "q")[0][1]
    assert delivered == ids[5]
    server.stop()
    server.start()
    c = server.client()
    assert all_job_ids(c) == set(ids[5:])
    show = dict(zip(*[iter(c.execute_command("SHOW", ids[6]))] * 2))
    assert show[b"state"] == b"active" and show[b"body"] == b"b6"
    assert c.execute_command("QLEN", "q") == 0
    # Requeued by their retry timers (RETRY 1 s, from the restart).
    wait_for(lambda: c.execute_command("QLEN", "q") == 5, 5, message="requeue")
    assert "DB loaded from append only file" in server.log()


def test_file_is_resp_that_standard_tools_read(make_server):
    server = make_server(config="appendonly yes\n")
    c = server.client()
    ids = [c.execute_command("ADDJOB", "q", "body\r\n%d" % i, 0) for i in range(5)]
    c.execute_command("ACKJOB", ids[0])
    records = aof_records(server)
    assert [r[0] for r in records] == [b"LOADJOB"] * 5 + [b"DELJOB"]
    assert records[-1] == [b"DELJOB", ids[0]]
    assert all(r[1].startswith(i) for r, i in zip(records, ids))
    checker = shutil.which("redis-check-aof")
    if checker:
        out = subprocess.run([checker, aof_path(server)], capture_output=True, text=True)
        assert "is valid" in out.stdout, out.stdout + out.stderr


def test_expired_jobs_are_dropped_at_load(make_server):
    server = make_server(config="appendonly yes\n")
    c = server.client()
    short = c.execute_command("ADDJOB", "q", "short", 0, "TTL", 1)
    keep = c.execute_command("ADDJOB", "q", "keep", 0, "TTL", 300)
    server.kill()
    time.sleep(1.05)
    server.start()
    c = server.client()
    assert all_job_ids(c) == {keep}
    assert short not in all_job_ids(c)
    assert "1 expired dropped" in server.log()


def test_controlled_restart_reloads_queues_once(make_server):
    """Disque's README recipe, on a memory-only node: the queues come back
    as they were, RETRY 0 jobs included; the option turns itself off."""
    server = make_server()
    c = server.client()
    queued = [c.execute_command("ADDJOB", "q", f"b{i}", 0) for i in range(5)]
    once = c.execute_command("ADDJOB", "q", "once", 0, "RETRY", 0)
    delivered = c.execute_command("ADDJOB", "w", "d", 0)
    assert c.execute_command("GETJOB", "FROM", "w")[0][1] == delivered
    acked = c.execute_command("ADDJOB", "q", "acked", 0)
    c.execute_command("ACKJOB", acked)
    assert c.config_set("aof-enqueue-jobs-once", "yes")
    assert c.execute_command("CONFIG", "REWRITE") == b"OK"
    shutdown(server, "REWRITE-AOF")
    assert wait_exit(server) == 0
    assert os.path.exists(aof_path(server))  # written although appendonly no
    server.start()
    c = server.client()
    assert [j[1] for j in c.execute_command("QPEEK", "q", 10)] == queued + [once]
    assert c.execute_command("QLEN", "w") == 0
    assert all_job_ids(c) == set(queued + [once, delivered])
    assert c.config_get("aof-enqueue-jobs-once") == {"aof-enqueue-jobs-once": "no"}
    with open(server.config_path) as f:
        assert "aof-enqueue-jobs-once yes" not in f.read()
    assert persistence(c)["aof_state"] == "off"
    # Once only: the next restart of this memory-only node loads nothing.
    server.stop()
    server.start()
    assert all_job_ids(server.client()) == set()


def test_shutdown_rewrite_aof_compacts_the_file(make_server):
    server = make_server(config="appendonly yes\n")
    c = server.client()
    ids = [c.execute_command("ADDJOB", "q", f"b{i}", 0) for i in range(100)]
    for job_id in ids[:90]:
        c.execute_command("ACKJOB", job_id)
    assert len(aof_records(server)) == 190
    shutdown(server, "REWRITE-AOF")
    assert wait_exit(server) == 0
    assert len(aof_records(server)) == 10
    assert "SYNC append only file rewrite performed" in server.log()
    server.start()
    assert all_job_ids(server.client()) == set(ids[90:])


def test_debug_loadaof_reloads_the_file(make_server):
    server = make_server(config="appendonly yes\n")
    c = server.client()
    ids = [c.execute_command("ADDJOB", "q", f"b{i}", 0) for i in range(5)]
    assert c.execute_command("QLEN", "q") == 5
    assert c.execute_command("DEBUG", "LOADAOF") == b"OK"
    assert all_job_ids(c) == set(ids)
    assert c.execute_command("QLEN", "q") == 0  # reloaded jobs are active


def _three_jobs_file(make_server):
    server = make_server(config="appendonly yes\n")
    c = server.client()
    ids = [c.execute_command("ADDJOB", "q", f"b{i}", 0) for i in range(3)]
    server.stop()
    with open(aof_path(server), "rb") as f:
        data = f.read()
    return server, ids, data


def test_truncated_tail_is_dropped_with_a_log_line(make_server):
    server, ids, data = _three_jobs_file(make_server)
    last = data.rindex(b"*2\r\n$7\r\nLOADJOB")
    with open(aof_path(server), "wb") as f:
        f.write(data[:-9])
    server.start()
    assert all_job_ids(server.client()) == set(ids[:2])
    dropped = len(data) - 9 - last
    assert f"Truncating the AOF at offset {last}: {dropped} bytes" in server.log()
    assert os.path.getsize(aof_path(server)) == last
    # New records follow the last complete one.
    new = server.client().execute_command("ADDJOB", "q", "new", 0)
    server.kill()
    server.start()
    assert all_job_ids(server.client()) == set(ids[:2] + [new])


def test_truncated_tail_refused_without_aof_load_truncated(make_server):
    server, ids, data = _three_jobs_file(make_server)
    with open(aof_path(server), "wb") as f:
        f.write(data[:-9])
    with open(server.config_path, "a") as f:
        f.write("aof-load-truncated no\n")
    server.start(wait=False)
    assert wait_exit(server) == 1
    log = server.log()
    assert "Unexpected end of file reading the append only file" in log
    assert "aof-load-truncated yes" in log  # the hint
    assert os.path.getsize(aof_path(server)) == len(data) - 9  # untouched


def test_corrupt_file_is_refused_with_offset_and_hint(make_server):
    server, ids, data = _three_jobs_file(make_server)
    second = data.index(b"*2\r\n$7\r\nLOADJOB", 1)
    broken = data[:second] + b"garbage!" + data[second + 8:]
    with open(aof_path(server), "wb") as f:
        f.write(broken)
    server.start(wait=False)
    assert wait_exit(server) == 1
    log = server.log()
    assert "Bad file format reading the append only file" in log
    assert f"at offset {second}" in log
    assert f"truncate -s {second}" in log
    with open(aof_path(server), "rb") as f:
        assert f.read() == broken  # never modified


def test_aof_path_that_cannot_be_opened(make_server):
    server = make_server()
    os.mkdir(aof_path(server))  # the file name is taken by a directory
    c = server.client()
    try:
        c.config_set("appendonly", "yes")
        raise AssertionError("CONFIG SET appendonly yes should fail")
    except redis.ResponseError as exc:
        assert "Unable to turn on AOF" in str(exc)
    assert persistence(c)["aof_state"] == "off"
    assert c.config_get("appendonly") == {"appendonly": "no"}
    assert c.execute_command("ADDJOB", "q", "x", 0)
    server.stop()
    with open(server.config_path, "a") as f:
        f.write("appendonly yes\n")
    server.start(wait=False)
    assert wait_exit(server) == 1
    assert "disque.aof is not a regular file" in server.log()
    assert "Traceback" not in server.proc.stderr.read().decode()


def test_clients_get_loading_while_the_aof_loads(make_server):
    server = make_server(config="appendonly yes\n")
    c = server.client()
    jobs = 100000  # about a second of loading: long enough to be seen
    for start in range(0, jobs, 5000):
        pipe = c.pipeline(transaction=False)
        for i in range(start, start + 5000):
            pipe.execute_command("ADDJOB", "q", f"body{i}", 0)
        pipe.execute()
    server.stop()
    server.start(wait=False)
    c = server.client(retry=Retry(NoBackoff(), 0))
    replies = []

    def answered():
        try:
            replies.append(c.ping())
        except redis.BusyLoadingError as exc:
            replies.append(exc)
            return True
        except redis.ConnectionError:
            return False  # not listening yet
        return True
    wait_for(answered, 15, message="the server to listen")
    # Connected while loading: the node answers, with -LOADING for what
    # needs the data, and says so in INFO.
    assert isinstance(replies[0], redis.BusyLoadingError), replies
    assert "loading" in str(replies[0]).lower()
    loading = persistence(c)
    assert loading["loading"] == 1
    # Redis's loading_* fields, and the jobs so far (issue 16's progress)
    assert loading["loading_total_bytes"] > 0
    assert 0 <= float(loading["loading_loaded_perc"]) <= 100
    assert {"loading_eta_seconds", "loading_loaded_jobs", "loading_jobs_per_sec"} <= set(loading)
    try:
        c.execute_command("ADDJOB", "q", "during", 0)
    except redis.BusyLoadingError:
        pass
    else:
        raise AssertionError("ADDJOB accepted while loading")

    def loaded():
        try:
            return c.ping()
        except redis.BusyLoadingError:
            return False
    wait_for(loaded, 60, message="the load to finish")
    assert c.info()["registered_jobs"] == jobs  # active: they requeue after RETRY
    assert persistence(c)["loading"] == 0
