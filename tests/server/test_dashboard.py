"""The dashboard in a real headless Chromium (Debian's chromium and
chromium-driver, driven by selenium): a real node with http-port, jobs
added with redis-py, and the page must show the queue and its length
changing live.  A screenshot is saved under the test's tmp_path."""

import signal
from typing import Any, Iterator

import pytest

from tests.browser import needs_browser, queue_cells, start_with_http
from tests.harness import Server
from tests.harness import wait_for as wait_until

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
             message="the page showing queue emails with 7 jobs", page=browser)
    # live: the page follows the node without a reload
    for i in range(5):
        r.execute_command("ADDJOB", "emails", f"more {i}", 0)
    r.execute_command("ADDJOB", "reports", "r", 0)
    wait_for(lambda: queue_cells(browser, "emails")[1:2] == ["12"], 15,
             message="the page showing 12 jobs", page=browser)
    wait_for(lambda: queue_cells(browser, "reports")[1:2] == ["1"], 15,
             message="a second queue appearing", page=browser)
    jobs = r.execute_command("GETJOB", "COUNT", 10, "FROM", "emails")
    r.execute_command("ACKJOB", *[job_id for _, job_id, _ in jobs])
    wait_for(lambda: queue_cells(browser, "emails")[1:2] == ["2"], 15,
             message="the page showing 2 jobs after GETJOB", page=browser)
    nodes = browser.execute_script(  # type: ignore[attr-defined]
        "return document.querySelector('#nodes tbody').textContent")
    assert "myself" in nodes and f"127.0.0.1:{node.port}" in nodes
    assert "live" in browser.find_element(By.ID, "status").text  # type: ignore[attr-defined]
    browser.save_screenshot(str(tmp_path / "dashboard.png"))  # type: ignore[attr-defined, operator]


def test_dashboard_says_when_the_node_stops_answering(node: Server, browser: Any) -> None:
    """A node that stops answering (stopped with SIGSTOP: connections are
    accepted by the kernel, nothing answers) turns the page's status to
    "no answer" instead of freezing it, and the page follows the node again
    once it runs."""
    r = node.client()
    r.execute_command("ADDJOB", "emails", "a", 0)
    browser.get(f"http://127.0.0.1:{node.http_port}/")
    wait_for(lambda: queue_cells(browser, "emails")[1:2] == ["1"], 15,
             message="the page showing queue emails", page=browser)
    assert node.proc is not None
    node.proc.send_signal(signal.SIGSTOP)
    try:
        wait_for(lambda: "no answer" in status_text(browser), 20,
                 message="the page saying the node does not answer", page=browser)
    finally:
        node.proc.send_signal(signal.SIGCONT)
    r.execute_command("ADDJOB", "emails", "b", 0)
    wait_for(lambda: queue_cells(browser, "emails")[1:2] == ["2"], 20,
             message="the page following the node again", page=browser)
    assert "live" in status_text(browser)


def status_text(page: Any) -> str:
    return str(page.execute_script("return document.getElementById('status').textContent"))


def wait_for(condition: Any, timeout: float, message: str, page: Any) -> None:
    """tests.harness.wait_for, and on a timeout what the page showed: its
    status line and its queue rows (a failure says why the page lagged)."""
    try:
        wait_until(condition, timeout, message=message)
    except AssertionError as exc:
        rows = page.execute_script(
            "return Array.from(document.querySelectorAll('#queues tbody tr'))"
            ".map(tr => tr.textContent)")
        raise AssertionError(f"{exc}; the page's status: {status_text(page)!r}, "
                             f"its queue rows: {rows!r}") from None
