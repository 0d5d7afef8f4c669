"""LoadProgress: percent, jobs/s and ETA of an AOF load from its counts."""

from trisque.server.aof.load_progress import LoadProgress


def test_rate_and_eta_from_the_counts() -> None:
    p = LoadProgress()
    assert p.percent() == 0 and p.eta_s() == 0  # nothing known yet
    p.total_bytes = 1000
    p.started = 100.0
    p.update(250, 5000)
    assert p.percent() == 25.0
    assert p.jobs_per_s(now=102.0) == 2500.0
    assert p.eta_s(now=102.0) == 6.0  # 250 bytes took 2 s: 750 more take 6
    fields = p.info_fields()
    assert fields["loading_loaded_perc"] == "25.00" and fields["loading_loaded_jobs"] == 5000
    assert "ETA" in p.log_line() and "jobs/s" in p.log_line()
