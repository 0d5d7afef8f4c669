"""Headless Chromium for the dashboard tests: Debian's chromium and
chromium-driver (.ci/run installs them), driven by selenium, with the
flags this closed network needs (no background connections)."""

from __future__ import annotations

import shutil
import socket
import tempfile
from typing import Any, Iterator

import pytest

from tests.harness import Server, free_port, wait_for

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")

needs_browser = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs Debian's chromium and chromium-driver (.ci/run installs them)")


def open_browser() -> Iterator[Any]:
    """A fresh headless Chromium with an empty profile; quit afterwards
    (the body of the ``browser`` fixture in tests/conftest.py)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    profile = tempfile.mkdtemp(prefix="trisque-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM  # type: ignore[assignment]
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={profile}",
                 "--window-size=1280,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_http(port: int, what: str = "the HTTP port") -> None:
    """Until the node's HTTP port (http-port) accepts connections."""
    def up() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False
    wait_for(up, 10, message=what)


def start_with_http(config: str = "") -> Server:
    """A started node with an HTTP port (its number as ``srv.http_port``),
    once that port accepts connections; ``config``: more directives."""
    http_port = free_port()
    srv = Server(config=f"http-port {http_port}\n{config}")
    srv.http_port = http_port  # type: ignore[attr-defined]
    srv.start()
    wait_http(http_port)
    return srv


def queue_cells(driver: Any, queue: str) -> list[str]:
    """The row of ``queue`` in the rendered queue table, as cell texts (read
    in one script: the page replaces the table's body every second)."""
    rows = driver.execute_script(
        "return Array.from(document.querySelectorAll('#queues tbody tr'))"
        ".map(tr => Array.from(tr.cells).map(td => td.textContent))")
    for cells in rows:
        if cells and cells[0] == queue:
            return list(cells)
    return []
