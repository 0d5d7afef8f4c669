"""Issue 13's scenario in the normal suite (tests/chaos, --scenario
restart-empty), short: nodes without an AOF, REPLICATE = nodes, one node
kill -9ed and restarted empty under its old ID while producers and short
polling consumers run. Every answered job must reach a consumer: none
starved (a copy left, never delivered) and none lost (no copy left)."""

import random

import pytest

from tests.chaos.run import Plan, run


@pytest.mark.parametrize("polling", ["random", "sticky"])
def test_node_restarted_empty_starves_no_job(make_cluster, polling):
    # Disque's default node timeout: the others never flag the restarted
    # node as failed, as in the scenario a user ran.
    cluster = make_cluster(3, node_timeout_ms=15000)
    plan = Plan(replicate=3, duration=7, schedule="once", kill_at=2.5, restart_at=4.5,
                producers=4, consumers=4, rate=250, count=20, acking="batch",
                unacked_batches=0.05, socket_timeout=2, client_retries=3,
                polling=polling, seed=random.randrange(1 << 30), drain_timeout=30)
    s = run(cluster, plan)
    assert s["thread_failures"] == [] and s["crashes"] == [], s
    assert s["kills"] == 1, s
    assert s["answered_adds"] > 500, s
    assert s["starved"] == 0, s
    assert s["lost"] == 0, s
    assert s["gc_complete"] and s["registered_jobs"] == [0, 0, 0], s
