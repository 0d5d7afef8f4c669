"""bench/scale.py's smoke run (issue 29): each part against real servers
(the simulator for the bus model), small, its figures sane."""

import shutil

import pytest

from bench import scale

pytestmark = pytest.mark.skipif(
    shutil.which("redis-benchmark") is None or shutil.which("redis-server") is None
    or not (shutil.which("cc") or shutil.which("gcc")),
    reason="needs redis-server, redis-benchmark and a C compiler")


def test_idle_connections_are_counted_and_leave_the_active_clients_working():
    figures = scale.connections(500, 2000)
    # A node's used_memory counts its data, not its clients (Redis's counts
    # their buffers): the process's RSS shows what an idle client costs.
    assert figures["trisque"][0] > 0, figures
    assert figures["redis"][1] > 0, figures
    assert all(ratio > 0 for _rss, _used, ratio in figures.values()), figures


def test_a_queue_costs_memory_beyond_its_job():
    rss, counted = scale.queues(2000)
    assert counted > 0  # maxmemory sees queues


def test_nodes_report_idle_bus_traffic_and_cpu_per_replicated_job():
    figures = scale.nodes([3], 1.0, 2000)
    msgs, idle_bytes, origin, copy, total = figures[3]
    assert msgs > 0 and origin > 0 and copy > 0 and total >= origin + copy
    assert idle_bytes > 0  # the bus writes while idle (pings)


def test_the_simulated_bus_grows_with_the_cluster():
    figures = scale.bus_model([3, 7], 20, 15000)
    assert 0 < figures[3][1] < figures[7][1]  # bytes a second a node
