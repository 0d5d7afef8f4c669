"""A 5-node cluster of real trisque-server processes, shared by the
federation tests of a module (each test uses its own queue names)."""

import pytest

from tests.cluster.conftest import build_cluster, cluster_info


@pytest.fixture(scope="module")
def cluster5():
    cluster = build_cluster(5)
    yield cluster
    cluster.close()


def fed_stats(client):
    """The federation counters of CLUSTER INFO, as ints."""
    info = cluster_info(client)
    return {k[len("cluster_stats_"):]: int(v) for k, v in info.items()
            if k.startswith("cluster_stats_") and ("jobs" in k)}
