"""Limits at their edges (issue 17): client-query-buffer-limit,
client-output-buffer-limit normal, max-job-size, getjob-max-queues.  Each
breach is a clear error or a disconnect of that client only, with a log
line and an INFO counter; the node and its other clients go on.
(proto-max-bulk-len and the multibulk count: test_bad_input.py;
maxclients: test_cli.py.)"""

import socket
import time

import pytest

from tests.harness import wait_for
from tests.server.util import Raw, encode

MB = 1024 * 1024


@pytest.fixture(scope="module")
def limited():
    from tests.harness import Server
    srv = Server(config="client-query-buffer-limit 1mb\n"
                        "client-output-buffer-limit normal 2mb 0 0\n"
                        "max-job-size 1000\ngetjob-max-queues 4\n").start()
    yield srv
    srv.cleanup()


def stat(raw, name):
    for line in raw.call("INFO", "stats").decode().splitlines():
        if line.startswith(name + ":"):
            return int(line.split(":")[1])
    raise KeyError(name)


def closed(raw):
    """The server closed us (a reset counts: we left bytes unread)."""
    try:
        raw.read_all_until_closed(timeout=10)
    except ConnectionResetError:
        pass
    return True


def test_query_buffer_limit_edge(limited):
    with Raw(limited.port) as ok:
        # just under 1 MB buffered while the request is incomplete: served
        body = b"x" * (MB - 100)
        ok.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % len(body))
        ok.send(body[:-10])
        time.sleep(0.1)
        ok.send(body[-10:] + b"\r\n")
        assert ok.reply() == b"OK"
        before = stat(ok, "client_query_buffer_limit_disconnections")
        with Raw(limited.port) as big:
            big.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (2 * MB))
            try:
                big.send(b"y" * (MB + 1000))
            except OSError:
                pass
            assert closed(big)
        assert stat(ok, "client_query_buffer_limit_disconnections") == before + 1
        assert ok.call("PING") == b"PONG"
    assert "Closing client that reached max query buffer length" in limited.log()


def test_query_buffer_counts_requests_behind_a_blocked_command(limited):
    with Raw(limited.port) as blocked, Raw(limited.port) as other:
        blocked.send_command("GETJOB", "TIMEOUT", 0, "FROM", "nothing-here")
        wait_for(lambda: b"blocked_clients:1" in other.call("INFO", "clients"))
        try:
            for _ in range(40):  # 40 x 32 KB of PINGs behind it: > 1 MB
                blocked.send(encode("PING", "p" * 32000))
        except OSError:
            pass
        assert closed(blocked)
        assert other.call("PING") == b"PONG"


def _never_reading(port):
    raw = Raw(port)
    raw.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    return raw


def test_output_buffer_hard_limit(limited):
    with Raw(limited.port) as reader:
        reader.call("SET", "big", "v" * 100000)
        before = stat(reader, "client_output_buffer_limit_disconnections")
        # a reader asking for 2 MB in one pipeline reads it all: under the limit
        reader.send(encode("GET", "big") * 19)
        assert [len(reader.reply()) for _ in range(19)] == [100000] * 19
        greedy = _never_reading(limited.port)
        try:
            greedy.send(encode("GET", "big") * 500)  # 50 MB of replies, never read
            wait_for(lambda: stat(reader, "client_output_buffer_limit_disconnections")
                     == before + 1, timeout=10)
        finally:
            greedy.close()
        assert reader.call("PING") == b"PONG"
        assert "closed for overcoming of output buffer limits (hard" in limited.log()


def test_output_buffer_soft_limit(make_server):
    srv = make_server(config="client-output-buffer-limit normal 0 1mb 1\n")
    with Raw(srv.port) as reader:
        reader.call("SET", "big", "v" * 100000)
        greedy = _never_reading(srv.port)
        try:
            greedy.send(encode("GET", "big") * 200)
            start = time.monotonic()
            wait_for(lambda: stat(reader, "client_output_buffer_limit_disconnections") == 1,
                     timeout=10)
            assert time.monotonic() - start >= 0.7  # after its second over the limit
        finally:
            greedy.close()
        assert "(soft:" in srv.log()
        assert str(reader.call("CONFIG", "SET", "client-output-buffer-limit",
                               "normal 1mb")).startswith("ERR Invalid argument")
        assert str(reader.call("CONFIG", "SET", "client-output-buffer-limit",
                               "bogus 1 2 3")).startswith("ERR Invalid argument")
        assert reader.call("CONFIG", "SET", "client-output-buffer-limit",
                           "normal 0 0 0 pubsub 32mb 8mb 60") == b"OK"


def test_max_job_size(limited):
    with Raw(limited.port) as raw:
        assert raw.call("ADDJOB", "sized", "b" * 1000, 0).startswith(b"D-")
        reply = str(raw.call("ADDJOB", "sized", "b" * 1001, 0))
        assert reply == "ERR job body too big: 1001 bytes, max-job-size is 1000"
        assert raw.call("QLEN", "sized") == 1


def test_getjob_max_queues(limited):
    with Raw(limited.port) as raw:
        assert raw.call("GETJOB", "NOHANG", "FROM", "a", "b", "c", "d") is None
        reply = str(raw.call("GETJOB", "NOHANG", "FROM", "a", "b", "c", "d", "e"))
        assert reply == "ERR too many queues in GETJOB: 5, getjob-max-queues is 4"
