"""bench/loadgen.c, the C load generator of the benchmarks, against a real
trisque-server: it builds, sends every request and counts the replies and
their integers as the Python loader does."""

import shutil

import pytest

from bench import client
from tests.harness import Server

needs_cc = pytest.mark.skipif(
    not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")


@pytest.fixture(scope="module")
def server():
    srv = Server().start()
    yield srv
    srv.cleanup()


@needs_cc
@pytest.mark.parametrize("loader", [client.C_LEAN, client.C_LIKE_REDIS_BENCHMARK])
def test_replay_counts_replies_and_integers(server, loader):
    conn = server.client()
    ids = [conn.execute_command("ADDJOB", "lg", f"body{i}", 0) for i in range(7)]
    requests = [client.encode("ACKJOB", job_id) for job_id in ids]
    requests += [client.encode("ACKJOB", "D-00000000-%024d-0001" % i) for i in range(3)]
    requests += [client.encode("GETJOB", "NOHANG", "FROM", "empty"),  # nil array
                 client.encode("NOSUCHCOMMAND"),                      # error
                 client.encode("PING")]
    # 3 clients, 2 in flight each: uneven batches, a client with a short last one
    result = client.replay(server.port, requests, clients=3, pipeline=2, loader=loader)
    assert result.loader == loader
    assert result.replies == len(requests)
    assert result.int_sum == 7  # each real job acked once, the unknown IDs 0
    assert result.errors == 1
    assert result.nils == 1
    assert result.rate > 0
    assert conn.execute_command("QLEN", "lg") == 0
    assert server.client().info()["registered_jobs"] == 0
    conn.close()


@needs_cc
def test_replay_agrees_with_the_python_loader(server):
    conn = server.client()
    ids = [conn.execute_command("ADDJOB", "agree", "b", 0) for i in range(40)]
    half = len(ids) // 2
    by_c = client.replay(server.port, [client.encode("ACKJOB", i) for i in ids[:half]],
                         clients=5, pipeline=3, loader="c")
    by_python = client.replay(server.port, [client.encode("ACKJOB", i) for i in ids],
                              clients=5, pipeline=3, loader="python")
    assert (by_c.replies, by_c.int_sum, by_c.errors) == (half, half, 0)
    # the second pass acks only the jobs the first one left
    assert (by_python.replies, by_python.int_sum, by_python.errors) == (40, 40 - half, 0)
    conn.close()


@needs_cc
def test_cycle_acks_every_job(server):
    rate = client.cycle(server.port, 300, 50, "trisque", loader="c")
    assert rate > 0
    conn = server.client()
    assert conn.execute_command("QLEN", "cycle") == 0
    assert conn.info()["registered_jobs"] == 0
    conn.close()


def test_without_a_compiler_the_python_loader_measures(server, monkeypatch, tmp_path):
    monkeypatch.setattr(client.shutil, "which", lambda name: None)
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(client, "LOADGEN_CACHE", str(tmp_path))
    assert client.loadgen_binary() is None
    assert client.choose_loader() == client.PYTHON_LOADER
    with pytest.raises(RuntimeError, match="no C compiler"):
        client.choose_loader("c")
    result = client.replay(server.port, [client.encode("PING")] * 5, clients=2)
    assert (result.loader, result.replies, result.errors) == (client.PYTHON_LOADER, 5, 0)
