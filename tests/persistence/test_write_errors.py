"""The disk refuses writes: writers get -MISCONF, readers keep working, the
command whose record could not be written waits, and everything recovers
once writes succeed again.  Two real ways to make writes fail: the
process's file size limit (RLIMIT_FSIZE, set on the running server with
prlimit; works for any user), and a genuinely full filesystem (a tiny
tmpfs, when this machine lets us mount one)."""

import os
import resource
import subprocess
import tempfile
import threading

import pytest
import redis

from tests.harness import Server, wait_for
from tests.persistence.util import all_job_ids, aof_path, persistence


def misconf(client, *command):
    try:
        client.execute_command(*command)
    except redis.ResponseError as exc:
        return str(exc)
    return None


def set_file_limit(server, soft):
    _, hard = resource.prlimit(server.proc.pid, resource.RLIMIT_FSIZE)
    resource.prlimit(server.proc.pid, resource.RLIMIT_FSIZE, (soft, hard))


class Writer:
    """ADDJOB in a loop from a thread until ``stop`` is set: once the disk
    refuses writes, its last ADDJOB is not answered until it recovers."""

    def __init__(self, server, body):
        self.client = server.client()
        self.body = body
        self.answered = []
        self.errors = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            try:
                self.answered.append(self.client.execute_command("ADDJOB", "q", self.body, 0))
            except redis.ResponseError as exc:
                self.errors.append(str(exc))
                return

    def finish(self):
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()


def is_misconf(reply):
    return reply is not None and reply.startswith("MISCONF Errors writing to the AOF file: ")


@pytest.mark.parametrize("policy", ["everysec", "always"])
def test_file_size_limit_gives_misconf_then_recovers(make_server, policy):
    server = make_server(config=f"appendonly yes\nappendfsync {policy}\n")
    c = server.client()
    before = [c.execute_command("ADDJOB", "q", "b%d" % i, 0) for i in range(5)]
    set_file_limit(server, os.path.getsize(aof_path(server)) + 1000)
    writer = Writer(server, "x" * 200)
    wait_for(lambda: persistence(c)["aof_last_write_status"] == "err", 10,
             message="the write error")
    count = len(writer.answered)
    writer.stop.set()
    assert not writer.thread.join(0.3) and writer.thread.is_alive()
    assert len(writer.answered) == count  # its ADDJOB waits: the record is not on disk
    # A short write is reported as ENOSPC (as Disque), a refused one as EFBIG.
    assert misconf(c, "PING") in (
        "MISCONF Errors writing to the AOF file: File too large",
        "MISCONF Errors writing to the AOF file: No space left on device")
    for command in (("ADDJOB", "q", "y", 0), ("GETJOB", "NOHANG", "FROM", "q"),
                    ("ACKJOB", before[0])):
        assert is_misconf(misconf(c, *command))
    assert c.execute_command("QLEN", "q") == 5 + count + 1  # reads still work
    assert persistence(c)["aof_last_write_error"]
    assert "Error writing to the AOF file" in server.log()

    set_file_limit(server, resource.RLIM_INFINITY)
    wait_for(lambda: not misconf(c, "PING"), 5, message="recovery")
    writer.finish()
    assert len(writer.answered) == count + 1 and not writer.errors
    assert persistence(c)["aof_last_write_status"] == "ok"
    assert "AOF write error looks solved" in server.log()
    after = c.execute_command("ADDJOB", "q", "after", 0)

    server.kill()
    server.start()
    assert all_job_ids(server.client()) == set(before + writer.answered + [after])


def test_file_size_limit_on_a_rewrite(make_server):
    """A rewrite that cannot write its file fails cleanly, and the old file
    keeps receiving records."""
    server = make_server(config="appendonly yes\n")
    c = server.client()
    ids = [c.execute_command("ADDJOB", "q", "z" * 500, 0) for i in range(30)]
    set_file_limit(server, 4000)  # the current file is already larger
    assert c.execute_command("BGREWRITEAOF")
    wait_for(lambda: persistence(c)["aof_last_bgrewrite_status"] == "err", 10,
             message="the rewrite to fail")
    assert persistence(c)["aof_rewrite_in_progress"] == 0
    assert not [n for n in os.listdir(server.dir) if n.startswith("temp-rewriteaof")]
    assert "Background AOF rewrite terminated with error" in server.log()
    set_file_limit(server, resource.RLIM_INFINITY)
    more = c.execute_command("ADDJOB", "q", "more", 0)
    assert c.execute_command("BGREWRITEAOF")
    wait_for(lambda: persistence(c)["aof_last_bgrewrite_status"] == "ok", 10,
             message="a successful rewrite")
    server.kill()
    server.start()
    assert all_job_ids(server.client()) == set(ids + [more])


@pytest.fixture
def tiny_fs():
    """A 512 KB tmpfs, or skip where mounting is not allowed."""
    directory = tempfile.mkdtemp(prefix="trisque-fullfs-")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", directory],
                          capture_output=True)
    if done.returncode != 0:
        os.rmdir(directory)
        pytest.skip("cannot mount a tmpfs here (needs root): the RLIMIT_FSIZE "
                    "tests cover write errors")
    yield directory
    subprocess.run(["umount", "-l", directory], capture_output=True)
    os.rmdir(directory)


def test_full_disk_gives_misconf_then_recovers(tiny_fs):
    server = Server(directory=tiny_fs, config="appendonly yes\nappendfsync everysec\n")
    server.start()
    try:
        c = server.client()
        before = [c.execute_command("ADDJOB", "q", "b%d" % i, 0) for i in range(5)]
        filler = os.path.join(tiny_fs, "filler")
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        os.truncate(filler, os.path.getsize(filler) - 16384)  # about 16 KB free
        writer = Writer(server, "x" * 1000)
        wait_for(lambda: persistence(c)["aof_last_write_status"] == "err", 10,
                 message="disk full")
        writer.stop.set()
        assert misconf(c, "PING") == ("MISCONF Errors writing to the AOF file: "
                                      "No space left on device")
        assert writer.thread.is_alive()
        os.unlink(filler)
        wait_for(lambda: not misconf(c, "PING"), 5, message="recovery")
        writer.finish()
        server.kill()
        server.start()
        assert all_job_ids(server.client()) == set(before + writer.answered)
    finally:
        server.stop()
