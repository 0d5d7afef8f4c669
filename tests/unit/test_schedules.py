"""Periodic jobs on a lone node core with a fake clock (docs/schedules.md):
ticks, the firing rule, the record's codec, last-writer-wins."""

from tests.unit.conftest import is_error
from trisque.core.jobs import schedule as schedule_codec
from trisque.core.jobs.schedules import FIRED_TICKS_KEPT


def run_cron(core, seconds, step=0.1):
    """The housekeeping timer every ``step`` s for ``seconds``."""
    for _ in range(round(seconds / step)):
        core.now += step
        core.cron()


def test_one_job_a_tick_from_the_next_tick_on(core):
    core.now = 1_700_000_000.5  # mid-second: the tick at .0 is past, not fired
    assert core("SCHEDULE", "ADD", "s", "* * * * * *", "q", "b", "RETRY", 9) == b"OK"
    core.cron()
    assert core("QLEN", "q") == 0, "a new schedule does not fire its past tick"
    run_cron(core, 3)
    assert core("QLEN", "q") == 3
    shown = dict(zip(*[iter(core("SCHEDULE", "SHOW", "s"))] * 2))
    assert shown[b"last-tick"] == 1_700_000_003_000
    assert shown[b"next-tick"] == 1_700_000_004_000
    job = core.job(shown[b"last-job"])
    assert job.retry_s == 9 and job.policy.idempotency_key == b"schedule:s:1700000003000"
    assert core.node.schedules.fired == 3


def test_a_lone_node_is_rank_0_but_waits_after_starting(make_core):
    core = make_core()
    core.node.schedules.started_ms = int(core.now * 1000)
    core.now = float(int(core.now)) + 0.05
    assert core("SCHEDULE", "ADD", "s", "* * * * * *", "q", "b") == b"OK"
    core.now += 1.0  # tick T, 0.95 s after the start: grace 2 s, step 125 ms
    core.cron()
    assert core("QLEN", "q") == 0, "just started: waits"
    core.now += 0.13
    core.cron()
    assert core("QLEN", "q") == 0, "just started: one and a half steps, not one (rank 1's)"
    core.now += 0.06
    core.cron()
    assert core("QLEN", "q") == 1


def test_a_tick_heard_fired_is_not_fired_again(core):
    core.now = 1_700_000_000.5
    core("SCHEDULE", "ADD", "s", "* * * * * *", "q", "b")
    core.node.schedules.mark_fired(b"s", 1_700_000_001_000, "b" * 40,
                                   b"D-bbbbbbbb-AAAAAAAAAAAAAAAAAAAAAAAA-05a1")
    run_cron(core, 0.8)
    assert core("QLEN", "q") == 0
    run_cron(core, 1.0)
    assert core("QLEN", "q") == 1


def test_a_tick_from_the_future_does_not_hide_the_ones_before(core):
    core.now = 1_700_000_000.5
    core("SCHEDULE", "ADD", "s", "* * * * * *", "q", "b")
    core.node.schedules.mark_fired(b"s", 1_700_000_009_000, "b" * 40,
                                   b"D-bbbbbbbb-AAAAAAAAAAAAAAAAAAAAAAAA-05a1")
    run_cron(core, 2.0)
    assert core("QLEN", "q") == 2
    entry = core.node.schedules.by_name[b"s"]
    assert entry.fired_tick_ms == 1_700_000_009_000  # SHOW's latest stays the latest
    for tick in range(100):
        core.node.schedules.mark_fired(b"s", tick * 1000, "b" * 40, entry.fired_job)
    assert len(entry.fired_ticks) == FIRED_TICKS_KEPT


def test_del_stops_it_and_an_older_add_does_not_return(core):
    core.now = 1_700_000_000.5
    core("SCHEDULE", "ADD", "s", "* * * * * *", "q", "b")
    old = core.node.schedules.by_name[b"s"]
    assert core("SCHEDULE", "DEL", "s") == 1
    assert core("SCHEDULE", "DEL", "s") == 0
    assert core.node.schedules.apply(old) is False
    run_cron(core, 2)
    assert core("QLEN", "q") == 0
    assert core("SCHEDULE", "SHOW", "s") is None
    assert core("SCHEDULE", "LIST") == []


def test_the_record_round_trips_and_skips_newer_tags():
    entry = schedule_codec.Schedule(b"n", b"0 3 * * *", b"q", b"body\x00",
                                    [b"TTL", b"60", b"PRIORITY", b"7"], 123, 456, "c" * 40)
    raw = schedule_codec.encode(entry)
    back = schedule_codec.decode(b"n", raw + b"\x09\x02\x00\x00\x00zz", 456, "c" * 40)
    assert (back.expr, back.queue, back.body, back.options, back.created_ms) == (
        entry.expr, entry.queue, entry.body, entry.options, entry.created_ms)
    for bad in (raw[:5], raw[:-1], raw + b"\x01"):
        try:
            schedule_codec.decode(b"n", bad, 1, "c" * 40)
        except ValueError:
            continue
        raise AssertionError(f"decoded {bad!r}")


def test_errors(core):
    assert is_error(core("SCHEDULE", "ADD", "s", "* * * * * * *", "q", "b"),
                    "ERR invalid cron expression")
    assert is_error(core("SCHEDULE", "ADD", "s", "* * * * *", "q", "b", "RETRY", 0),
                    "ERR With RETRY set to 0")
    assert is_error(core("SCHEDULE", "ADD", "s", "* * * * *", "q", "b", "BACKOFF", "fast"),
                    "ERR BACKOFF takes")
    assert is_error(core("SCHEDULE", "SHOW"), "ERR syntax error")
    assert core("SCHEDULE", "LIST") == []
    assert core.node.schedules.memory == 0


def test_the_dashboard_lists_schedules(core):
    import json

    from trisque.web.overview import overview
    core.now = 1_700_000_000.5
    core("SCHEDULE", "ADD", "s", "*/2 * * * * *", "q", "b")
    run_cron(core, 2)
    data = json.loads(json.dumps(overview(core.node)))
    assert data["schedules"] == [{"name": "s", "cron": "*/2 * * * * *", "queue": "q",
                                  "next_tick_ms": 1_700_000_004_000,
                                  "last_tick_ms": 1_700_000_002_000,
                                  "last_node": core.node.id}]
