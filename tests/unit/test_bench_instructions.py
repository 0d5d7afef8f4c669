"""bench/instructions.py --policies measures what it says: the jobs of
each kind really carry (or not) a delivery limit and a priority, and the
report has a row per kind."""

from bench import instructions


def _jobs_added(kind):
    node, client, requests = instructions.setup(50, kind)
    instructions.run(node, client, requests["ADDJOB"])
    return list(node.jobs.values())


def test_each_kind_adds_the_jobs_it_names():
    assert all(job.policy is None for job in _jobs_added("plain"))
    for kind in ("options", "qconfig"):
        jobs = _jobs_added(kind)
        assert len(jobs) == 50
        assert all(job.policy is not None and job.policy.max_deliveries == 5
                   and job.policy.priority == 7 for job in jobs), kind


def test_cycle_report_rows():
    costs = instructions.cycle_costs(200, False, False)
    report = instructions.cycle_report(costs, 200, False)
    rows = report.splitlines()[2:]
    assert [row.split()[0] for row in rows] == list(instructions.KINDS)
    assert float(rows[0].split()[-1]) == 1.0  # plain against itself
    assert all(costs[kind] > 0 for kind in instructions.KINDS)


def test_waiter_cycle_serves_and_acks_every_job():
    # (waiter_cycles raises if a job was left or a consumer not blocked again)
    assert instructions.waiter_cycles(300) > 0


def test_acks_follow_the_order_jobs_were_added():
    # (ACKJOB's figure is for FIFO acks; --shuffle measures the others)
    node, client, requests = instructions.setup(300, "plain")
    instructions.run(node, client, requests["ADDJOB"])
    ids = instructions.acks_in_added_order(node)
    assert [node.jobs[job_id].body for job_id in ids] == [b"%012d" % i for i in range(300)]
    assert ids != [job.id for job in node.jobs.values()]  # not the registry's order
