"""redis-cli against trisque: one-shot commands and the interactive mode
(which loads COMMAND DOCS for its help)."""

import os
import select
import shutil
import subprocess
import time

import pytest

REDIS_CLI = shutil.which("redis-cli")
pytestmark = pytest.mark.skipif(
    REDIS_CLI is None,
    reason="redis-cli is not installed (apt-get install redis-tools); CI installs it")


def cli(port, *args, stdin=None):
    proc = subprocess.run([REDIS_CLI, "-p", str(port), *map(str, args)],
                          input=stdin, capture_output=True, timeout=20)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode()


def test_one_shot_commands(c, shared):
    port = shared.port
    job_id = cli(port, "ADDJOB", "q", "hello world", 0).strip()
    assert job_id.startswith("D-") and len(job_id) == 40
    assert cli(port, "QLEN", "q").strip() == "1"
    out = cli(port, "GETJOB", "NOHANG", "FROM", "q").splitlines()
    assert out == ["q", job_id, "hello world"]
    assert cli(port, "ACKJOB", job_id).strip() == "1"
    assert cli(port, "GETJOB", "NOHANG", "FROM", "q").strip() == ""
    assert cli(port, "PING").strip() == "PONG"
    assert "registered_jobs:0" in cli(port, "INFO", "jobs")
    err = cli(port, "ADDJOB", "q", "x", 0, "REPLICATE", 2)
    assert "NOREPL" in err


def test_hello_shape(shared):
    out = cli(shared.port, "HELLO").splitlines()
    assert out[0] == "1" and len(out[1]) == 40
    assert out[2:] == [out[1], "127.0.0.1", str(shared.port), "1"]


def test_resp3_mode(shared):
    out = cli(shared.port, "-3", "SHOW", "D-12345678-aaaaaaaaaaaaaaaaaaaaaaaa-0001")
    assert out.strip() in ("", "(nil)")
    job_id = cli(shared.port, "-3", "ADDJOB", "r3", "x", 0).strip()
    out = cli(shared.port, "-3", "SHOW", job_id)
    assert "queued" in out and "r3" in out


def test_pipe_of_commands(c, shared):
    commands = "".join("ADDJOB piped job%d 0\n" % i for i in range(50))
    out = cli(shared.port, stdin=commands.encode())
    assert len(out.split()) == 50
    assert c.execute_command("QLEN", "piped") == 50


def test_interactive_help_uses_command_docs(shared):
    pid, fd = os.forkpty()
    if pid == 0:  # child
        os.environ["TERM"] = "dumb"
        os.execv(REDIS_CLI, [REDIS_CLI, "-p", str(shared.port)])

    def read_until(marker, timeout=10):
        out = b""
        deadline = time.monotonic() + timeout
        while marker not in out and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
        return out

    prompt = b"127.0.0.1:%d> " % shared.port
    try:
        assert prompt in read_until(prompt)
        os.write(fd, b"help ADDJOB\r")
        out = read_until(prompt)
        assert b"ADDJOB" in out and b"REPLICATE" in out and b"jobs" in out
        os.write(fd, b"ADDJOB tty x 0\r")
        out = read_until(prompt)
        assert b"D-" in out
        os.write(fd, b"quit\r")
        read_until(b"\n", timeout=2)
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        os.close(fd)
