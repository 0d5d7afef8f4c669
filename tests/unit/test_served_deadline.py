"""A consumer served while blocked in GETJOB and blocking again: its
TIMEOUTs end when they should (the one after, longer or shorter, none at
all, a BLPOP's), the first one's deadline answers nobody late and is no
wake-up of the timers, and nothing is left behind once the client goes.
(A served GETJOB's deadline left in place, to save its cancel and the
next set, must keep all of these: bench/README.md, twenty-ninth session.)"""

from tests.unit.conftest import Core

SET_BACK_S = 60


def served(core, timeout_ms=100):
    """A consumer blocked with ``timeout_ms`` and then served a job."""
    consumer = core.client()
    assert core("GETJOB", "TIMEOUT", timeout_ms, "FROM", "q", client=consumer) is None
    core.advance(0.03)
    job_id = core("ADDJOB", "q", "x", 0)
    got = core.replies(consumer)
    assert len(got) == 1 and got[0][0][1] == job_id
    assert core("ACKJOB", job_id, client=consumer) == 1
    return consumer


def test_a_served_consumer_blocking_again_times_out_at_its_new_timeout(core):
    consumer = served(core)  # its first TIMEOUT ended 100 ms after its start
    core.advance(0.02)
    assert core("GETJOB", "TIMEOUT", 100, "FROM", "q", client=consumer) is None
    core.advance(0.06)  # past the first TIMEOUT's end
    assert core.replies(consumer) == []
    core.advance(0.035)  # 95 ms into the second
    assert core.replies(consumer) == []
    core.advance(0.01)
    assert core.replies(consumer) == [None]
    assert consumer.wake_ms is None and consumer.blocked is None


def test_a_served_consumer_gets_no_late_reply_and_leaves_no_deadline(core):
    consumer = served(core)
    core.advance(0.5)
    assert core.replies(consumer) == []
    assert consumer.wake_ms is None and len(core.node.deadlines) == 0


def test_a_shorter_timeout_after_a_serve_ends_first():
    core = Core()
    consumer = served(core, timeout_ms=5000)
    assert core("GETJOB", "TIMEOUT", 50, "FROM", "q", client=consumer) is None
    core.advance(0.045)
    assert core.replies(consumer) == []
    core.advance(0.01)
    assert core.replies(consumer) == [None]


def test_no_timeout_after_a_serve_never_ends(core):
    consumer = served(core)
    assert core("GETJOB", "FROM", "q", client=consumer) is None  # TIMEOUT 0: forever
    core.advance(1)
    assert core.replies(consumer) == [] and consumer.blocked is not None
    job_id = core("ADDJOB", "q", "y", 0)
    assert core.replies(consumer)[0][0][1] == job_id


def test_a_blpop_after_a_serve_keeps_its_own_timeout(core):
    consumer = served(core)
    assert core("BLPOP", "k", 0.2, client=consumer) is None
    core.advance(0.15)
    assert core.replies(consumer) == []
    core.advance(0.06)
    assert core.replies(consumer) == [None]
    consumer = served(core)
    assert core("BLPOP", "k", 0, client=consumer) is None  # forever
    core.advance(1)
    assert core.replies(consumer) == []
    core("RPUSH", "k", "v")
    assert core.replies(consumer) == [[b"k", b"v"]]


def test_a_served_consumer_that_leaves_leaves_no_deadline(core):
    consumer = served(core)
    core.node.remove_client(consumer)
    assert consumer.wake_ms is None and len(core.node.deadlines) == 0
    core.advance(1)


def test_a_timeout_after_a_serve_ends_though_the_clock_went_back(core):
    consumer = served(core)
    assert core("GETJOB", "TIMEOUT", 500, "FROM", "q", client=consumer) is None
    core.now -= SET_BACK_S
    core.advance(0.1)
    assert core.replies(consumer) == []
    core.advance(0.35)
    assert core.replies(consumer) == []
    core.advance(0.2)  # (the step is seen at the timers' look: up to 0.1 s late)
    assert core.replies(consumer) == [None]


def test_the_timers_sleep_past_a_served_consumers_old_deadline(core):
    """The timers' next look is the consumer's new TIMEOUT, or nothing:
    the first TIMEOUT's deadline, left in place, is not a wake-up."""
    consumer = served(core)
    assert core.node.run_timers() is None
    consumer = served(core)
    assert core("GETJOB", "TIMEOUT", 1000, "FROM", "q", client=consumer) is None
    assert core.node.run_timers() == int(core.now * 1000) + 1000


def test_a_timeout_too_long_to_end_waits_as_no_timeout(core):
    """A TIMEOUT whose end is past the timers' range (the fuzz tests' 2**63
    - 1) blocks as TIMEOUT 0 does, where it was an internal error."""
    consumer = core.client()
    assert core("GETJOB", "TIMEOUT", 2**63 - 1, "FROM", "q", client=consumer) is None
    assert consumer.blocked is not None and len(core.node.deadlines) == 0
    core.advance(1)
    job_id = core("ADDJOB", "q", "x", 0)
    assert core.replies(consumer)[0][0][1] == job_id
