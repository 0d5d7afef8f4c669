"""Limits at their edges (issue 17): client-query-buffer-limit,
client-output-buffer-limit normal, max-job-size, getjob-max-queues,
maxclients and the descriptor limit, proto-max-bulk-len and the multibulk
count (keys per command), busy-reply-threshold.  Each breach is a clear
error or a disconnect of that client only, with a log line (and an INFO
counter where Redis has one); the node and its other clients go on.
(More bad input: test_bad_input.py; a busy script killed:
test_scripting.py; all of them at once: test_hostile_clients.py.)"""

import re
import resource
import socket
import subprocess
import time

import pytest

from tests.harness import Server, server_command, wait_for
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
            start = time.monotonic()  # before the send: the node's clock starts after it
            greedy.send(encode("GET", "big") * 200)
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


def _unsent_in_log_lines(log):
    return [int(n) for n in re.findall(r"closed for overcoming of output buffer limits "
                                       r"\(hard: (\d+) bytes unsent", log)]


def test_output_limit_counts_replies_as_a_pipeline_runs(limited):
    """20 MB of replies asked for in one write: the client is closed once
    its replies reach the 2 MB limit, not after all of them were built."""
    with Raw(limited.port) as reader:
        reader.call("SET", "big100k", "v" * 100000)
        before = stat(reader, "client_output_buffer_limit_disconnections")
        for tail in (b"", b"*x\r\n"):  # then the same before a protocol error
            greedy = _never_reading(limited.port)
            try:
                greedy.send(encode("GET", "big100k") * 200 + tail)
                wait_for(lambda: len(_unsent_in_log_lines(limited.log())) > 0
                         and stat(reader, "client_output_buffer_limit_disconnections")
                         == before + 1, timeout=10)
            finally:
                greedy.close()
            before += 1
            unsent = _unsent_in_log_lines(limited.log())[-1]
            assert 2 * MB <= unsent < 2 * MB + 100100  # the limit and one reply
        assert reader.call("PING") == b"PONG"


@pytest.fixture(scope="module")
def small_requests():
    srv = Server(config="proto-max-bulk-len 1kb\n").start()
    yield srv
    srv.cleanup()


def _refused(port, data, message):
    with Raw(port) as raw:
        raw.send(data)
        out = raw.read_all_until_closed(timeout=30)
    assert out.endswith(b"-ERR Protocol error: " + message.encode() + b"\r\n"), out[-200:]


def test_proto_max_bulk_len_edge(small_requests):
    port = small_requests.port
    with Raw(port) as raw:
        assert raw.call("SET", "k", "b" * 1024) == b"OK"
    _refused(port, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1025\r\n", "invalid bulk length")
    assert "Protocol error: invalid bulk length" in small_requests.log()
    with Raw(port) as raw:
        assert len(raw.call("GET", "k")) == 1024


def test_multibulk_count_edge_bounds_keys_per_command(small_requests):
    """1048576 arguments (Redis 2.x-6.x's and Disque's bound; Redis 7 waits
    for up to 2^31-1): DEL of 1048575 keys is served, one more refused."""
    port = small_requests.port
    keys = 1024 * 1024 - 1
    with Raw(port) as raw:
        raw.call("SET", "k", "v")
        raw.send(b"*%d\r\n$3\r\nDEL\r\n" % (keys + 1) + b"$1\r\nk\r\n" * keys)
        assert raw.reply() == 1
    _refused(port, b"*%d\r\n$3\r\nDEL\r\n" % (keys + 2), "invalid multibulk length")
    assert "Protocol error: invalid multibulk length" in small_requests.log()
    with Raw(port) as raw:
        assert raw.call("PING") == b"PONG"


def test_maxclients_edge(make_server):
    srv = make_server(config="maxclients 5\n")
    first = Raw(srv.port)
    conns = [first]
    try:
        wait_for(lambda: b"connected_clients:1\r" in first.call("INFO", "clients"))
        conns += [Raw(srv.port) for _ in range(4)]
        assert [c.call("PING") for c in conns] == [b"PONG"] * 5  # the 5th is served
        with Raw(srv.port) as sixth:
            assert sixth.read_all_until_closed() == b"-ERR max number of clients reached\r\n"
        assert stat(first, "rejected_connections") == 1
        assert "refused: maxclients (5) reached" in srv.log()
        conns.pop().close()
        wait_for(lambda: b"connected_clients:4\r" in first.call("INFO", "clients"))
        with Raw(srv.port) as again:  # room again
            assert again.call("PING") == b"PONG"
    finally:
        for c in conns:
            c.close()


class _LowNofileServer(Server):
    """A server whose descriptor limit (soft and hard) is ``nofile``."""

    nofile = 300

    def start(self, wait=True):
        def limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))
        self.proc = subprocess.Popen(
            server_command() + [self.config_path] + self.args, cwd=self.dir,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=limit)
        if wait:
            self.wait_ready()
        return self


def test_maxclients_fits_the_descriptor_limit():
    """As Redis: with a hard limit of 300 descriptors and maxclients 10000,
    maxclients becomes 300 - 128 (kept for the node's own), so the client
    past it gets Redis's error rather than an accept() that fails."""
    srv = _LowNofileServer().start()
    conns = []
    try:
        admin = Raw(srv.port)
        conns.append(admin)
        assert admin.call("CONFIG", "GET", "maxclients") == [b"maxclients", b"172"]
        assert "maxclients has been reduced to 172" in srv.log()
        wait_for(lambda: b"connected_clients:1\r" in admin.call("INFO", "clients"))
        conns += [Raw(srv.port) for _ in range(171)]
        assert conns[-1].call("PING") == b"PONG"
        with Raw(srv.port) as extra:
            assert extra.read_all_until_closed() == b"-ERR max number of clients reached\r\n"
        reply = str(admin.call("CONFIG", "SET", "maxclients", "1000"))
        assert reply.startswith("ERR ") and "try with 172" in reply
        assert admin.call("CONFIG", "SET", "maxclients", "100") == b"OK"
        assert admin.call("PING") == b"PONG"
    finally:
        for c in conns:
            c.close()
        srv.cleanup()


def test_script_under_busy_reply_threshold_holds_others_without_busy(make_server):
    """busy-reply-threshold 2000: while a 300 ms script runs, another
    client's requests wait for it and are answered, never -BUSY, and
    nothing is logged (past the threshold: test_scripting.py)."""
    srv = make_server(config="busy-reply-threshold 2000\n")
    script = ("local t = redis.call('TIME') local s = t[1] * 1e6 + t[2] "
              "repeat local n = redis.call('TIME') until n[1] * 1e6 + n[2] - s > 300000 "
              "return 1")
    with Raw(srv.port) as looper, Raw(srv.port) as other:
        looper.send_command("EVAL", script, 0)

        def script_seen():
            listing = other.call("CLIENT", "LIST")
            assert isinstance(listing, bytes), listing  # not -BUSY
            return b"cmd=eval" in listing
        wait_for(script_seen, timeout=10)
        assert looper.reply() == 1
        assert other.call("PING") == b"PONG"
    assert "Slow script detected" not in srv.log()
