"""Fixtures for tests against a real trisque-server process.

Starting a server costs about half a second, so most tests share one per
module (``shared``) and start from an empty node (``c``, ``c3`` run DEBUG
FLUSHALL first).  Tests that need their own configuration use
``make_server`` from tests/conftest.py.
"""

import pytest

from tests.harness import Server


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
