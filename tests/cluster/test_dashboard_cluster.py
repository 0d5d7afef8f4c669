"""The dashboard of a 3-node cluster under load, in a real headless
Chromium: three real nodes joined with CLUSTER MEET, node 1 with
http-port, producer and consumer threads (redis-py) on queues named here.
The rendered page must show the three nodes ok, each queue's length as
QLEN gives it within the page's refresh, non-zero rates; and a node
stopped must turn pfail (or fail) there within the node timeout.
Screenshots are saved under the test's tmp_path."""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Iterator

import pytest
import redis

from tests.harness import Server, free_port, wait_for
from tests.browser import needs_browser, queue_cells, wait_http

from .conftest import Cluster


pytestmark = needs_browser

NODE_TIMEOUT_MS = 2000  # short, so the failing node shows quickly; not so short that a
# second's stall beside Chromium and the load marks a live node failing
BUSY = ("dash-orders", "dash-emails")  # produced and consumed all along
BACKLOG = "dash-backlog"  # filled once, nobody consumes: a fixed length
BACKLOG_JOBS = 17
PAGE_REFRESH_S = 1.0  # dashboard.js's POLL_MS


@pytest.fixture
def cluster() -> Iterator[tuple[Cluster, int]]:
    http_port = free_port()
    configs = [f"cluster-node-timeout {NODE_TIMEOUT_MS}\n" + (
        f"http-port {http_port}\n" if i == 0 else "") for i in range(3)]
    servers = [Server(config=config) for config in configs]
    for s in servers:
        s.start(wait=False)
    c = Cluster(servers)
    try:
        for s in servers:
            s.wait_ready()
        c.meet_chain()
        c.wait_mesh()
        wait_http(http_port, "node 1's HTTP port")
        yield c, http_port
    finally:
        c.close()


class Load:
    """Producers on every node and consumers on node 1, paced so the
    machine's two cores stay free for the nodes and the browser."""

    def __init__(self, servers: list[Server]) -> None:
        self.servers = servers
        self.stop = threading.Event()
        self.retired: set[int] = set()  # nodes whose producers stop
        self.errors: list[BaseException] = []
        self.norepl = 0  # ADDJOBs refused while a node was down
        self.threads: dict[int, list[threading.Thread]] = {}

    def start(self) -> None:
        for i in range(len(self.servers)):
            for queue in BUSY:
                self._spawn(i, self._produce, i, queue)
        for queue in BUSY:
            self._spawn(0, self._consume, queue)

    def retire(self, i: int) -> None:
        """Stop node i's producers (before the node is stopped)."""
        self.retired.add(i)
        for t in self.threads.get(i, []):
            t.join(10)

    def _spawn(self, i: int, target: Any, *args: Any) -> None:
        t = threading.Thread(target=self._guard, args=(target, *args), daemon=True)
        t.start()
        self.threads.setdefault(i, []).append(t)

    def _guard(self, target: Any, *args: Any) -> None:
        try:
            target(*args)
        except BaseException as exc:  # reported by the test, not lost in a thread
            self.errors.append(exc)

    def _produce(self, i: int, queue: str) -> None:
        client = self.servers[i].client(socket_timeout=5)
        n = 0
        while not self.stop.is_set() and i not in self.retired:
            try:
                # REPLICATE 2: the two nodes left can still take it
                client.execute_command("ADDJOB", queue, f"job {n}", 5000, "REPLICATE", 2)
            except redis.ResponseError as exc:
                if not (self.retired and str(exc).startswith("NOREPL")):
                    raise
                self.norepl += 1  # a copy sent to the stopped node timed out
            n += 1
            time.sleep(0.01)

    def _consume(self, queue: str) -> None:
        client = self.servers[0].client(socket_timeout=5)
        while not self.stop.is_set():
            jobs = client.execute_command("GETJOB", "TIMEOUT", 100, "COUNT",
                                          random.randint(1, 3), "FROM", queue)
            if jobs:
                client.execute_command("ACKJOB", *[job_id for _, job_id, _ in jobs])
            time.sleep(0.02)

    def close(self) -> None:
        self.stop.set()
        for threads in self.threads.values():
            for t in threads:
                t.join(10)


class QlenSampler:
    """QLEN of each queue on node 1 every 20 ms, kept for a few seconds:
    what the page shows must be one of the lengths of its refresh window."""

    def __init__(self, server: Server, queues: tuple[str, ...]) -> None:
        self.client = server.client(socket_timeout=5)
        self.queues = queues
        self.samples: deque[tuple[float, dict[str, int]]] = deque(maxlen=400)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            pipe = self.client.pipeline(transaction=False)
            for q in self.queues:
                pipe.execute_command("QLEN", q)
            lengths = pipe.execute()
            self.samples.append((time.monotonic(), dict(zip(self.queues, lengths))))
            time.sleep(0.02)

    def range_since(self, queue: str, since: float) -> tuple[int, int]:
        values = [s[queue] for t, s in list(self.samples) if t >= since]
        return (min(values), max(values)) if values else (-1, -1)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)


def nodes_rows(driver: Any) -> list[list[str]]:
    return driver.execute_script(  # type: ignore[no-any-return]
        "return Array.from(document.querySelectorAll('#nodes tbody tr'))"
        ".map(tr => Array.from(tr.cells).map(td => td.textContent))")


def tile(driver: Any, element_id: str) -> float:
    text = driver.execute_script(
        f"return document.getElementById('{element_id}').textContent")
    try:
        return float(text)
    except ValueError:
        return 0.0


def length_within_refresh(driver: Any, sampler: QlenSampler, queue: str) -> bool:
    """The page's length of ``queue`` is one QLEN gave in the window the
    page could have read it (two refreshes back, for a loaded machine)."""
    started = time.monotonic() - 2 * PAGE_REFRESH_S - 0.5
    cells = queue_cells(driver, queue)
    if len(cells) < 2:
        return False
    low, high = sampler.range_since(queue, started)
    return low <= int(cells[1]) <= high


def test_dashboard_of_a_loaded_cluster_shows_nodes_queues_and_a_failure(
        cluster: tuple[Cluster, int], browser: Any, tmp_path: Path) -> None:
    c, http_port = cluster
    ids = c.ids()
    addresses = [f"127.0.0.1:{s.port}" for s in c.servers]
    for i in range(BACKLOG_JOBS):
        c[0].execute_command("ADDJOB", BACKLOG, f"backlog {i}", 0, "REPLICATE", 1)
    load = Load(c.servers)
    sampler = QlenSampler(c.servers[0], BUSY + (BACKLOG,))
    load.start()
    try:
        browser.get(f"http://127.0.0.1:{http_port}/")

        # The three nodes: node 1 itself, the two others ok with their link up.
        def three_nodes_ok() -> bool:
            rows = {r[1]: r for r in nodes_rows(browser)}
            return (set(rows) == set(addresses)
                    and rows[addresses[0]][2] == "myself"
                    and all(rows[a][2:4] == ["ok", "up"] for a in addresses[1:]))
        wait_for(three_nodes_ok, 15, interval=0.1, message="three nodes, the others ok")
        rows = {r[1]: r for r in nodes_rows(browser)}
        assert [rows[a][0] for a in addresses] == [node_id[:8] for node_id in ids]

        # The queues with their lengths, and traffic on them.
        wait_for(lambda: queue_cells(browser, BACKLOG)[1:2] == [str(BACKLOG_JOBS)], 15,
                 interval=0.1, message=f"{BACKLOG} at {BACKLOG_JOBS}")
        for queue in BUSY:
            wait_for(lambda queue=queue: length_within_refresh(browser, sampler, queue),
                     10, interval=0.1, message=f"{queue}'s length as QLEN within the refresh")
            wait_for(lambda queue=queue: float(queue_cells(browser, queue)[2]) > 0, 10,
                     interval=0.1, message=f"{queue}'s in/s above 0")
        wait_for(lambda: all(tile(browser, t) > 0 for t in ("ops", "in-rate", "out-rate",
                                                             "ack-rate")),
                 10, interval=0.1, message="commands, enqueued, dequeued, acked rates above 0")
        assert not load.errors, load.errors
        browser.save_screenshot(str(tmp_path / "cluster-dashboard.png"))

        # Node 3 stops: the page marks it failing within the node timeout
        # (plus the page's refresh and a margin for a loaded machine).
        load.retire(2)
        c.kill(2)
        stopped = time.monotonic()

        def third_failing() -> bool:
            row = {r[1]: r for r in nodes_rows(browser)}.get(addresses[2], [])
            return row[2:4] in (["pfail", "down"], ["fail", "down"])
        wait_for(third_failing, NODE_TIMEOUT_MS / 1000 + 2 * PAGE_REFRESH_S + 3,
                 interval=0.05, message="node 3 shown pfail or fail")
        shown_s = time.monotonic() - stopped
        rows = {r[1]: r for r in nodes_rows(browser)}
        assert rows[addresses[1]][2:4] == ["ok", "up"], "node 2 is still fine"
        state_class = browser.execute_script(
            "return Array.from(document.querySelectorAll('#nodes tbody tr'))"
            f".find(tr => tr.cells[1].textContent === '{addresses[2]}')"
            ".cells[2].firstChild.className")
        assert state_class in ("state-pfail", "state-fail")
        browser.save_screenshot(str(tmp_path / "cluster-dashboard-node-down.png"))
        print(f"node 3 shown failing {shown_s:.2f} s after kill -9 "
              f"(cluster-node-timeout {NODE_TIMEOUT_MS} ms)")
        # Traffic goes on between the two left (REPLICATE 2).
        wait_for(lambda: float(queue_cells(browser, BUSY[0])[2] or 0) > 0, 10,
                 interval=0.1, message="jobs still flowing in")
    finally:
        load.close()
        sampler.close()
    assert not load.errors, load.errors
