"""The trisque-server command line: --help, --version, config file and
--directive overrides, config errors (file, line, exit code 1), dir, pidfile,
log lines, signals and SHUTDOWN."""

import os
import re
import signal
import socket
import subprocess

import pytest

from trisque.server.main import main

from tests.harness import free_port, server_command, wait_for
from tests.server.util import Raw


def run(args, cwd=None, timeout=20):
    return subprocess.run(server_command() + list(args), capture_output=True,
                          timeout=timeout, cwd=cwd, text=True)


def test_help(capsys):
    proc = run(["--help"])
    assert proc.returncode == 0
    assert "Usage: trisque-server" in proc.stdout
    assert "--port" in proc.stdout
    assert main(["-h"]) == 0
    assert capsys.readouterr().out == proc.stdout


def test_version(capsys):
    proc = run(["--version"])
    assert proc.returncode == 0
    assert re.search(r"v=\d+\.\d+\.\d+", proc.stdout), proc.stdout
    assert main(["-v"]) == 0
    assert capsys.readouterr().out == proc.stdout


@pytest.fixture
def tmp(tmp_path):
    return tmp_path


def write(path, text):
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("line,reason", [
    ("nosuchdirective 1", "Bad directive or wrong number of arguments"),
    ("port abc", "argument must be an integer"),
    ("port 70000", "argument must be between"),
    ("loglevel loud", "argument must be one of"),
    ("maxmemory lots", "argument must be a memory value"),
    ("appendonly maybe", "argument must be 'yes' or 'no'"),
    ('logfile "unterminated', "Unbalanced quotes"),
    ("port 1 2", "wrong number of arguments"),
    ("dir /nonexistent/trisque/dir", "Can't chdir to"),
])
def test_bad_config_line(tmp, line, reason, capsys, monkeypatch):
    # in-process (main() returns the exit code before anything starts);
    # test_bad_config_exit_code checks the real process once
    monkeypatch.chdir(tmp)
    conf = write(tmp / "bad.conf", f"# a comment\n\nport {free_port()}\n{line}\nbind 127.0.0.1\n")
    assert main([conf]) == 1
    err = capsys.readouterr().err
    assert "bad.conf" in err, err
    assert "line 4" in err, err
    assert line in err
    assert reason in err, err


def test_bad_config_exit_code(tmp):
    conf = write(tmp / "bad.conf", f"port {free_port()}\nnosuchdirective 1\n")
    proc = run([conf])
    assert proc.returncode == 1
    assert "bad.conf" in proc.stderr and "line 2" in proc.stderr, proc.stderr
    assert "Bad directive or wrong number of arguments" in proc.stderr


@pytest.mark.parametrize("args,message", [
    (["--port", "abc"], "argument must be an integer"),
    (["--nosuch", "1"], "Bad directive"),
    (["--port"], "wrong number of arguments"),
    (["stray-arg", "--port", "1"], "stray-arg"),
])
def test_bad_command_line_option(tmp, args, message, capsys, monkeypatch):
    monkeypatch.chdir(tmp)
    assert main(args) == 1
    assert message in capsys.readouterr().err


def test_missing_config_file(tmp, capsys):
    assert main([str(tmp / "nope.conf")]) == 1
    assert "nope.conf" in capsys.readouterr().err


def test_port_in_use_exits_1(tmp):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        proc = run(["--port", str(port), "--dir", str(tmp)], timeout=20)
    assert proc.returncode == 1
    assert str(port) in proc.stdout + proc.stderr


def start(args, cwd):
    return subprocess.Popen(server_command() + list(args), cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_up(port, proc):
    def up():
        assert proc.poll() is None, proc.stderr.read()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(10).startswith(b"+PONG")
        except OSError:
            return False
    wait_for(up, 15, message=f"server on {port}")


def stop(proc, sig=signal.SIGTERM):
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            return proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
    return proc.returncode


def test_config_file_overrides_dir_pidfile_and_sigterm(tmp):
    data = tmp / "data dir"
    data.mkdir()
    file_port, port = free_port(), free_port()
    conf = write(tmp / "disque.conf",
                 f'port {file_port}\nbind 127.0.0.1\ndir "{data}"\n'
                 f'logfile "my log.txt"\nloglevel verbose\npidfile "trisque.pid"\n'
                 f"maxmemory 100mb\n")
    proc = start([conf, "--port", str(port), "--maxmemory", "200mb"], cwd=tmp)
    try:
        wait_up(port, proc)
        with Raw(port) as raw:
            # --port won over the file; the file's quoted values were read
            assert raw.call("CONFIG", "GET", "port") == [b"port", str(port).encode()]
            assert raw.call("CONFIG", "GET", "maxmemory") == [b"maxmemory", b"209715200"]
            assert raw.call("CONFIG", "GET", "dir") == [b"dir", str(data).encode()]
            assert raw.call("INFO", "server").decode().count(f"tcp_port:{port}") == 1
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", file_port), timeout=1).close()
        # relative paths landed inside dir
        pidfile = data / "trisque.pid"
        assert pidfile.read_text().strip() == str(proc.pid)
        log = (data / "my log.txt").read_text()
        assert re.search(r"^\d+:M \d\d \w{3} \d{4} \d\d:\d\d:\d\d\.\d{3} [.\-*#] ", log, re.M), log
        assert "Ready to accept connections" in log
    finally:
        code = stop(proc)
    assert code == 0
    assert not pidfile.exists()
    assert "SIGTERM" in (data / "my log.txt").read_text()


def test_sigint_clean_exit(tmp):
    port = free_port()
    proc = start(["--port", str(port), "--dir", str(tmp), "--logfile", "log.txt"], cwd=tmp)
    wait_up(port, proc)
    assert stop(proc, signal.SIGINT) == 0
    assert "SIGINT" in (tmp / "log.txt").read_text()


def test_no_config_file_defaults_to_loopback(tmp):
    port = free_port()
    proc = start(["--port", str(port), "--dir", str(tmp)], cwd=tmp)
    try:
        wait_up(port, proc)
        with Raw(port) as raw:
            assert raw.call("CONFIG", "GET", "bind") == [b"bind", b"127.0.0.1"]
            assert str(raw.call("CONFIG", "REWRITE")) == \
                "ERR Rewriting config file: The server is running without a config file"
    finally:
        assert stop(proc) == 0
    # no logfile: Redis-style lines on stdout
    assert b"Ready to accept connections" in proc.stdout.read()


@pytest.mark.parametrize("bind", [["127.0.0.1", "::1"], ["127.0.0.1 ::1"]])
def test_bind_two_addresses(tmp, bind):
    """--bind a b, or --bind "a b" (as redis-server takes it): both listen."""
    port = free_port()
    proc = start(["--port", str(port), "--dir", str(tmp), "--bind", *bind], cwd=tmp)
    try:
        wait_up(port, proc)
        with Raw(port) as raw:
            assert raw.call("CONFIG", "GET", "bind") == [b"bind", b"127.0.0.1 ::1"]
        with socket.create_connection(("::1", port), timeout=5) as sock:
            sock.sendall(b"PING\r\n")
            assert sock.recv(100) == b"+PONG\r\n"
    finally:
        assert stop(proc) == 0


def test_shutdown_command(make_server):
    srv = make_server(config='pidfile "down.pid"\n')
    pidfile = os.path.join(srv.dir, "down.pid")
    wait_for(lambda: os.path.exists(pidfile))
    with Raw(srv.port) as raw:
        assert str(raw.call("SHUTDOWN", "FOO")) == "ERR syntax error"
        raw.send_command("SHUTDOWN")
        assert raw.read_all_until_closed() == b""
    assert srv.proc.wait(10) == 0
    assert not os.path.exists(pidfile)
    assert "User requested shutdown" in srv.log()


def test_idle_timeout_and_maxclients(make_server):
    srv = make_server(config="timeout 1\n")
    with Raw(srv.port) as idle, Raw(srv.port) as waiting:
        waiting.send_command("GETJOB", "TIMEOUT", 0, "FROM", "q")
        assert idle.call("PING") == b"PONG"
        assert idle.read_all_until_closed(timeout=5) == b""  # closed after ~1 s
        assert waiting.pending(0.2) == b""  # a blocked client stays
        with Raw(srv.port) as admin:
            admin.call("ADDJOB", "q", "x", 0)
            assert waiting.reply()[0][0] == b"q"
            assert admin.call("CONFIG", "SET", "maxclients", 2) == b"OK"
            with Raw(srv.port) as third:
                assert third.read_all_until_closed() == \
                    b"-ERR max number of clients reached\r\n"
