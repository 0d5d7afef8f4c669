import pytest

from tests.browser import open_browser
from tests.harness import Server
from trisque.core.admin.build_form import stale_sources


def pytest_sessionstart(session):
    # An editable install's compiled core shadows its sources: an edit
    # would go untested (make test builds it again; so does pip install -e .).
    stale = stale_sources()
    if stale:
        raise pytest.UsageError("compiled core older than its sources (make, or "
                                "pip install -e . again): " + ", ".join(stale))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item, so a fixture's teardown
    can tell whether the test failed (harness.call_failed)."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, "report_" + report.when, report)


@pytest.fixture
def server():
    srv = Server().start()
    yield srv
    srv.cleanup()


@pytest.fixture
def make_server():
    """Start servers with custom config; all are cleaned up afterwards."""
    started = []

    def make(config="", args=(), **kwargs):
        srv = Server(config=config, args=args, **kwargs).start()
        started.append(srv)
        return srv
    yield make
    for srv in started:
        srv.cleanup()


@pytest.fixture
def r(server):
    """A RESP2 redis-py client of a fresh server."""
    client = server.client()
    yield client
    client.close()


@pytest.fixture
def r3(server):
    """A RESP3 redis-py client (HELLO 3) of the same fresh server."""
    client = server.client(protocol=3)
    yield client
    client.close()


@pytest.fixture
def browser():
    """Headless Chromium (tests/browser.py); tests that use it are marked
    ``needs_browser``."""
    yield from open_browser()
