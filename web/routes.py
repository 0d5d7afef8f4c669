"""What the HTTP port answers: /metrics."""

from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST

from .http_connection import Handler, Response, plain
from .metrics import MetricsExporter


def node_routes(node: Any) -> Handler:
    """The request handler of ``node``'s HTTP port."""
    exporter = MetricsExporter(node)

    def handle(method: str, path: str) -> Response:
        if path == "/metrics":
            return Response(200, CONTENT_TYPE_LATEST, exporter.render())
        return plain(404, "not found\n")
    return handle
