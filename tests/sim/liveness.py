"""The liveness checker: a job that can be delivered is delivered, soon.

At-least-once (checker.py) only asks that an accepted job be delivered
some time, once.  Issue 13 was a job that nobody got for a minute while its
copies sat in the cluster and consumers polled every node: within that
promise, and useless.  The rule, judged over the drain (from the heal, when
every node is up and consumers poll every node, to its end):

    a job not acknowledged, with a copy left somewhere, is delivered
    within BOUND of the latest of: the heal, its acceptance, its last
    delivery.

    BOUND = 5 x RETRY + node timeout

Why that much, for what the cluster may legitimately take:
- a delivered job nobody acks is queued again after RETRY (+250 ms
  jitter, +500 ms for the WILLQUEUE round): 1 RETRY;
- the holder about to queue it may have just pushed that back by RETRY (a
  QUEUED or WORKING from another holder), or be killed and come back empty,
  leaving it to the next holder's timer: 1 more;
- a delivery can miss its consumer (a reply past the socket timeout, the
  node stalled): it comes back after another RETRY: 1 more;
- a restarted node is seen alive again within a node timeout;
- 2 RETRY of margin for a queued job to meet a consumer: a node is polled
  every ~150 ms; stalls of up to 2.5 s (load.py) delay both.
A job past it while consumers keep coming back empty-handed is stuck,
whatever the reason: *starved*.  "Empty-handed": after the bound passed,
their GETJOBs timed out with nothing at least once a second on average
(IDLE_POLLS_PER_S; idle polling consumers make several a second, each
blocking consumer two).  A job waiting behind a backlog that keeps every
consumer busy (few consumers taking one job at a time from a loaded
machine: seed 30611 at 3 nodes before this rule, 400 jobs queued on one
node, 2 empty polls in 10 s) is a matter of capacity, not liveness.

Jobs judged: RETRY > 0 (RETRY 0 is never delivered twice; checker.py
judges it), accepted before the drain ended, not past their TTL.  The
drain (40 s) is longer than the longest bound (RETRY 4 in the workload:
23 s), so a job never delivered is judged too.

Reported apart from true loss (checker.py: *lost*, no copy left).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .checker import Checker

RETRIES_IN_BOUND = 5
IDLE_POLLS_PER_S = 1


def bound_ms(retry_s: int, node_timeout_ms: int) -> int:
    return RETRIES_IN_BOUND * retry_s * 1000 + node_timeout_ms


def _idle(checker: Checker, from_ms: int, to_ms: int) -> bool:
    """Consumers came back empty-handed often enough from ``from_ms`` to
    ``to_ms``: they had room for the job."""
    polls = checker.empty_polls
    empty = bisect_right(polls, to_ms) - bisect_right(polls, from_ms)
    return empty * 1000 >= IDLE_POLLS_PER_S * (to_ms - from_ms)


def starved(checker: Checker, from_ms: int, to_ms: int, node_timeout_ms: int) -> list[str]:
    """Violations of the rule above, with ``checker``'s records, for the
    drain from ``from_ms`` to ``to_ms``."""
    found = []
    for rec in checker.jobs.values():
        if rec.accepted_ms is None or rec.acked_ms is not None or not rec.retry_s:
            continue
        if not checker.held_anywhere(rec.id):
            continue
        last_ms = max(from_ms, rec.accepted_ms)
        if rec.deliveries:
            last_ms = max(last_ms, rec.deliveries[-1][0])
        end_ms = min(to_ms, rec.expires_ms())
        bound = bound_ms(rec.retry_s, node_timeout_ms)
        if end_ms - last_ms > bound and _idle(checker, last_ms + bound, end_ms):
            seen = (f"last delivered at {rec.deliveries[-1][0]} ms" if rec.deliveries
                    else "never delivered")
            found.append(
                f"starved: {rec.id.decode()} (RETRY {rec.retry_s}, accepted at "
                f"{rec.accepted_ms} ms, {seen}) not delivered from {last_ms} to "
                f"{end_ms} ms (bound {bound // 1000} s) though held by "
                f"{checker.where(rec.id)}")
    return found
