"""Older redis-py major versions (5, 6, 7) against trisque, with their
default settings and with RESP 2 and 3.  The installed redis-py (8) is
covered by every other test here; every version, 8 too, also without
hiredis (redis-py's pure-Python parsers, which read no RESP2 null on a
RESP3 connection: ``$-1`` there left them waiting for -1 bytes).

Each version is installed on first use into the test cache and run in a
child interpreter (tests/client_libs.py).
"""

import pytest

from tests.client_libs import redis_py, run_python, without_hiredis

MAJORS = (5, 6, 7)

CHECK = r"""
import sys, redis, redis.utils
from redis.backoff import NoBackoff
from redis.retry import Retry
major, parser = int(sys.argv[3]), sys.argv[4]
assert redis.__version__.startswith(f"{major}."), redis.__version__
assert redis.utils.HIREDIS_AVAILABLE == (parser == "hiredis"), parser
port, password = int(sys.argv[1]), sys.argv[2] or None
for kwargs in ({}, {"protocol": 2}, {"protocol": 3}):
    # a reply the parser cannot finish fails in 2 s, no retries
    r = redis.Redis(host="127.0.0.1", port=port, password=password, socket_timeout=2,
                    retry=Retry(NoBackoff(), 0), **kwargs)
    assert r.ping()
    job_id = r.execute_command("ADDJOB", "compat", "body", 0)
    info = r.execute_command("SHOW", job_id)
    assert isinstance(info, list), info  # Disque's shape, RESP2 or RESP3
    info = dict(zip(info[::2], info[1::2]))
    assert info[b"state"] == b"queued", info
    [[queue, got, body]] = r.execute_command("GETJOB", "NOHANG", "FROM", "compat")
    assert (queue, got, body) == (b"compat", job_id, b"body")
    assert r.execute_command("ACKJOB", job_id) == 1
    assert r.info("jobs")["registered_jobs"] == 0
    assert r.execute_command("GETJOB", "NOHANG", "FROM", "compat") is None
    assert r.execute_command("SHOW", job_id) is None  # acknowledged: gone
    assert r.execute_command("QSTAT", "no-such-queue") is None
    once = r.execute_command("ADDJOB", "compat", "once", 0, "RETRY", 0)
    info = r.execute_command("SHOW", once)  # a null field in Disque's array
    assert dict(zip(info[::2], info[1::2]))[b"next-requeue-within"] is None, info
    assert r.execute_command("DELJOB", once) == 1
    assert r.get("no-such-key") is None
    r.close()
print("ok", redis.__version__)
"""


@pytest.mark.parametrize("major", MAJORS)
@pytest.mark.parametrize("password", ["", "pw"])
def test_older_redis_py(make_server, major, password):
    path = redis_py(major)
    srv = make_server(config=f"requirepass {password}\n" if password else "")
    proc = run_python([path], ["-c", CHECK, str(srv.port), password, str(major), "hiredis"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"ok {major}.")


@pytest.mark.parametrize("major", MAJORS + (8,))
def test_redis_py_without_hiredis(server, major):
    """A plain ``pip install redis``: redis-py's own parsers, RESP2 and 3."""
    proc = run_python([without_hiredis(), redis_py(major)],
                      ["-c", CHECK, str(server.port), "", str(major), "pure"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"ok {major}.")
