"""Client libraries the tests run against in versions other than the test
environment's own (redis-py 5-8, pydisque, dwq, arq).

Each set of packages is installed once with ``pip install --target`` into
a cache beside the test environment (``<venv>/trisque-test-cache``), and
used by a child interpreter that has those folders first on its path, so
they shadow the environment's packages there and nowhere else.  Needs PyPI
the first time.  ``without_hiredis()`` hides hiredis the same way: redis-py
then parses with its own pure-Python parsers.
"""

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence

CACHE = os.path.join(sys.prefix, "trisque-test-cache")
TESTS = os.path.dirname(os.path.abspath(__file__))

# Pinned, so that a new release cannot change what a test exercises.
PYDISQUE = ("pydisque==0.1.5",)
# dwq depends on pydisque-dwq, its fork of pydisque (same client, one
# keyword renamed); both provide the ``pydisque`` package.
DWQ = ("dwq==0.1.0", "pydisque-dwq==0.1.5")
# arq pins redis-py < 6: with its own redis-py, beside the environment's.
ARQ = ("arq==0.28.0",)


def installed(folder: str, requirements: Sequence[str], deps: bool = True) -> str:
    """The cache folder holding ``requirements``, installed on first use.

    Installed beside it and renamed into place, so a concurrent test run
    never sees a half-installed folder."""
    target = os.path.join(CACHE, folder)
    if os.path.isdir(target):
        return target
    os.makedirs(CACHE, exist_ok=True)
    partial = f"{target}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    command = [sys.executable, "-m", "pip", "install", "-q",
               "--disable-pip-version-check", "--target", partial]
    if not deps:
        command.append("--no-deps")
    proc = subprocess.run(command + list(requirements),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"installing {' '.join(requirements)}: {proc.stderr}"
    try:
        os.rename(partial, target)
    except OSError:  # another run installed it first
        shutil.rmtree(partial, ignore_errors=True)
    return target


def redis_py(major: int) -> str:
    """The folder holding redis-py ``major``.x."""
    return installed(f"redis-py-{major}", [f"redis>={major},<{major + 1}"])


def pydisque() -> str:
    """pydisque alone (it imports nothing but redis-py, which comes from
    another folder: one pydisque for every redis-py version)."""
    return installed("pydisque-0.1.5", PYDISQUE, deps=False)


def dwq() -> str:
    """dwq and its pydisque fork, without redis-py."""
    return installed("dwq-0.1.0", DWQ, deps=False)


def arq() -> str:
    """arq and its dependencies (redis-py 5, click)."""
    return installed("arq-0.28.0", ARQ)


def without_hiredis() -> str:
    """A folder whose ``hiredis`` module refuses to import: first on a
    child's path, it hides the environment's hiredis, so redis-py falls back
    to its pure-Python parsers (as after a plain ``pip install redis``)."""
    target = os.path.join(CACHE, "no-hiredis")
    if os.path.isdir(target):
        return target
    os.makedirs(CACHE, exist_ok=True)
    partial = f"{target}.partial-{os.getpid()}"
    os.makedirs(partial, exist_ok=True)
    with open(os.path.join(partial, "hiredis.py"), "w") as f:
        f.write('raise ImportError("hiredis hidden by tests/client_libs.py")\n')
    try:
        os.rename(partial, target)
    except OSError:  # another run made it first
        shutil.rmtree(partial, ignore_errors=True)
    return target


def child_env(paths: Sequence[str]) -> dict[str, str]:
    """The environment of a child interpreter that imports from ``paths``
    first."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths))


def run_python(paths: Sequence[str], args: Sequence[str],
               timeout: float = 60) -> "subprocess.CompletedProcess[str]":
    """Run ``python args...`` with ``paths`` first on its path."""
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout, env=child_env(paths))
