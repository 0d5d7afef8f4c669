import os

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


# make test runs the suite on pytest-xdist workers (-n 2 --dist loadgroup).
# A unit of work is a test module: its module-scoped servers and clusters
# start once and its tests run in order, as without xdist.  The modules of
# a group below need something alone: a group is one unit, so they run on
# one worker, one after the other.  The groups go first: they are the
# longest units, and a long one last would leave the other worker idle.
# A table rather than xdist_group marks: with pytest 9.2, xdist 3.8 drops
# the marks silently (pytest-dev/pytest-xdist#1386).
RUN_ALONE = {
    # one Chromium at a time
    "chromium": ("tests/server/test_dashboard.py", "tests/server/test_dashboard_dead_letters.py",
                 "tests/cluster/test_dashboard_cluster.py"),
    # the host's network: bridges, namespaces and addresses in 198.18.0.0/15
    # (free_subnet() cannot see the one a dockerd is about to take)
    "host-network": ("tests/deploy/test_compose.py", "tests/cluster/test_hosts.py",
                     "tests/server/test_protected_mode.py"),
    "spark": ("tests/spark/",),  # one SparkSession (~1.3 GB, a JVM) for them all
    "bench": ("tests/server/test_bench_",),  # the benchmarks' smoke runs load the machine
}


def unit_of(nodeid):
    """The unit of work of a test: its group in RUN_ALONE, or its module."""
    module = nodeid.split("::", 1)[0]
    if module.startswith("tests/sim/"):
        # the simulator's seeds start no process and share nothing: a unit
        # each, so the last modules of the order spread over the workers
        return nodeid
    for group, prefixes in RUN_ALONE.items():
        if module.startswith(prefixes):
            return group
    return module


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModulesAndGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return unit_of(nodeid)
    config.option.loadscopereorder = False  # the workers' order (below), not by size
    return ModulesAndGroups(config, log)


def pytest_collection_modifyitems(config, items):
    # on each worker (the same order on all: the scheduler checks)
    if os.environ.get("PYTEST_XDIST_WORKER") and config.getvalue("loadgroup"):
        items.sort(key=lambda item: unit_of(item.nodeid) not in RUN_ALONE)


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
