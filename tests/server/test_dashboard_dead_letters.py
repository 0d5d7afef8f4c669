"""Dead letters on the dashboard, in a real headless Chromium (Debian's
chromium and chromium-driver, driven by selenium): a real node with
requirepass and http-port, jobs that die after a NACK with a reason; the
page, opened with the password as a person would give it, lists them
under their dead-letter queue and its Revive and Delete buttons act on
the node.  A node without a password shows them read-only.  Screenshots
are saved under the test's tmp_path."""

from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.browser import needs_browser, start_with_http
from tests.harness import Server, wait_for

pytestmark = needs_browser

PASSWORD = "dash-pass-42"


@pytest.fixture
def locked() -> Iterator[Server]:
    srv = start_with_http(f"requirepass {PASSWORD}\n")
    yield srv
    srv.cleanup()


@pytest.fixture
def open_node() -> Iterator[Server]:
    srv = start_with_http("")
    yield srv
    srv.cleanup()


def kill_job(r: Any, queue: str, reason: str) -> str:
    job_id = r.execute_command("ADDJOB", queue, "body", 0, "RETRY", 60, "MAXDELIVERIES", 1)
    r.execute_command("GETJOB", "NOHANG", "FROM", queue)
    r.execute_command("NACK", job_id, "REASON", reason)
    return str(job_id.decode())


def dead_rows(driver: Any) -> dict[str, list[str]]:
    """Job ID -> its row's cell texts, read in one script, with the queue
    heading the row is under first."""
    rows = driver.execute_script(
        "return Array.from(document.querySelectorAll('.dead-queue tbody tr')).map(tr =>"
        " [tr.closest('.dead-queue').dataset.queue,"
        "  ...Array.from(tr.cells).map(td => td.textContent)])")
    return {cells[1]: list(cells) for cells in rows}


def button(driver: Any, job_id: str, action: str) -> Any:
    return driver.execute_script(
        "const tr = Array.from(document.querySelectorAll('.dead-queue tbody tr'))"
        ".find(tr => tr.dataset.job === arguments[0]);"
        "return tr ? tr.querySelector(`button[data-action='${arguments[1]}']`) : null;",
        job_id, action)


def message(driver: Any) -> str:
    return str(driver.execute_script(
        "return document.getElementById('dead-message').textContent"))


def test_dead_letters_listed_revived_and_deleted(locked: Server, browser: Any,
                                                  tmp_path: Path) -> None:
    r = locked.client(password=PASSWORD)
    first = kill_job(r, "images", "bad header")
    second = kill_job(r, "images", "corrupt file")
    port = locked.http_port  # type: ignore[attr-defined]
    browser.get(f"http://dashboard:{PASSWORD}@127.0.0.1:{port}/")
    wait_for(lambda: first in dead_rows(browser) and second in dead_rows(browser), 15,
             message="the page listing both dead jobs")
    row = dead_rows(browser)[first]
    # queue heading, job, died in, state, deliveries, last error, died at, actions
    assert row[0] == "images:dead" and row[2:6] == ["images", "queued", "1", "bad header"]
    assert row[6].startswith("20")  # a date, the node's clock
    assert dead_rows(browser)[second][5] == "corrupt file"
    browser.save_screenshot(str(tmp_path / "dead-letters.png"))

    button(browser, first, "revive").click()
    wait_for(lambda: "revived: back in queue images" in message(browser), 15,
             message="the page saying the job was revived")
    assert r.execute_command("QLEN", "images") == 1
    assert r.execute_command("QLEN", "images:dead") == 1
    wait_for(lambda: first not in dead_rows(browser), 15,
             message="the revived job leaving the list")

    button(browser, second, "delete").click()
    alert = browser.switch_to.alert  # delete asks first
    assert second in alert.text
    alert.accept()
    wait_for(lambda: "deleted from this node" in message(browser), 15,
             message="the page saying the job was deleted")
    assert r.execute_command("SHOW", second) is None
    wait_for(lambda: "No dead jobs on this node." in browser.execute_script(
        "return document.getElementById('dead-queues').textContent"), 15,
        message="an empty dead-letter list")
    browser.save_screenshot(str(tmp_path / "dead-letters-empty.png"))


def test_without_password_dead_letters_are_read_only(open_node: Server, browser: Any) -> None:
    r = open_node.client()
    job_id = kill_job(r, "mail", "smtp down")
    browser.get(f"http://127.0.0.1:{open_node.http_port}/")  # type: ignore[attr-defined]
    wait_for(lambda: job_id in dead_rows(browser), 15, message="the dead job listed")
    assert dead_rows(browser)[job_id][5] == "smtp down"
    assert button(browser, job_id, "revive") is None
    assert button(browser, job_id, "delete") is None
    summary = browser.execute_script("return document.getElementById('dead-summary').textContent")
    assert "1 dead job on this node" in summary and "read-only" in summary
