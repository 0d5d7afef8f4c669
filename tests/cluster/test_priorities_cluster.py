"""Priority levels across real nodes (docs/lifecycle.md): a level travels
with every copy, and federation (NEEDJOBS/YOURJOBS) moves the highest
levels first to a node whose consumers wait."""

from tests.harness import wait_for

from .conftest import addjob, show


def test_replicas_keep_the_level(cluster3):
    c = cluster3
    job_id = addjob(c[0], "q", "x", "REPLICATE", 3, "PRIORITY", 9)
    wait_for(lambda: len(c.job_holders(job_id)) == 3, 5, message="3 copies")
    assert all(show(c[i], job_id)["priority"] == 9 for i in c.alive())


def test_federation_moves_high_levels_first(cluster3):
    c = cluster3
    low = [addjob(c[0], "fq", f"low{n}", "REPLICATE", 1, "PRIORITY", 1) for n in range(8)]
    plain = [addjob(c[0], "fq", f"plain{n}", "REPLICATE", 1) for n in range(8)]
    high = [addjob(c[0], "fq", f"high{n}", "REPLICATE", 1, "PRIORITY", 9) for n in range(2)]
    got = c[1].execute_command("GETJOB", "TIMEOUT", 10000, "FROM", "fq")
    assert got is not None
    assert got[0][1].decode() == high[0], "the first job moved is the highest level's oldest"
    # what node 1 imported is the head of node 0's queue: high, then plain, never low first
    imported = [item[1].decode() for item in c[1].execute_command("QPEEK", "fq", 100)]
    order = high[1:] + plain
    assert imported == order[:len(imported)]
    assert not set(imported) & set(low)
