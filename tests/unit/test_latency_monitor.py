"""The latency monitor's series (core/admin/latency_monitor.py), on a
clock of the test's: one sample a second, the worst of it; SAMPLES kept."""

from trisque.core.admin.latency_monitor import SAMPLES, LatencyMonitor


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_off_and_below_the_threshold_record_nothing():
    off = LatencyMonitor(0, Clock())
    off.record("command", 10_000)
    assert off.latest() == [] and "off" in off.doctor()
    on = LatencyMonitor(100, Clock())
    on.record("command", 99)
    assert on.latest() == [] and "No event" in on.doctor()


def test_one_sample_a_second_keeps_its_worst():
    clock = Clock()
    monitor = LatencyMonitor(10, clock)
    monitor.record("command", 30)
    monitor.record("command", 50)
    monitor.record("command", 20)  # the same second: 50 stays
    clock.now += 1
    monitor.record("command", 15)
    assert monitor.history("command") == [[1_700_000_000, 50], [1_700_000_001, 15]]
    assert monitor.latest() == [["command", 1_700_000_001, 15, 50]]


def test_samples_are_capped_and_the_worst_outlives_them():
    clock = Clock()
    monitor = LatencyMonitor(1, clock)
    monitor.record("cron", 900)
    for i in range(SAMPLES + 10):
        clock.now += 1
        monitor.record("cron", 5 + i % 3)
    history = monitor.history("cron")
    assert len(history) == SAMPLES
    assert history[-1][0] == int(clock.now)
    assert monitor.latest()[0][3] == 900  # the all-time worst, its sample gone


def test_reset_by_name_and_all():
    monitor = LatencyMonitor(1, Clock())
    for event in ("command", "cron", "gc"):
        monitor.record(event, 3)
    assert monitor.reset(["cron", "nosuch"]) == 1
    assert [row[0] for row in monitor.latest()] == ["command", "gc"]
    assert monitor.reset() == 2
    assert monitor.latest() == [] and monitor.history("command") == []


def test_graph_and_doctor_describe_the_samples():
    clock = Clock()
    monitor = LatencyMonitor(1, clock)
    for ms in (10, 40, 20):
        monitor.record("aof-write", ms)
        clock.now += 61
    graph = monitor.graph("aof-write")
    assert graph is not None
    lines = graph.splitlines()
    assert lines[0] == "aof-write - high 40 ms, low 10 ms (all time high 40 ms)"
    assert lines[2] == " #"  # only the 40 ms sample reaches the top row
    assert lines[5] == "###"  # every sample the bottom one
    assert monitor.graph("nosuch") is None
    doctor = monitor.doctor()
    assert doctor.startswith("Events of 1 ms or more")
    assert "aof-write: 3 seconds with a spike" in doctor and "disk" in doctor
    monitor.threshold_ms = 0  # turned off: what it recorded stays, and says so
    assert monitor.doctor().startswith("Events recorded while the monitor was on")
