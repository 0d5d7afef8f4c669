"""Dead letters over the HTTP ports of a 2-node cluster of real processes,
both with requirepass and http-port: a replicated job that dies on one node
is listed by both (queued where it died, active on the other holder), and
a Revive sent to the other node's port brings every copy back and serves
a consumer waiting there (REVIVE run for HTTP reaches the bus and blocked
clients like a client's)."""

import base64
import http.client
import json
import threading
from typing import Any, Iterator
from urllib.parse import quote

import pytest

from tests.browser import wait_http
from tests.harness import Server, call_failed, free_port, wait_for

from .conftest import NODE_TIMEOUT_MS, Cluster, addjob, show

PASSWORD = "cluster-dash"
AUTH = {"Authorization": "Basic " + base64.b64encode(f"ops:{PASSWORD}".encode()).decode()}


@pytest.fixture
def pair(request: Any) -> Iterator[tuple[Cluster, list[int]]]:
    http_ports = [free_port(), free_port()]
    servers = [Server(config=f"cluster-node-timeout {NODE_TIMEOUT_MS}\n"
                      f"requirepass {PASSWORD}\nhttp-port {port}\n") for port in http_ports]
    for s in servers:
        s.start()
    c = Cluster(servers)
    c.clients = [s.client(password=PASSWORD) for s in servers]
    try:
        c.meet_chain()
        c.wait_mesh()
        for port in http_ports:
            wait_http(port)
        yield c, http_ports
    finally:
        if call_failed(request):
            c.print_logs()
        c.close()


def call(port: int, method: str, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def dead_listed(port: int) -> dict[str, dict]:
    """Job ID -> its entry, for every dead job the node's overview lists."""
    status, body = call(port, "GET", "/api/overview", AUTH)
    assert status == 200
    return {job["id"]: {**job, "queue": q["name"]}
            for q in json.loads(body)["dead_letters"]["queues"] for job in q["jobs"]}


def test_dead_job_listed_on_both_holders_and_revived_from_the_other(
        pair: tuple[Cluster, list[int]]) -> None:
    c, ports = pair
    job_id = addjob(c[0], "orders", "poison", "REPLICATE", 2, "RETRY", 60, "MAXDELIVERIES", 1)
    wait_for(lambda: show(c[1], job_id) is not None, 5, message="the copy on node 2")
    got = c[0].execute_command("GETJOB", "TIMEOUT", 5000, "FROM", "orders")
    assert got[0][1].decode() == job_id
    assert c[0].execute_command("NACK", job_id, "REASON", "bad amount") == 1
    wait_for(lambda: job_id in dead_listed(ports[1]), 10,
             message="node 2's port listing its dead copy")
    here, there = dead_listed(ports[0])[job_id], dead_listed(ports[1])[job_id]
    assert (here["queue"], here["state"], here["died_in"]) == ("orders:dead", "queued", "orders")
    assert (there["queue"], there["state"], there["died_in"]) == ("orders:dead", "active", "orders")
    # (the reason is kept where the NACK was taken: DEADJOB carries no text)
    assert here["last_error"] == "bad amount"

    # a consumer already waiting on the queue is served by the revive
    consumer = c.servers[1].client(password=PASSWORD)
    served: list[Any] = []
    waiting = threading.Thread(target=lambda: served.append(consumer.execute_command(
        "GETJOB", "TIMEOUT", 10000, "FROM", "orders")))
    waiting.start()
    wait_for(lambda: c[1].info("clients")["blocked_clients"] == 1, 5,
             message="the consumer blocked in GETJOB")
    status, body = call(ports[1], "POST", f"/api/dead-letters/{quote(job_id, safe='')}/revive",
                        {**AUTH, "X-Trisque-Action": "1"})
    assert status == 200, body
    waiting.join(15)
    assert served and served[0][0][1].decode() == job_id
    consumer.close()
    wait_for(lambda: all((show(c[i], job_id) or {}).get("queue") == "orders"
                         and show(c[i], job_id)["dead-from"] is None for i in (0, 1)), 10,
             message="both copies revived")
    assert not dead_listed(ports[0]) and not dead_listed(ports[1])
    assert c[1].execute_command("ACKJOB", job_id) == 1
