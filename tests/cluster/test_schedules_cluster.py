"""Periodic jobs (docs/schedules.md) on clusters of real nodes: one job a
tick while all nodes are up, still one or more a tick with a node killed
(the lowest ID, the one that fires first), SCHEDULE DEL stops them
everywhere, and a node that was away learns the schedule."""

import time

from tests.harness import wait_for

from .conftest import show

EVERY_SECOND = "* * * * * *"  # cronsim's 6-field form: seconds first


def _jobs(c, queue):
    """Every job of ``queue`` held on any live node: id -> its SHOW."""
    found = {}
    for i in c.alive():
        cursor = b"0"
        while True:
            cursor, ids = c[i].execute_command("JSCAN", cursor, "COUNT", 1000, "QUEUE", queue)
            for job_id in ids:
                job_id = job_id.decode()
                if job_id not in found:
                    found[job_id] = show(c[i], job_id)
            if cursor in (b"0", 0):
                break
    return found


def _per_second(jobs):
    """How many jobs were created in each second (ctime, ns, as Disque)."""
    counts = {}
    for info in jobs.values():
        second = int(info["ctime"]) // 10**9
        counts[second] = counts.get(second, 0) + 1
    return counts


def _lowest(c):
    ids = c.ids()
    return ids.index(min(ids))


def test_one_job_a_tick_then_del_stops_it(make_cluster):
    c = make_cluster(3)
    assert c[1].execute_command("SCHEDULE", "ADD", "beat", EVERY_SECOND, "ticks", "hello",
                                "RETRY", 30, "TTL", 600) == b"OK"
    wait_for(lambda: all(c[i].execute_command("SCHEDULE", "LIST") == [b"beat"]
                         for i in c.alive()), 5, message="the schedule on every node")
    time.sleep(5)
    assert c[2].execute_command("SCHEDULE", "DEL", "beat") == 1
    wait_for(lambda: all(c[i].execute_command("SCHEDULE", "LIST") == [] for i in c.alive()),
             5, message="deleted everywhere")
    time.sleep(0.5)
    jobs = _jobs(c, "ticks")
    counts = _per_second(jobs)
    assert len(counts) >= 4, counts
    assert set(counts.values()) == {1}, f"a tick fired more than once: {counts}"
    seconds = sorted(counts)
    assert seconds == list(range(seconds[0], seconds[-1] + 1)), f"a tick missed: {seconds}"
    assert all(info["body"] == b"hello" and info["retry"] == 30 for info in jobs.values())
    # nothing more once deleted
    time.sleep(2)
    assert set(_jobs(c, "ticks")) == set(jobs)
    fires = sum(int(c[i].info("stats")["schedule_fires"]) for i in c.alive())
    assert fires == len(jobs)


def test_still_fires_with_the_first_node_killed(make_cluster):
    c = make_cluster(3, config="appendonly yes\n")
    first = _lowest(c)
    other = (first + 1) % 3
    assert c[other].execute_command("SCHEDULE", "ADD", "beat", EVERY_SECOND, "ticks",
                                    "x", "RETRY", 30) == b"OK"
    wait_for(lambda: all(c[i].execute_command("SCHEDULE", "SHOW", "beat") is not None
                         for i in c.alive()), 5, message="the schedule on every node")
    time.sleep(2)
    shown = dict(zip(*[iter(c[other].execute_command("SCHEDULE", "SHOW", "beat"))] * 2))
    assert shown[b"last-node"] == c.ids()[first].encode()  # the lowest ID fires
    c.kill(first)
    killed_at = time.time()
    time.sleep(4)
    counts = _per_second(_jobs(c, "ticks"))
    after = [s for s in sorted(counts) if s > killed_at + 1]
    assert len(after) >= 2, counts
    assert after == list(range(after[0], after[-1] + 1)), f"a tick missed: {counts}"
    assert all(counts[s] >= 1 for s in after)
    # the killed node comes back from its AOF with the schedule and no
    # older tick firing again
    c.restart(first)
    c.wait_mesh()
    assert c[first].execute_command("SCHEDULE", "LIST") == [b"beat"]
    wait_for(lambda: dict(zip(*[iter(c[first].execute_command("SCHEDULE", "SHOW", "beat"))] * 2))
             [b"last-node"] == c.ids()[first].encode(), 10,
             message="the restarted node, lowest ID, fires again")


def test_a_node_away_learns_the_schedule_and_its_deletion(make_cluster):
    c = make_cluster(3, config="appendonly yes\n")
    c.kill(2)
    assert c[0].execute_command("SCHEDULE", "ADD", "daily", "0 9 * * *", "reports", "r") == b"OK"
    c.restart(2)
    c.wait_mesh()
    wait_for(lambda: c[2].execute_command("SCHEDULE", "LIST") == [b"daily"], 10,
             message="learnt on link up")
    assert c[1].execute_command("SCHEDULE", "LIST") == [b"daily"]
    c.kill(1)  # (it reloads the schedule from its AOF: the deletion must win)
    assert c[0].execute_command("SCHEDULE", "DEL", "daily") == 1
    c.restart(1)
    c.wait_mesh()
    wait_for(lambda: c[1].execute_command("SCHEDULE", "LIST") == [], 10,
             message="the deletion reaches it")


def _tombstones(c):
    return [c[i].info("stats")["schedule_tombstones"] for i in c.alive()]


def test_a_tombstone_waits_for_a_node_away_then_goes_everywhere(make_cluster):
    """A deletion is kept while a known node has not been seen holding it
    (it is down, with the live schedule in its AOF): when that node comes
    back it learns the deletion rather than bringing the schedule back,
    and then every node forgets the tombstone."""
    c = make_cluster(3, config="appendonly yes\nappendfsync always\n"
                               "schedule-tombstone-ms 300\n")
    base = c[1].info("memory")["used_memory"]
    assert c[0].execute_command("SCHEDULE", "ADD", "daily", "0 9 * * *", "r", "x") == b"OK"
    wait_for(lambda: all(c[i].execute_command("SCHEDULE", "LIST") == [b"daily"]
                         for i in c.alive()), 5, message="the schedule on every node")
    c.kill(2)
    assert c[1].execute_command("SCHEDULE", "DEL", "daily") == 1
    time.sleep(2)  # many times schedule-tombstone-ms
    assert _tombstones(c) == [1, 1], "dropped although node 2 never had the deletion"
    c.restart(2)
    c.wait_mesh()
    wait_for(lambda: _tombstones(c) == [0, 0, 0], 10, message="dropped everywhere")
    assert c[1].info("memory")["used_memory"] == base  # with the peers' marks
    assert all(c[i].execute_command("SCHEDULE", "LIST") == [] for i in c.alive())
    # the records the nodes send each other at link-up bring nothing back
    c.restart(0)
    c.wait_mesh()
    time.sleep(1)
    assert all(c[i].execute_command("SCHEDULE", "LIST") == [] for i in c.alive())
    assert _tombstones(c) == [0, 0, 0]
