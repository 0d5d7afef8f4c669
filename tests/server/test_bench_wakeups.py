"""bench/wakeups.py's smoke run (issue 29): a 3-node cluster, a few
unpipelined replicated jobs, each node's CPU per job counted."""

from bench import wakeups
from bench.cluster import start_cluster
from bench.servers import start_trisque


def test_each_node_spends_cpu_on_replicated_jobs_and_the_waiter_gets_them():
    nodes = start_cluster(3, start_trisque)
    try:
        per_node, wall, latencies = wakeups.measure(nodes, 200, 3, e2e=True)
    finally:
        for n in nodes:
            n.stop()
    assert len(per_node) == 3 and wall > 0
    # (CPU in schedstat's ns: every node, a replica too, has worked on
    # each of the 200 jobs)
    assert all(cpu > 0 for cpu, *_ in per_node), per_node
    assert len(latencies) == 200 and latencies[0] > 0


def test_an_open_loop_run_at_a_fixed_rate_counts_each_nodes_cpu_per_job():
    nodes = start_cluster(3, start_trisque)
    try:
        per_node, run = wakeups.measure_at_rate(nodes, 300, 1.0)
    finally:
        for n in nodes:
            n.stop()
    assert run.produced > 0 and run.errors == 0 and run.lost == 0
    assert run.histograms["got"].get_total_count() == run.produced
    assert all(cpu > 0 for cpu, *_ in per_node), per_node
