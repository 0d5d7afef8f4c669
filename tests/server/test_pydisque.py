"""pydisque, the most used Python Disque client, and dwq, a work queue
built on it, against real trisque-server processes.

redis-py 8 speaks RESP3 by default, and pydisque reads every reply as
Disque's RESP2 arrays: these show that Disque's commands keep that shape
on RESP3 connections, with RESP3's nulls, which redis-py's pure-Python
parser (no hiredis installed) needs.  The packages (pinned) are installed on first use
into the test cache and run in child interpreters (tests/client_libs.py);
the programs they run are pydisque_api.py and dwq_client.py here.
"""

import glob
import os
import signal
import subprocess
import sys

import pytest

from tests.client_libs import child_env, dwq, pydisque, redis_py, run_python, without_hiredis
from tests.harness import Server

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("parser", ["hiredis", "pure"])
@pytest.mark.parametrize("major", [7, 8])
def test_pydisque_api(server: Server, major: int, parser: str) -> None:
    """add_job, get_job (WITHCOUNTERS, NOHANG), ack_job, nack_job, show,
    qstat, qpeek, qlen, info, hello, qscan: RESP2 with redis-py 7, RESP3
    with redis-py 8, the same replies; with hiredis's parser and with
    redis-py's own (a plain ``pip install redis pydisque``), whose RESP3
    parser reads ``$-1`` as a length and waits: show() of an acknowledged
    job hung there until RESP3 connections got RESP3's null."""
    paths = [redis_py(major), pydisque()]
    if parser == "pure":
        paths.insert(0, without_hiredis())
    proc = run_python(paths, [os.path.join(HERE, "pydisque_api.py"), str(server.port),
                              str(major), parser])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"ok {major}.")


@pytest.mark.parametrize("parser", ["hiredis", "pure"])
def test_dwq_worker_flow_on_redis_py_8(server: Server, parser: str) -> None:
    """A real dwq worker (dwqw) serves jobs submitted and watched with dwq's
    client calls, over redis-py 8 (RESP3), with hiredis's parser and with
    redis-py's own: blocking GETJOB WITHCOUNTERS, ADDJOB of results to
    control queues, ACKJOB, NACK and redelivery, GETJOB + FASTACK, QSTAT,
    and a shutdown by control job."""
    paths = [redis_py(8), dwq()]
    if parser == "pure":
        paths.insert(0, without_hiredis())
    before = set(glob.glob("/tmp/dwq.*"))
    worker = subprocess.Popen(
        [sys.executable, "-c", "from dwq.dwqw import main; main()",
         "-D", f"127.0.0.1:{server.port}", "-q", "dwq-test", "-j", "2", "-n", "w1"],
        env=child_env(paths), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True)  # its command servers die with it
    try:
        proc = run_python(paths, [os.path.join(HERE, "dwq_client.py"), str(server.port)])
        if proc.returncode == 0:
            worker.wait(timeout=20)  # the shutdown control job ends it
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
        output, _ = worker.communicate()
        # dwqw makes /tmp/dwq.<random> for git checkouts; ours stays empty
        for path in set(glob.glob("/tmp/dwq.*")) - before:
            try:
                os.rmdir(path)
            except OSError:
                pass
    assert proc.returncode == 0, proc.stderr + "\nworker:\n" + output
    assert proc.stdout == "ok\n"
    assert worker.returncode == 0, output
    assert "uncaught exception" not in output, output
