"""Fixtures for tests against a real trisque-server process.

Starting a server costs about half a second, so most tests share one per
module (``shared``) and start from an empty node (``c``, ``c3`` run DEBUG
FLUSHALL first).  Tests that need their own configuration use
``make_server`` from tests/conftest.py.
"""

import shutil
import socket
import subprocess

import pytest

from tests.harness import Server, free_port, wait_for

REDIS_SERVER = shutil.which("redis-server")  # the differential tests' reference


@pytest.fixture(scope="module")
def shared():
    srv = Server().start()
    yield srv
    srv.cleanup()


@pytest.fixture
def c(shared):
    """RESP2 redis-py client of the module's server, emptied."""
    client = shared.client()
    client.execute_command("DEBUG", "FLUSHALL")
    yield client
    client.close()


@pytest.fixture
def c3(shared):
    """RESP3 redis-py client (HELLO 3) of the module's server, emptied."""
    client = shared.client(protocol=3)
    client.execute_command("DEBUG", "FLUSHALL")
    yield client
    client.close()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def any_c(shared, request):
    """The same test once over RESP2 and once over RESP3."""
    client = shared.client(protocol=request.param)
    client.execute_command("DEBUG", "FLUSHALL")
    client.proto = request.param
    yield client
    client.close()


@pytest.fixture(scope="module")
def redis_port(tmp_path_factory):
    """A redis-server of the module's own (tests comparing replies with
    Redis's skip themselves when REDIS_SERVER is None)."""
    port = free_port()
    proc = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path_factory.mktemp("redis"))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: _connects(port), message="redis-server up")
    yield port
    proc.kill()
    proc.wait()


def _connects(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False
