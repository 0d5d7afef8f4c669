"""/metrics of a real 2-node cluster: the peer's state, bus frames by type
and the replication latency to the peer."""

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.harness import Server, free_port, wait_for

from .conftest import NODE_TIMEOUT_MS, Cluster


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_cluster_series() -> None:
    http_ports = [free_port(), free_port()]
    servers = [Server(config=f"cluster-node-timeout {NODE_TIMEOUT_MS}\nhttp-port {p}\n")
               for p in http_ports]
    for s in servers:
        s.start()
    cluster = Cluster(servers)
    try:
        cluster.meet_chain()
        cluster.wait_mesh()
        ids = cluster.ids()
        for i in range(5):
            cluster[0].execute_command("ADDJOB", "rq", f"j{i}", 5000, "REPLICATE", 2)
        peer = (("address", f"127.0.0.1:{servers[1].port}"), ("node_id", ids[1]))
        m = scrape(http_ports[0])
        assert m[("trisque_cluster_node_state", tuple(sorted(peer + (("state", "ok"),))))] == 1
        assert m[("trisque_cluster_node_link", peer)] == 1
        assert m[("trisque_replication_latency_seconds_count", peer)] == 5
        assert m[("trisque_replication_latency_seconds_bucket", tuple(sorted(
            peer + (("le", "+Inf"),))))] == 5
        assert m[("trisque_bus_frames_sent_total", (("type", "REPLJOB"),))] >= 1
        wait_for(lambda: scrape(http_ports[1]).get(
            ("trisque_bus_frames_sent_total", (("type", "GOTJOB"),)), 0) >= 1, 5,
            message="node 1 counting its GOTJOB frames")
        m1 = scrape(http_ports[1])
        assert m1[("trisque_bus_frames_received_total", (("type", "REPLJOB"),))] >= 1
    finally:
        cluster.close()
