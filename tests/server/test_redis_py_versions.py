"""Other redis-py major versions (5, 6, 7) against trisque, each in its own
interpreter.  Opt-in, because it needs those versions installed somewhere:

    TRISQUE_REDIS_PY_PYTHONS="/venv5/bin/python /venv6/bin/python" pytest tests/server/test_redis_py_versions.py

(e.g. ``pip download 'redis==5.0.*' --no-deps`` and ``pip install --no-deps``
into a fresh venv).  The installed redis-py (8) is covered by every other
test here.
"""

import os
import subprocess

import pytest

PYTHONS = os.environ.get("TRISQUE_REDIS_PY_PYTHONS", "").split()

CHECK = r"""
import sys, redis
port, password = int(sys.argv[1]), sys.argv[2] or None
for kwargs in ({}, {"protocol": 2}, {"protocol": 3}):
    try:
        r = redis.Redis(host="127.0.0.1", port=port, password=password, **kwargs)
    except TypeError:  # a version without the protocol option
        continue
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


@pytest.mark.skipif(not PYTHONS, reason="set TRISQUE_REDIS_PY_PYTHONS to interpreters "
                    "with other redis-py versions (see the module docstring)")
@pytest.mark.parametrize("python", PYTHONS)
@pytest.mark.parametrize("password", ["", "pw"])
def test_other_redis_py(make_server, python, password):
    srv = make_server(config=f"requirepass {password}\n" if password else "")
    proc = subprocess.run([python, "-c", CHECK, str(srv.port), password],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok")
