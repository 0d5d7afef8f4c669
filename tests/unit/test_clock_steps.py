"""A wall clock set back (an NTP step, an operator, a VM resumed): the
node's waits keep what was left of them (JobLifecycle.watch_clock), the
TTL stays a point in time.  Simulator seed 1083 (3 nodes, clockjump): a
node whose clock went back 43 s in three steps held a delivered RETRY 4
job for 47 s before queueing it again."""

from tests.unit.conftest import is_error
from trisque.core.jobs.lifecycle import CLOCK_STEP_MS

SET_BACK_S = 60


def _queued(core, queue=b"q"):
    return core("QLEN", queue)


def test_requeue_after_retry_though_the_clock_went_back(core):
    job_id = core("ADDJOB", "q", "body", 0, "RETRY", 2, "TTL", 600)
    assert core("GETJOB", "NOHANG", "FROM", "q")[0][1] == job_id
    core.advance(1)
    core.now -= SET_BACK_S
    core.advance(0.1)  # the timers' next look (the cron's, every 100 ms) sees the step
    assert _queued(core) == 0
    core.advance(1.5)  # 2.6 s since the delivery
    assert _queued(core) == 1
    assert core.node.clock_steps_back == 1
    assert core("GETJOB", "NOHANG", "FROM", "q")[0][1] == job_id


def test_delay_after_its_time_though_the_clock_went_back(core):
    job_id = core("ADDJOB", "q", "body", 0, "DELAY", 5, "TTL", 600)
    core.advance(2)
    core.now -= SET_BACK_S
    core.advance(0.1)
    core.advance(2)
    assert _queued(core) == 0
    core.advance(1.5)  # 5.6 s since ADDJOB
    assert _queued(core) == 1
    assert core("GETJOB", "NOHANG", "FROM", "q")[0][1] == job_id


def test_nack_delay_after_its_time_though_the_clock_went_back(core):
    job_id = core("ADDJOB", "q", "body", 0, "RETRY", 60, "TTL", 600)
    core("GETJOB", "NOHANG", "FROM", "q")
    assert core("NACK", job_id, "DELAY", 3) == 1
    core.now -= SET_BACK_S
    core.advance(0.1)
    core.advance(2)
    assert _queued(core) == 0
    core.advance(1.5)
    assert _queued(core) == 1


def test_ttl_stays_a_point_in_time(core):
    """The TTL is shared by every holder as a time (Disque's etime): a
    clock set back keeps the job longer, as it would on any holder."""
    job_id = core("ADDJOB", "q", "body", 0, "TTL", 10)
    core.now -= SET_BACK_S
    core.advance(11)
    assert core("SHOW", job_id) is not None
    core.advance(SET_BACK_S)
    assert core("SHOW", job_id) is None


def test_blocked_getjob_times_out_though_the_clock_went_back(core):
    consumer = core.client()
    assert core("GETJOB", "TIMEOUT", 500, "FROM", "q", client=consumer) is None
    core.now -= SET_BACK_S
    core.advance(0.1)
    assert core.replies(consumer) == []
    core.advance(0.5)
    assert core.replies(consumer) == [None]


def test_a_wait_begun_right_after_the_step_keeps_its_timeout(core):
    """Simulator seed 2238 (3 nodes, mixed): a WAITJOB TIMEOUT 300 begun
    after the clock went back but before the timers' next look had its
    deadline moved back with the older ones at that look, and ended 3 ms
    later."""
    consumer = core.client()
    core.now -= SET_BACK_S
    assert core("GETJOB", "TIMEOUT", 500, "FROM", "q", client=consumer) is None
    core.advance(0.1)
    assert core.replies(consumer) == []
    core.advance(0.5)
    assert core.replies(consumer) == [None]


def test_small_steps_cost_no_walk(core):
    """A step under CLOCK_STEP_MS is not worth a walk of every job; a
    few of them in a row that add up to it are."""
    core("ADDJOB", "q", "body", 0, "RETRY", 2, "TTL", 600)
    core("GETJOB", "NOHANG", "FROM", "q")
    step_s = CLOCK_STEP_MS / 1000 * 0.6
    core.now -= step_s
    core.advance(0.1)
    assert core.node.clock_steps_back == 0
    core.now -= step_s
    core.advance(0.1)
    assert core.node.clock_steps_back == 1
    reply = core("ADDJOB", "q", "x", 0, "RETRY", 0)
    assert not is_error(reply), reply  # the node goes on as before
