"""The HTTP port of a real node: /metrics parsed with prometheus_client's
parser, the dashboard's JSON, and hostile HTTP clients that must not stall
job traffic."""

import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.harness import Server, free_port, wait_for


@pytest.fixture(scope="module")
def node() -> Iterator[Server]:
    http_port = free_port()
    srv = Server(config=f"http-port {http_port}\nappendonly yes\n")
    srv.http_port = http_port  # type: ignore[attr-defined]
    srv.start()
    wait_for(lambda: _port_open(http_port), 10, message="the HTTP port")
    yield srv
    srv.cleanup()


def _port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def get(node: Server, path: str) -> tuple[int, str, bytes]:
    url = f"http://127.0.0.1:{node.http_port}{path}"  # type: ignore[attr-defined]
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers["content-type"], response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["content-type"], exc.read()


def scrape(node: Server) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics: (name, sorted labels) -> value."""
    status, content_type, body = get(node, "/metrics")
    assert status == 200 and content_type.startswith("text/plain; version=")
    samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def q(name: str, queue: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return (name, (("queue", queue),))


def test_metrics_follow_addjob_getjob_ackjob(node: Server) -> None:
    r = node.client()
    before = scrape(node)
    assert before[("trisque_registered_jobs", ())] == 0
    assert before[("trisque_aof_enabled", ())] == 1
    assert ("trisque_aof_size_bytes", ()) in before
    assert before[("trisque_memory_level", ())] == 0
    ids = [r.execute_command("ADDJOB", "mq", f"job {i}", 0) for i in range(5)]
    r.execute_command("SET", "k", "v")
    m = scrape(node)
    assert m[q("trisque_queue_length", "mq")] == 5
    assert m[q("trisque_queue_enqueued_total", "mq")] == 5
    assert m[("trisque_jobs", (("state", "queued"),))] == 5
    assert m[("trisque_keyspace_keys", (("db", "0"),))] == 1
    assert m[("trisque_commands_total", (("command", "addjob"),))] == 5
    # the latency histogram: cumulative buckets, +Inf = count = calls
    inf = ("trisque_command_duration_seconds_bucket", (("command", "addjob"), ("le", "+Inf")))
    assert m[inf] == 5
    assert m[("trisque_command_duration_seconds_count", (("command", "addjob"),))] == 5
    assert m[("trisque_command_duration_seconds_sum", (("command", "addjob"),))] > 0
    state = [k for k in m if k[0] == "trisque_cluster_node_state"]
    assert len(state) == 1 and ("state", "myself") in state[0][1]

    got = r.execute_command("GETJOB", "COUNT", 3, "FROM", "mq")
    r.execute_command("ACKJOB", got[0][1], got[1][1])
    r.execute_command("NACK", got[2][1])
    m = scrape(node)
    assert m[q("trisque_queue_dequeued_total", "mq")] == 3
    assert m[q("trisque_queue_acked_total", "mq")] == 2
    assert m[q("trisque_queue_nacked_total", "mq")] == 1
    assert m[q("trisque_queue_length", "mq")] == 3
    assert m[("trisque_jobs", (("state", "queued"),))] == 3
    assert m[("trisque_registered_jobs", ())] == 3
    r.execute_command("ACKJOB", *ids)


def test_latency_monitor_events(node: Server) -> None:
    """A command that held the node up, once the monitor is on, is a series."""
    with node.client() as c:
        c.execute_command("LATENCY", "RESET")
        assert ("trisque_latency_event_max_ms", (("event", "command"),)) not in scrape(node)
        c.config_set("latency-monitor-threshold", 10)
        try:
            c.execute_command("DEBUG", "SLEEP", "0.05")
            samples = scrape(node)
            assert samples[("trisque_latency_event_max_ms", (("event", "command"),))] >= 50
            assert samples[("trisque_latency_event_latest_ms", (("event", "command"),))] >= 50
        finally:
            c.config_set("latency-monitor-threshold", 0)
            c.execute_command("LATENCY", "RESET")


def test_queue_series_are_bounded(node: Server) -> None:
    r = node.client()
    pipe = r.pipeline(transaction=False)
    for i in range(30):
        for _ in range(i + 1):
            pipe.execute_command("ADDJOB", f"bq{i:02d}", "x", 0)
    pipe.execute()
    m = scrape(node)
    lengths = {k[1][0][1]: v for k, v in m.items() if k[0] == "trisque_queue_length"}
    assert len(lengths) == 21  # the top 20 and "(other)"
    assert lengths["bq29"] == 30 and "bq00" not in lengths
    assert lengths["(other)"] == sum(range(1, 11))
    r.execute_command("DEBUG", "FLUSHALL")


def test_overview_json_and_static_files(node: Server) -> None:
    import json
    r = node.client()
    r.execute_command("ADDJOB", "ov", "x", 0)
    status, content_type, body = get(node, "/api/overview")
    assert status == 200 and content_type == "application/json"
    data = json.loads(body)
    assert {"name": "ov", "length": 1} .items() <= next(
        q for q in data["queues"] if q["name"] == "ov").items()
    assert data["nodes"][0]["state"] == "myself"
    status, content_type, body = get(node, "/")
    assert status == 200 and content_type.startswith("text/html") and b"dashboard.js" in body
    assert get(node, "/dashboard.js")[0] == 200
    assert get(node, "/nothing")[0] == 404
    r.execute_command("DEBUG", "FLUSHALL")


def _raw(node: Server, data: bytes, timeout: float = 5) -> bytes:
    with socket.create_connection(("127.0.0.1", node.http_port), timeout=timeout) as s:  # type: ignore[attr-defined]
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            out += chunk
        return out


def test_bad_requests_get_errors(node: Server) -> None:
    assert _raw(node, b"garbage\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    big = b"GET / HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 1024 * 1024 + b"\r\n\r\n"
    assert _raw(node, big).startswith(b"HTTP/1.1 431 ")
    post = b"POST /metrics HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\n\r\nabc"
    assert _raw(node, post).startswith(b"HTTP/1.1 413 ")
    head = _raw(node, b"HEAD /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and head.endswith(b"\r\n\r\n")


def test_hostile_clients_do_not_stall_jobs(node: Server) -> None:
    """Slowloris connections, garbage and 1 MB headers hammer the HTTP port
    while a redis-py producer and consumer run: every job goes through and
    no round trip waits for the HTTP side."""
    port = node.http_port  # type: ignore[attr-defined]
    stop = threading.Event()
    slow: list[socket.socket] = []

    def slowloris() -> None:
        for _ in range(40):  # most of the connection cap, a byte now and then
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /metrics HTTP/1.1\r\n")
            slow.append(s)
        while not stop.is_set():
            for s in slow:
                try:
                    s.sendall(b"x")
                except OSError:
                    pass
            time.sleep(0.2)

    def garbage() -> None:
        big = b"GET / HTTP/1.1\r\nx: " + b"a" * 1024 * 1024 + b"\r\n\r\n"
        while not stop.is_set():
            for data in (b"\x00\xff" * 5000, big):
                try:
                    _raw(node, data, timeout=2)
                except OSError:
                    pass

    threads = [threading.Thread(target=slowloris), threading.Thread(target=garbage)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.3)
        r = node.client(socket_timeout=5)
        worst = 0.0
        for i in range(300):
            t0 = time.monotonic()
            r.execute_command("ADDJOB", "hostile", f"j{i}", 0)
            (_, job_id, _), = r.execute_command("GETJOB", "TIMEOUT", 1000, "FROM", "hostile")
            r.execute_command("ACKJOB", job_id)
            worst = max(worst, time.monotonic() - t0)
        # (a stall behind an HTTP client would last its 10 s timeout; 5 s
        # leaves room for a loaded machine)
        assert worst < 5.0, f"a round of ADDJOB/GETJOB/ACKJOB took {worst:.3f} s"
        # and the port still answers a well-behaved scraper
        assert scrape(node)[q("trisque_queue_acked_total", "hostile")] == 300
    finally:
        stop.set()
        for t in threads:
            t.join()
        for s in slow:
            s.close()
