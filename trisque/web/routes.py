"""What the HTTP port answers: the dashboard's files, its JSON, /metrics."""

import json
from importlib import resources
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST

from .http_connection import Handler, Response, plain
from .metrics import MetricsExporter
from .overview import overview

# Served as they are in the package (no build step): path -> (file, type).
STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/dashboard.js": ("dashboard.js", "text/javascript; charset=utf-8"),
    "/dashboard.css": ("dashboard.css", "text/css; charset=utf-8"),
}


def load_static() -> dict[str, Response]:
    files = resources.files(__package__).joinpath("static")
    return {path: Response(200, content_type, files.joinpath(name).read_bytes())
            for path, (name, content_type) in STATIC.items()}


def node_routes(node: Any) -> Handler:
    """The request handler of ``node``'s HTTP port."""
    static = load_static()
    exporter = MetricsExporter(node)

    def handle(method: str, path: str) -> Response:
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
