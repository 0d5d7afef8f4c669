"""What the event loop's clock reading per turn (Node.now_ms) and its
chained command timing (Node.chain_s) mean for a pipeline run in one
turn, against a real server: a TTL set after a long command of the same
turn, and each command's time in INFO commandstats."""

import time

from tests.server.util import Raw


def _stats(raw, name):
    """commandstats' calls and usec for ``name``."""
    info = raw.call("INFO", "commandstats").decode()
    for line in info.splitlines():
        if line.startswith(f"cmdstat_{name}:"):
            fields = dict(item.split("=") for item in line.split(":", 1)[1].split(","))
            return int(fields["calls"]), int(fields["usec"])
    return 0, 0


def test_a_ttl_set_late_in_a_long_turn_is_early_by_at_most_the_turn(shared):
    """SET ... PX after a 300 ms command in the same pipeline (one read,
    one turn) expires 1 s from a reading of the clock taken within that
    turn: not before the request was sent, not after its replies came."""
    with Raw(shared.port) as raw:
        raw.call("DEL", "turn-ttl")
        sent_ms = time.time() * 1000
        raw.send_requests(["DEBUG", "SLEEP", "0.3"], ["SET", "turn-ttl", "v", "PX", "1000"])
        assert raw.reply() == b"OK"
        assert raw.reply() == b"OK"
        replied_ms = time.time() * 1000
        assert replied_ms - sent_ms >= 290  # (the pipeline did take the sleep)
        dated_ms = raw.call("PEXPIRETIME", "turn-ttl") - 1000
        # (the server floors its ms: one ms of slack below)
        assert sent_ms - 1 <= dated_ms <= replied_ms
        assert 0 < raw.call("PTTL", "turn-ttl") <= 1000


def test_pipelined_commands_are_timed_apart(shared):
    """A pipeline's next command starts its timing where the last one's
    ended: PING after a 200 ms DEBUG SLEEP in one read is not charged the
    sleep, and DEBUG is charged all of it."""
    with Raw(shared.port) as raw:
        raw.call("CONFIG", "RESETSTAT")
        raw.send_requests(["DEBUG", "SLEEP", "0.2"], ["PING"], ["PING"])
        assert [raw.reply() for _ in range(3)] == [b"OK", b"PONG", b"PONG"]
        calls, usec = _stats(raw, "debug")
        assert calls == 1 and usec >= 190_000
        calls, usec = _stats(raw, "ping")
        assert calls == 2 and usec < 100_000
