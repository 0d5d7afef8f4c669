"""What the HTTP port answers: the dashboard's files, its JSON, /metrics,
and the dashboard's job actions.

With ``requirepass`` every path asks for the password (http_auth.py) except
/metrics, which stays open unless ``http-metrics-auth yes`` (scrapers are
usually configured without credentials, and it shows counters and queue
names, not jobs).
"""

import json
from importlib import resources
from typing import Any, Callable

from prometheus_client import CONTENT_TYPE_LATEST

from . import http_auth, job_actions
from .http_connection import Handler, Request, Response, plain
from .metrics import MetricsExporter
from .overview import overview

# Served as they are in the package (no build step): path -> (file, type).
STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/dashboard.js": ("dashboard.js", "text/javascript; charset=utf-8"),
    "/dashboard.css": ("dashboard.css", "text/css; charset=utf-8"),
}
READ_METHODS = ("GET", "HEAD")


def load_static() -> dict[str, Response]:
    files = resources.files(__package__).joinpath("static")
    return {path: Response(200, content_type, files.joinpath(name).read_bytes())
            for path, (name, content_type) in STATIC.items()}


def _not_allowed(allow: str) -> Response:
    return Response(405, "text/plain; charset=utf-8", b"method not allowed\n",
                    (("allow", allow),))


def node_routes(node: Any, after_write: Callable[[], None] = lambda: None) -> Handler:
    """The request handler of ``node``'s HTTP port.  ``after_write``: called
    once a job action ran, so replies it made to blocked clients go out."""
    static = load_static()
    exporter = MetricsExporter(node)

    async def handle(request: Request) -> Response:
        path = request.path
        if path != "/metrics" or node.config.http_metrics_auth:
            refused = await http_auth.refusal(node, request)
            if refused is not None:
                return refused
        if job_actions.is_action(path):
            if request.method != "POST":
                return _not_allowed("POST")
            response = job_actions.run_action(node, request, after_write)
            if node.log_active:  # (answered once the AOF holds the change)
                await node.log.wait_durable(node.log.end)
            return response
        if request.method not in READ_METHODS:
            return _not_allowed(", ".join(READ_METHODS))
        if path == "/metrics":
            return Response(200, CONTENT_TYPE_LATEST, exporter.render())
        if path == "/api/overview":
            body = json.dumps(overview(node), separators=(",", ":")).encode()
            return Response(200, "application/json", body)
        found = static.get(path)
        if found is not None:
            return found
        return plain(404, "not found\n")
    return handle
