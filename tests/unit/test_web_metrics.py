"""The /metrics collector and the dashboard's JSON on a node core in
process (no sockets, no AOF log): every family renders and parses."""

import json
import time

from prometheus_client.parser import text_string_to_metric_families

from trisque.cluster.cluster import Cluster
from trisque.cluster.outbox import Transport
from trisque.core.admin.config import Config
from trisque.core.node import Node
from trisque.core.table import COMMANDS
from trisque.web.metrics import MetricsExporter
from trisque.web.overview import overview


def test_collector_and_overview_on_a_bare_core() -> None:
    node = Node(Config(), "a" * 40, time.time, table=COMMANDS)
    Cluster(node, Transport(), "127.0.0.1", 7711, 17711)
    client = node.add_client()
    node.execute(client, [b"ADDJOB", b"q1", b"body", b"0"])
    text = MetricsExporter(node).render().decode()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
    assert samples[("trisque_queue_length", (("queue", "q1"),))] == 1
    assert samples[("trisque_commands_total", (("command", "addjob"),))] >= 1
    data = json.loads(json.dumps(overview(node)))
    assert data["queues"][0]["name"] == "q1" and data["registered_jobs"] == 1
