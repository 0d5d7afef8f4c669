"""Connection and server commands against a real server: PING (inline and
the Disque harness probe), ECHO, QUIT, TIME, HELLO, INFO, COMMAND, CLIENT,
DEBUG, SLOWLOG, MONITOR, and redis-py's own connection handshake."""

import socket
import time

import pytest
import redis

from tests.harness import wait_for
from tests.server.util import Raw


# ------------------------------------------------------------------ PING

def test_inline_ping_typed_by_hand(shared):
    with socket.create_connection(("127.0.0.1", shared.port), timeout=5) as s:
        s.sendall(b"PING\r\n")
        assert s.recv(100) == b"+PONG\r\n"
        s.sendall(b"ping\n")  # a bare LF, lower case
        assert s.recv(100) == b"+PONG\r\n"
        s.sendall(b"PING \"hello world\"\r\n")
        assert s.recv(100) == b"$11\r\nhello world\r\n"


def test_disque_harness_probe(shared):
    """tests/instances.tcl writes PING\\r\\n plus an extra \\n and reads one
    line with a blocking gets: the empty line must be ignored."""
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", shared.port), timeout=5) as s:
            s.sendall(b"PING\r\n\n")
            f = s.makefile("rb")
            assert f.readline() == b"+PONG\r\n"
            s.sendall(b"PING\r\n")
            assert f.readline() == b"+PONG\r\n"  # nothing extra in between


def test_ping_forms(shared):
    with Raw(shared.port) as raw:
        assert raw.call("PING") == b"PONG"
        raw.send_command("PING", "x")
        assert raw.read_line() == b"$1\r\n"  # a bulk, not a status
        assert raw.read_line() == b"x\r\n"
        assert str(raw.call("PING", "a", "b")) == \
            "ERR wrong number of arguments for 'ping' command"


def test_echo(any_c):
    assert any_c.execute_command("ECHO", b"\x00\xff") == b"\x00\xff"
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        any_c.execute_command("ECHO")


def test_commands_case_insensitive(shared):
    with Raw(shared.port) as raw:
        assert raw.call("pInG") == b"PONG"
        assert raw.call("qlen", "q") == 0
        job_id = raw.call("addjob", "q", "x", "0", "ttl", "100")
        assert raw.call("Qlen", "q") == 1
        assert raw.call("ackjob", job_id) == 1


def test_quit(shared):
    with Raw(shared.port) as raw:
        raw.send(b"QUIT\r\n")
        assert raw.read_all_until_closed() == b"+OK\r\n"
    with Raw(shared.port) as raw:
        # pipelined commands after QUIT are not run
        raw.send(b"*1\r\n$4\r\nQUIT\r\n*3\r\n$6\r\nADDJOB\r\n$4\r\nquit\r\n$1\r\nx\r\n")
        assert raw.read_all_until_closed() == b"+OK\r\n"
    assert shared.client().execute_command("QLEN", "quit") == 0


def test_time(any_c):
    seconds, micros = any_c.execute_command("TIME")
    assert abs(int(seconds) - time.time()) < 5
    assert 0 <= int(micros) < 1000000


# ----------------------------------------------------------------- HELLO

def test_bare_hello_is_disques(any_c, shared):
    reply = any_c.execute_command("HELLO")
    version, myid, nodes = reply[0], reply[1], reply[2:]
    assert version == 1
    assert len(myid) == 40 and int(myid, 16) >= 0
    assert nodes == [[myid, b"127.0.0.1", str(shared.port).encode(), b"1"]]


def test_hello_3_and_2(shared):
    with Raw(shared.port) as raw:
        reply = raw.call("HELLO", 3, "SETNAME", "worker-1")
        assert isinstance(reply, dict)
        assert reply[b"proto"] == 3 and reply[b"server"] == b"disque"
        assert reply[b"role"] == b"master" and reply[b"modules"] == []
        assert {b"version", b"id", b"mode"} <= set(reply)
        assert raw.call("CLIENT", "GETNAME") == b"worker-1"
        raw.send_command("GETJOB", "NOHANG", "FROM", "q")
        assert raw.read_line() == b"_\r\n"  # RESP3's null for Disque's commands too
        reply = raw.call("HELLO", 2)
        assert isinstance(reply, list) and reply[reply.index(b"proto") + 1] == 2
        raw.send_command("GETJOB", "NOHANG", "FROM", "q")
        assert raw.read_line() == b"*-1\r\n"
        assert str(raw.call("HELLO", 4)).startswith("NOPROTO")
        assert str(raw.call("HELLO", "x")).startswith("ERR Protocol version")
        assert str(raw.call("HELLO", 3, "FOO")).startswith("ERR Syntax error in HELLO")
        assert str(raw.call("HELLO", 3, "AUTH", "default", "pw")).startswith(
            "ERR Client sent AUTH, but no password is set")


def test_redis_py_default_settings(shared):
    """redis-py 8 with no options: HELLO 3, CLIENT SETINFO, maintenance
    notifications handshake; then the job API must work."""
    client = redis.Redis(host="127.0.0.1", port=shared.port)
    try:
        assert client.ping()
        job_id = client.execute_command("ADDJOB", "default-q", "x", 0)
        # RESP3 from redis-py 8 on; Disque's commands keep their RESP2 shape
        assert client.execute_command("SHOW", job_id)[4:6] == [b"state", b"queued"]
        info = client.client_info()
        assert info["lib-name"] == "redis-py" and info["resp"] in ("2", "3")
        assert client.execute_command("ACKJOB", job_id) == 1
    finally:
        client.close()


def test_redis_py_protocol_2(shared):
    client = redis.Redis(host="127.0.0.1", port=shared.port, protocol=2)
    try:
        job_id = client.execute_command("ADDJOB", "p2", "x", 0)
        assert client.execute_command("SHOW", job_id)[4:6] == [b"state", b"queued"]
        assert client.execute_command("ACKJOB", job_id) == 1
    finally:
        client.close()


# ------------------------------------------------------------------ INFO

def test_info_sections(any_c):
    c = any_c
    c.execute_command("ADDJOB", "q1", "x" * 1000, 0)
    c.execute_command("ADDJOB", "q2", "y", 0)
    info = c.info()
    for field in ("disque_version", "process_id", "tcp_port", "uptime_in_seconds",
                  "connected_clients", "blocked_clients", "used_memory",
                  "used_memory_human", "used_memory_rss", "maxmemory",
                  "registered_jobs", "registered_queues", "aof_enabled",
                  "total_commands_processed", "used_cpu_sys"):
        assert field in info, field
    assert info["registered_jobs"] == 2 and info["registered_queues"] == 2
    assert c.info("jobs") == {"registered_jobs": 2}
    assert c.info("queues") == {"registered_queues": 2}
    assert c.info("memory")["used_memory"] > 0
    assert "cmdstat_addjob" in c.info("all")
    assert c.info("commandstats")["cmdstat_addjob"]["calls"] >= 2
    assert "cluster_state" in c.info("cluster") or c.info("cluster") == {}
    assert c.info("nosuchsection") == {}
    assert "executable" in c.info("server")
    # several sections as Redis 7 (Disque answered a syntax error)
    assert c.info("jobs", "queues") == {"registered_jobs": 2, "registered_queues": 2}


def test_info_raw_shape(shared):
    with Raw(shared.port) as raw:
        raw.call("DEBUG", "FLUSHALL")
        raw.send_command("INFO", "jobs")
        # exactly Disque's bytes
        assert raw.read_line() == b"$27\r\n"
        assert raw.sock.recv(100) == b"# Jobs\r\nregistered_jobs:0\r\n\r\n"
        raw.call("HELLO", 3)
        raw.send_command("INFO", "jobs")
        assert raw.read_line() == b"$27\r\n"  # Disque's bulk on RESP3 too
        assert raw.sock.recv(100) == b"# Jobs\r\nregistered_jobs:0\r\n\r\n"
        raw.call("CLIENT", "DISQUE-RESP3", "ON")
        raw.send_command("INFO", "jobs")
        assert raw.read_line() == b"=31\r\n"  # Redis 7's verbatim string, on request
        assert raw.sock.recv(100) == b"txt:# Jobs\r\nregistered_jobs:0\r\n\r\n"
        raw.call("HELLO", 2)
        assert raw.call("INFO", "cpu").startswith(b"# CPU\r\n")  # as Disque


def test_used_memory_grows_with_jobs(c):
    before = c.info("memory")["used_memory"]
    pipe = c.pipeline(transaction=False)
    for _ in range(1000):
        pipe.execute_command("ADDJOB", "mem", "z" * 500, 0)
    ids = pipe.execute()
    grown = c.info("memory")["used_memory"] - before
    assert grown >= 1000 * 500, grown
    c.execute_command("ACKJOB", *ids)
    assert c.info("memory")["used_memory"] < before + 1000 * 500


# --------------------------------------------------------------- COMMAND

def test_command(any_c):
    c = any_c
    count = c.command_count()
    assert count >= 30
    table = c.command()
    assert len(table) == count
    assert table["addjob"]["arity"] == -4
    assert table["getjob"]["arity"] == -2
    assert table["getjobs"]["arity"] == -2  # another name of GETJOB
    assert table["getjobs"]["flags"] == table["getjob"]["flags"]
    assert table["ackjob"]["arity"] == -1
    assert table["show"]["arity"] == 2
    assert "denyoom" in table["addjob"]["flags"]


def test_command_info_raw(shared):
    with Raw(shared.port) as raw:
        [qlen, missing] = raw.call("COMMAND", "INFO", "qlen", "nosuch")
        assert qlen[:2] == [b"qlen", 2] and missing is None
        assert raw.call("COMMAND", "COUNT") == len(raw.call("COMMAND"))


def test_command_docs_raw(shared):
    with Raw(shared.port) as raw:
        docs = raw.call("COMMAND", "DOCS", "ADDJOB", "GETJOB")
        names = docs[::2]
        assert set(names) == {b"addjob", b"getjob"}
        entry = dict(zip(docs[1][::2], docs[1][1::2]))
        assert b"summary" in entry and entry[b"summary"]
        everything = raw.call("COMMAND", "DOCS")
        assert len(everything) == 2 * raw.call("COMMAND", "COUNT")
        assert str(raw.call("COMMAND", "FOO")) == \
            "ERR Unknown subcommand or wrong number of arguments."


# ---------------------------------------------------------------- CLIENT

def test_client_commands(shared):
    with Raw(shared.port) as a, Raw(shared.port) as b:
        id_a = a.call("CLIENT", "ID")
        id_b = b.call("CLIENT", "ID")
        assert isinstance(id_a, int) and isinstance(id_b, int) and id_a != id_b
        assert a.call("CLIENT", "GETNAME") is None
        assert a.call("CLIENT", "SETNAME", "alpha") == b"OK"
        assert a.call("CLIENT", "GETNAME") == b"alpha"
        assert str(a.call("CLIENT", "SETNAME", "a b")).startswith(
            "ERR Client names cannot contain spaces")
        assert a.call("CLIENT", "SETINFO", "LIB-NAME", "mylib") == b"OK"
        assert a.call("CLIENT", "SETINFO", "LIB-VER", "1.2") == b"OK"
        assert str(a.call("CLIENT", "SETINFO", "FOO", "x")).startswith("ERR")
        listing = a.call("CLIENT", "LIST").decode()
        line = [ln for ln in listing.splitlines() if f"id={id_a} " in ln][0]
        assert "name=alpha" in line and "lib-name=mylib" in line and "lib-ver=1.2" in line
        fds = [int(ln.split(" fd=")[1].split()[0]) for ln in listing.splitlines()]
        assert len(set(fds)) == len(fds) and min(fds) > 2  # each client's own socket
        assert f"id={id_b} " in listing
        assert str(a.call("CLIENT", "FOO")).startswith("ERR Syntax error, try CLIENT")
        # KILL by ID
        assert a.call("CLIENT", "KILL", "ID", id_b) == 1
        with pytest.raises((ConnectionError, OSError)):
            b.call("PING")
            b.call("PING")
        assert a.call("CLIENT", "KILL", "ID", id_b) == 0
        # old form by address
        with Raw(shared.port) as d:
            id_d = d.call("CLIENT", "ID")
            addr = [ln for ln in a.call("CLIENT", "LIST").decode().splitlines()
                    if f"id={id_d} " in ln][0].split()[1][5:]
            assert a.call("CLIENT", "KILL", addr) == b"OK"
            assert d.read_all_until_closed() == b""
        assert str(a.call("CLIENT", "KILL", "1.2.3.4:5")) == "ERR No such client"
        assert a.call("PING") == b"PONG"  # skipme: a survives


def test_client_reply(shared):
    with Raw(shared.port) as raw:
        raw.send_command("CLIENT", "REPLY", "OFF")
        raw.send_command("ADDJOB", "silent", "x", 0)
        raw.send_command("CLIENT", "REPLY", "SKIP")  # (still off: no reply)
        raw.send_command("CLIENT", "REPLY", "ON")
        assert raw.reply() == b"OK"
        raw.send_command("CLIENT", "REPLY", "SKIP")
        raw.send_command("QLEN", "silent")  # skipped
        assert raw.call("QLEN", "silent") == 1


# ----------------------------------------------------------------- DEBUG

def test_debug_flushall_and_sleep(c):
    c.execute_command("ADDJOB", "q", "x", 0)
    assert c.execute_command("DEBUG", "FLUSHALL") == b"OK"
    assert c.info("jobs")["registered_jobs"] == 0
    assert c.info("queues")["registered_queues"] == 0
    start = time.monotonic()
    assert c.execute_command("DEBUG", "SLEEP", "0.2") == b"OK"
    assert time.monotonic() - start >= 0.19
    with pytest.raises(redis.ResponseError, match="Unknown DEBUG subcommand"):
        c.execute_command("DEBUG", "NOSUCH")


def test_debug_flushall_unblocks_getjob_with_nil(c, shared):
    with Raw(shared.port) as consumer:
        consumer.send_command("GETJOB", "FROM", "q")
        wait_for(lambda: c.info("clients")["blocked_clients"] == 1)
        c.execute_command("DEBUG", "FLUSHALL")
        assert consumer.reply() is None  # *-1, as Disque
        assert c.info("clients")["blocked_clients"] == 0
        c.execute_command("ADDJOB", "q", "x", 0)
        assert c.execute_command("QLEN", "q") == 1
        assert consumer.call("PING") == b"PONG"


# --------------------------------------------------------------- SLOWLOG

def test_slowlog(c):
    c.execute_command("SLOWLOG", "RESET")
    c.config_set("slowlog-log-slower-than", 0)
    try:
        c.execute_command("ADDJOB", "slow", "x", 0)
        entries = c.execute_command("SLOWLOG", "GET", 100)
        assert any(e[3][:2] == [b"ADDJOB", b"slow"] for e in entries)
        assert c.execute_command("SLOWLOG", "LEN") >= 1
        assert len(c.execute_command("SLOWLOG", "GET", 1)) == 1
        assert c.execute_command("SLOWLOG", "RESET") == b"OK"
    finally:
        c.config_set("slowlog-log-slower-than", 10000)
    assert c.execute_command("SLOWLOG", "LEN") <= 1
    with pytest.raises(redis.ResponseError, match="Unknown SLOWLOG subcommand"):
        c.execute_command("SLOWLOG", "FOO")


# --------------------------------------------------------------- MONITOR

def test_monitor(c, shared):
    with Raw(shared.port) as mon:
        assert mon.call("MONITOR") == b"OK"
        c.execute_command("ADDJOB", "watched", "hello", 0)
        wait_for(lambda: b"watched" in mon.pending(0.1) or None, timeout=5,
                 message="MONITOR line")


def test_monitor_line_format(c, shared):
    with Raw(shared.port) as mon:
        mon.call("MONITOR")
        mon.send_command("MONITOR")  # a second one is ignored: no reply
        addr = c.client_info()["addr"]
        c.execute_command("QLEN", "watched")
        c.execute_command("ECHO", b'a"b\\c\r\n\x00\xff')
        line = mon.read_line()
        while b"QLEN" not in line:
            line = mon.read_line()
        # Disque's form: +<sec>.<usec> [ip:port] "ARG" ...
        stamp, rest = line[1:].split(b" ", 1)
        assert line.startswith(b"+") and abs(float(stamp) - time.time()) < 5
        assert len(stamp.split(b".")[1]) == 6
        assert rest == b'[%s] "QLEN" "watched"\r\n' % addr.encode()
        # every byte quoted C-style: still one line
        line = mon.read_line()
        rest = line[1:].split(b" ", 1)[1]
        assert rest == b'[%s] "ECHO" "a\\"b\\\\c\\r\\n\\x00\\xff"\r\n' % addr.encode()
