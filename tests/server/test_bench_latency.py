"""bench/latency.py's smoke run (issue 29): the open-loop generator against
real servers, every request answered and timed, end to end included."""

import shutil

import pytest

from bench import latency

pytestmark = pytest.mark.skipif(
    not (shutil.which("cc") or shutil.which("gcc")) or shutil.which("redis-server") is None,
    reason="needs a C compiler (bench/loadgen.c) and redis-server")


def test_open_loop_times_every_request_and_every_job(tmp_path):
    chosen = [latency.SCENARIOS["addjob-r1"], latency.SCENARIOS["e2e-local"],
              latency.SCENARIOS["e2e-local-r1"], latency.SCENARIOS["e2e-federated"]]
    plot = tmp_path / "latency.png"
    rows = latency.run(0.3, [0.05], chosen, nodes=2, disque=None, max_requests=2000,
                       plot=str(plot))
    points = {(r.scenario, r.server, r.point) for r in rows}
    for server in ("trisque", "redis"):
        assert ("addjob-r1", server, "sent") in points
        assert ("e2e-local", server, "got") in points
        assert ("e2e-local-r1", server, "got") in points
    for scenario in ("e2e-local", "e2e-local-r1", "e2e-federated"):
        assert (scenario, "trisque", "acked") in points
    for r in rows:
        assert r.lost == 0 and r.errors == 0, r
        p50, p90, p99, p999, top = r.percentiles
        assert 0 < p50 <= p90 <= p99 <= p999 <= top, r
    assert plot.stat().st_size > 0


def test_fixed_rates_skip_the_maxima_and_say_how_busy_the_machine_was(capsys):
    chosen = [latency.SCENARIOS["e2e-local-r1"]]
    rows = latency.run(0.3, [], chosen, nodes=1, disque=None, max_requests=2000,
                       plot=None, at=[200.0])
    assert "maximum" not in capsys.readouterr().out
    assert {(r.server, r.rate, r.point) for r in rows} == {
        (server, 200.0, point) for server in ("trisque", "redis") for point in ("got", "acked")
        if not (server == "redis" and point == "acked")}
    for r in rows:
        # the servers and the generator used some CPU, waited none or some
        assert 0 < r.cpu_share <= 1.0, r
        assert r.waited_ms >= 0, r


def test_a_repeated_rate_gives_a_row_for_each_run(tmp_path):
    chosen = [latency.SCENARIOS["addjob-r1"]]
    plot = tmp_path / "repeated.png"
    rows = latency.run(0.3, [], chosen, nodes=1, disque=None, max_requests=2000,
                       plot=str(plot), at=[200.0, 300.0], repeat=2)
    runs: dict = {}
    for r in rows:
        runs.setdefault((r.server, r.rate, r.point), []).append(r)
    assert set(runs) == {(server, rate, "sent") for server in ("trisque", "redis")
                         for rate in (200.0, 300.0)}
    assert all(len(these) == 2 for these in runs.values())
    assert all(r.lost == 0 and r.errors == 0 for r in rows)
    assert plot.stat().st_size > 0
