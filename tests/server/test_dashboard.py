"""The dashboard in a real headless Chromium (Debian's chromium and
chromium-driver, driven by selenium): a real node with http-port, jobs
added with redis-py, and the page must show the queue and its length
changing live.  A screenshot is saved under the test's tmp_path."""

from typing import Iterator

import pytest

from tests.browser import needs_browser, queue_cells, start_with_http
from tests.harness import Server, wait_for

pytestmark = needs_browser


@pytest.fixture
def node() -> Iterator[Server]:
    srv = start_with_http()
    yield srv
    srv.cleanup()


def test_dashboard_shows_queue_length_live(node: Server, browser: object, tmp_path: object) -> None:
    from selenium.webdriver.common.by import By
    r = node.client()
    for i in range(7):
        r.execute_command("ADDJOB", "emails", f"mail {i}", 0)
    browser.get(f"http://127.0.0.1:{node.http_port}/")  # type: ignore[attr-defined]
    wait_for(lambda: queue_cells(browser, "emails")[1:2] == ["7"], 15,
             message="the page showing queue emails with 7 jobs")
    # live: the page follows the node without a reload
    for i in range(5):
        r.execute_command("ADDJOB", "emails", f"more {i}", 0)
    r.execute_command("ADDJOB", "reports", "r", 0)
    wait_for(lambda: queue_cells(browser, "emails")[1:2] == ["12"], 15,
             message="the page showing 12 jobs")
    wait_for(lambda: queue_cells(browser, "reports")[1:2] == ["1"], 15,
             message="a second queue appearing")
    jobs = r.execute_command("GETJOB", "COUNT", 10, "FROM", "emails")
    r.execute_command("ACKJOB", *[job_id for _, job_id, _ in jobs])
    wait_for(lambda: queue_cells(browser, "emails")[1:2] == ["2"], 15,
             message="the page showing 2 jobs after GETJOB")
    nodes = browser.execute_script(  # type: ignore[attr-defined]
        "return document.querySelector('#nodes tbody').textContent")
    assert "myself" in nodes and f"127.0.0.1:{node.port}" in nodes
    assert "live" in browser.find_element(By.ID, "status").text  # type: ignore[attr-defined]
    browser.save_screenshot(str(tmp_path / "dashboard.png"))  # type: ignore[attr-defined, operator]
