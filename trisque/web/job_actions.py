"""The dashboard's two writes: revive or delete a dead job on this node.

``POST /api/dead-letters/<job id>/revive`` runs ``REVIVE id`` and
``POST /api/dead-letters/<job id>/delete`` runs ``DELJOB id``, as a client
of the node would (the command table's checks, stats, MONITOR, the AOF and
the bus all see an ordinary command), and only on a dead job.

Only a node with a password takes them: without ``requirepass`` anyone who
reaches the port could change jobs, so the port stays read-only (403).
With one, http_auth.py has already checked it, and a request must also
carry the ``X-Trisque-Action`` header and, if it says where it comes from
(``Origin``), come from this port: a page of another site cannot set that
header without a CORS preflight, which this port never grants, so a
browser holding the password cannot be made to send these requests
(cross-site request forgery).  Answers are JSON: ``{"message": ...}`` or
``{"error": ...}``.
"""

import json
from urllib.parse import unquote
from typing import Any, Callable, Optional

from ..core.client import Client
from ..protocol import jobid
from .http_connection import Request, Response

PREFIX = "/api/dead-letters/"
ACTIONS = ("revive", "delete")
CSRF_HEADER = "x-trisque-action"


def is_action(path: str) -> bool:
    return path.startswith(PREFIX) and path.rsplit("/", 1)[-1] in ACTIONS


def _answer(status: int, **fields: Any) -> Response:
    return Response(status, "application/json", json.dumps(fields).encode())


def forgery_refusal(request: Request) -> Optional[Response]:
    """403 unless the request shows it was sent by the dashboard's page."""
    if not request.headers.get(CSRF_HEADER):
        return _answer(403, error="the X-Trisque-Action header is missing: job "
                       "actions are sent by the dashboard's page (cross-site request "
                       "forgery protection)")
    origin = request.headers.get("origin")
    host = request.headers.get("host", "")
    if origin is not None and origin not in (f"http://{host}", f"https://{host}"):
        return _answer(403, error=f"request from another origin ({origin}) refused")
    return None


def run_action(node: Any, request: Request, after_write: Callable[[], None]) -> Response:
    """Revive or delete the dead job the path names; the HTTP answer."""
    if not node.config.requirepass:
        return _answer(403, error="read-only: this node has no password (requirepass), "
                       "so its HTTP port cannot authenticate anyone and takes no changes")
    refused = forgery_refusal(request)
    if refused is not None:
        return refused
    # (an ID's base64 part may hold "/" and "+": the page percent-encodes it)
    quoted, _, action = request.path[len(PREFIX):].rpartition("/")
    name = unquote(quoted, errors="replace")
    raw_id = name.encode("utf-8")
    if not jobid.is_valid(raw_id):
        return _answer(400, error=f"not a job ID: {name!r}")
    job = node.jobs.get(raw_id)
    if job is None:
        return _answer(404, error=f"job {name} is not on this node")
    policy = job.policy
    if policy is None or not policy.dead_from:
        return _answer(409, error=f"job {name} is not dead (revived already?)")
    origin = policy.dead_from.decode("utf-8", "replace")
    reply = _execute(node, request, [b"REVIVE" if action == "revive" else b"DELJOB", raw_id])
    after_write()
    if reply.startswith(b"-"):
        text = reply[1:].strip().decode("utf-8", "replace")
        status = 503 if text.split(" ", 1)[0] in ("LOADING", "MISCONF", "OOM") else 500
        return _answer(status, error=text)
    if reply != b":1\r\n":
        return _answer(409, error=f"job {name} was not {action}d (state changed?)")
    if action == "revive":
        return _answer(200, message=f"job {name} revived: back in queue {origin}")
    return _answer(200, message=f"job {name} deleted from this node")


def _execute(node: Any, request: Request, argv: list[bytes]) -> bytes:
    """Run one command as an authenticated client that lives for it alone."""
    client = Client(0, request.peer, "", node.now_ms())
    client.authenticated = True
    client.name = "http"
    node.execute(client, argv)
    return b"".join(client.out)
