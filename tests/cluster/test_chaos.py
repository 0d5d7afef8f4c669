"""A short kill -9 chaos run in the normal suite (tests/chaos/run.py)."""

import random

from tests.chaos.run import Plan, node_config, run


def test_kill9_under_load_loses_no_answered_job_and_gc_frees_all(make_cluster):
    cluster = make_cluster(3, config=node_config("everysec"))
    # Kills 1.5-2.5 s after the last restart: 4-6 in 20 s, at least 3 even
    # if a loaded machine makes restarts take 4 s.
    plan = Plan(replicate=2, duration=20, rate=200, pause=(1.5, 2.5),
                seed=random.randrange(1 << 30), drain_timeout=25)
    s = run(cluster, plan)
    assert s["thread_failures"] == [] and s["crashes"] == [], s
    assert s["kills"] >= 3, s
    assert s["answered_adds"] > 500, s
    assert s["starved"] == 0 and s["lost"] == 0, s  # every answered body delivered
    assert s["gc_complete"] and s["registered_jobs"] == [0, 0, 0], s
    assert s["acks"] > 500, s  # the consumers did work too
