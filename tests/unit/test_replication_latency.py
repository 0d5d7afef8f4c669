"""The replication latency histogram (/metrics): a run of GOTJOBs recorded
at once counts as each recorded alone."""

from trisque.cluster.replication_latency import BUCKETS, ReplicationLatency


def test_a_run_counts_as_each_alone():
    one_by_one, in_runs = ReplicationLatency(), ReplicationLatency()
    for latency_ms, times in [(0, 3), (1, 2), (5, 4), (-7, 2), (2**40, 1), (1000, 5)]:
        for _ in range(times):
            one_by_one.record(latency_ms)
        in_runs.record(latency_ms, times)
    assert in_runs.hist == one_by_one.hist
    assert (in_runs.count, in_runs.sum_ms) == (one_by_one.count, one_by_one.sum_ms) == (17, 2**40 + 5022)
    assert one_by_one.hist[0] == 5 and one_by_one.hist[3] == 4 and one_by_one.hist[BUCKETS - 1] == 1
