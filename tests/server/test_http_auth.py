"""The HTTP port of real nodes with and without requirepass: the password
(Basic or Bearer) guards the dashboard and its JSON, /metrics only with
http-metrics-auth; dead jobs are listed in /api/overview and revived or
deleted with POST, only where a password exists, only with the dashboard's
header and from its own origin; the changes reach the AOF (a restart keeps
them)."""

import base64
import http.client
import json
from typing import Any, Iterator, Optional
from urllib.parse import quote

import pytest

from tests.browser import start_with_http, wait_http
from tests.harness import Server, wait_for

PASSWORD = "s3cret:with colon"  # (a colon: only the first one of Basic's pair splits)


@pytest.fixture(scope="module")
def locked() -> Iterator[Server]:
    srv = start_with_http(f'requirepass "{PASSWORD}"\nappendonly yes\nauth-failure-delay-ms 50\n')
    yield srv
    srv.cleanup()


@pytest.fixture(scope="module")
def open_node() -> Iterator[Server]:
    srv = start_with_http("")
    yield srv
    srv.cleanup()


def basic(password: str, user: str = "anyone") -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


ACTION = {"X-Trisque-Action": "1"}


def request(node: Server, method: str, path: str,
            headers: Optional[dict[str, str]] = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", node.http_port, timeout=10)  # type: ignore[attr-defined]
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def dead_job(r: Any, queue: str, reason: str) -> bytes:
    """A job that died in ``queue`` after one failed delivery."""
    job_id = r.execute_command("ADDJOB", queue, "body", 0, "RETRY", 60, "MAXDELIVERIES", 1)
    (_, got, _), = r.execute_command("GETJOB", "NOHANG", "FROM", queue)
    assert got == job_id
    r.execute_command("NACK", job_id, "REASON", reason)
    assert r.execute_command("QLEN", f"{queue}:dead") >= 1
    return job_id


def action_path(job_id: bytes, action: str) -> str:
    return f"/api/dead-letters/{quote(job_id.decode(), safe='')}/{action}"


def overview(node: Server, headers: dict[str, str]) -> dict:
    status, _, body = request(node, "GET", "/api/overview", headers)
    assert status == 200
    return json.loads(body)


def dead_queue(data: dict, name: str) -> dict:
    return next(q for q in data["dead_letters"]["queues"] if q["name"] == name)


def test_password_guards_the_port_but_not_metrics(locked: Server) -> None:
    for path in ("/", "/dashboard.js", "/api/overview"):
        status, headers, body = request(locked, "GET", path)
        assert status == 401, path
        assert headers["www-authenticate"].startswith('Basic realm="trisque"')
        assert b"requirepass" in body
    r = locked.client(password=PASSWORD)
    failures = r.info("stats")["auth_failures"]
    for wrong in (basic("nope"), basic(PASSWORD[:-1]), {"Authorization": "Bearer nope"},
                  {"Authorization": "Basic !!notbase64"}):
        status, headers, body = request(locked, "GET", "/api/overview", wrong)
        assert status == 401 and "www-authenticate" in headers and body == b"wrong password\n"
    assert r.info("stats")["auth_failures"] == failures + 4
    wait_for(lambda: "Failed HTTP authentication from 127.0.0.1:" in locked.log(), 10,
             message="the failure in the log")
    for good in (basic(PASSWORD), basic(PASSWORD, user=""), basic(PASSWORD, "default"),
                 {"Authorization": f"Bearer {PASSWORD}"}):
        status, _, body = request(locked, "GET", "/api/overview", good)
        assert status == 200 and json.loads(body)["job_actions"] is True
    assert request(locked, "GET", "/", basic(PASSWORD))[0] == 200
    status, _, body = request(locked, "GET", "/metrics")
    assert status == 200 and b"trisque_dead_lettered_jobs_total" in body


def test_metrics_auth_option(locked: Server) -> None:
    r = locked.client(password=PASSWORD)
    r.config_set("http-metrics-auth", "yes")
    try:
        status, headers, _ = request(locked, "GET", "/metrics")
        assert status == 401 and headers["www-authenticate"].startswith("Basic")
        assert request(locked, "GET", "/metrics", basic("wrong"))[0] == 401
        assert request(locked, "GET", "/metrics", basic(PASSWORD))[0] == 200
        assert request(locked, "GET", "/metrics", {"Authorization": f"Bearer {PASSWORD}"})[0] == 200
    finally:
        r.config_set("http-metrics-auth", "no")
    assert request(locked, "GET", "/metrics")[0] == 200


def test_dead_letters_listed_and_revived(locked: Server) -> None:
    auth = basic(PASSWORD)
    r = locked.client(password=PASSWORD)
    job_id = dead_job(r, "images", "bad header")
    dlq = dead_queue(overview(locked, auth), "images:dead")
    assert dlq["dead_jobs"] == 1 and dlq["queued"] == 1
    job, = dlq["jobs"]
    assert job["id"] == job_id.decode() and job["died_in"] == "images"
    assert job["last_error"] == "bad header" and job["state"] == "queued"
    assert job["nacks"] == 1 and job["dead_ms"] > 0
    path = action_path(job_id, "revive")
    # refused: no password, no header, another origin, GET
    assert request(locked, "POST", path, ACTION)[0] == 401
    status, _, body = request(locked, "POST", path, auth)
    assert status == 403 and b"X-Trisque-Action" in body
    status, _, body = request(locked, "POST", path,
                              {**auth, **ACTION, "Origin": "http://evil.example"})
    assert status == 403 and b"another origin" in body
    status, headers, _ = request(locked, "GET", path, auth)
    assert status == 405 and headers["allow"] == "POST"
    assert r.execute_command("QLEN", "images") == 0  # nothing acted on so far
    # the page's own request: the same origin, the header
    status, _, body = request(locked, "POST", path, {
        **auth, **ACTION, "Origin": f"http://127.0.0.1:{locked.http_port}"})  # type: ignore[attr-defined]
    assert status == 200, body
    assert json.loads(body)["message"].endswith("back in queue images")
    assert r.execute_command("QLEN", "images") == 1
    assert r.execute_command("QLEN", "images:dead") == 0
    show = r.execute_command("SHOW", job_id)
    info = dict(zip(show[::2], show[1::2]))
    assert info[b"queue"] == b"images" and info[b"dead-from"] is None
    assert not any(q["name"] == "images:dead"
                   for q in overview(locked, auth)["dead_letters"]["queues"])
    status, _, body = request(locked, "POST", path, {**auth, **ACTION})
    assert status == 409 and b"not dead" in body
    # survives a restart: REVIVE reached the AOF (the job reloads active,
    # as Disque's do, in the queue it was revived to, alive)
    locked.restart()
    r = locked.client(password=PASSWORD)
    wait_http(locked.http_port)  # type: ignore[attr-defined]
    show = r.execute_command("SHOW", job_id)
    info = dict(zip(show[::2], show[1::2]))
    assert info[b"queue"] == b"images" and info[b"dead-from"] is None
    assert r.execute_command("QLEN", "images:dead") == 0


def test_dead_job_deleted(locked: Server) -> None:
    auth = {**basic(PASSWORD), **ACTION}
    r = locked.client(password=PASSWORD)
    job_id = dead_job(r, "pdf", "timeout")
    other = dead_job(r, "pdf", "timeout again")
    status, _, body = request(locked, "POST", action_path(job_id, "delete"), auth)
    assert status == 200 and b"deleted" in body
    assert r.execute_command("SHOW", job_id) is None
    dlq = dead_queue(overview(locked, auth), "pdf:dead")
    assert [j["id"] for j in dlq["jobs"]] == [other.decode()]
    status, _, body = request(locked, "POST", action_path(job_id, "delete"), auth)
    assert status == 404 and b"not on this node" in body
    status, _, body = request(locked, "POST", "/api/dead-letters/D-nope/delete", auth)
    assert status == 400 and b"not a job ID" in body
    # only dead jobs: a live one is left alone
    live = r.execute_command("ADDJOB", "pdf", "alive", 0)
    status, _, body = request(locked, "POST", action_path(live, "delete"), auth)
    assert status == 409 and r.execute_command("SHOW", live) is not None
    locked.restart()
    r = locked.client(password=PASSWORD)
    assert r.execute_command("SHOW", job_id) is None
    assert r.execute_command("SHOW", other) is not None


def test_without_password_the_port_is_read_only(open_node: Server) -> None:
    r = open_node.client()
    job_id = dead_job(r, "mail", "smtp down")
    status, _, body = request(open_node, "GET", "/api/overview")
    assert status == 200
    data = json.loads(body)
    assert data["job_actions"] is False
    assert dead_queue(data, "mail:dead")["jobs"][0]["last_error"] == "smtp down"
    for action in ("revive", "delete"):
        for headers in ({}, ACTION, {**ACTION, **basic("anything")}):
            status, _, body = request(open_node, "POST", action_path(job_id, action), headers)
            assert status == 403, (action, headers)
            assert b"read-only: this node has no password (requirepass)" in body
    assert r.execute_command("QLEN", "mail:dead") == 1 and r.execute_command("QLEN", "mail") == 0
    # the other paths take no POST
    status, headers, _ = request(open_node, "POST", "/api/overview")
    assert status == 405 and headers["allow"] == "GET, HEAD"
