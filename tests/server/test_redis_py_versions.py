"""Older redis-py major versions (5, 6, 7) against trisque, with their
default settings and with RESP 2 and 3.  The installed redis-py (8) is
covered by every other test here.

Each version is installed once with ``pip install --target`` into a cache
beside the test environment (``<venv>/trisque-test-cache``) and run in a
child interpreter with that folder first on its path, so it shadows the
installed redis-py 8 there and nowhere else.  Needs PyPI the first time.
"""

import os
import subprocess
import sys

import pytest

MAJORS = (5, 6, 7)
CACHE = os.path.join(sys.prefix, "trisque-test-cache")

CHECK = r"""
import sys, redis
major = int(sys.argv[3])
assert redis.__version__.startswith(f"{major}."), redis.__version__
port, password = int(sys.argv[1]), sys.argv[2] or None
for kwargs in ({}, {"protocol": 2}, {"protocol": 3}):
    r = redis.Redis(host="127.0.0.1", port=port, password=password, **kwargs)
    assert r.ping()
    job_id = r.execute_command("ADDJOB", "compat", "body", 0)
    info = r.execute_command("SHOW", job_id)
    info = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2]))
    assert info[b"state"] == b"queued", info
    [[queue, got, body]] = r.execute_command("GETJOB", "NOHANG", "FROM", "compat")
    assert (queue, got, body) == (b"compat", job_id, b"body")
    assert r.execute_command("ACKJOB", job_id) == 1
    assert r.info("jobs")["registered_jobs"] == 0
    assert r.execute_command("GETJOB", "NOHANG", "FROM", "compat") is None
    r.close()
print("ok", redis.__version__)
"""


def redis_py(major):
    """The folder holding redis-py ``major``.x, installed on first use."""
    target = os.path.join(CACHE, f"redis-py-{major}")
    if not os.path.isdir(os.path.join(target, "redis")):
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q",
             "--disable-pip-version-check", "--target", target,
             f"redis>={major},<{major + 1}"],
            capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"installing redis-py {major}: {proc.stderr}"
    return target


@pytest.mark.parametrize("major", MAJORS)
@pytest.mark.parametrize("password", ["", "pw"])
def test_older_redis_py(make_server, major, password):
    path = redis_py(major)
    srv = make_server(config=f"requirepass {password}\n" if password else "")
    env = dict(os.environ, PYTHONPATH=path)
    proc = subprocess.run([sys.executable, "-c", CHECK, str(srv.port), password, str(major)],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"ok {major}.")
