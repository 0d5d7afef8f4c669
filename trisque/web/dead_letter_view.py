"""The dead jobs this node holds, by dead-letter queue, for the dashboard.

A dead job (docs/lifecycle.md) is one whose policy says where it died
(``dead_from``); it sits in its dead-letter queue, queued, or active once
a consumer took it from there or when another holder queued it.  No index
of them exists in the core, so this scans the node's jobs, as
node_view.jobs_by_state does, up to ``JOB_SCAN_MAX`` jobs per request (a
plain job costs one attribute read); beyond, the list says it is partial.
What is shown is bounded too: the ``TOP_QUEUES`` queues holding the most
dead jobs, and in each the ``JOBS_SHOWN`` that died last.
"""

import heapq
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Optional

from ..core.jobs.job import STATE_NAMES
from .node_view import JOB_SCAN_MAX

TOP_QUEUES = 20
JOBS_SHOWN = 50


@dataclass
class DeadJobView:
    id: str
    died_in: str  # the queue it died in (REVIVE puts it back there)
    state: str  # queued (in its dead-letter queue) or active
    nacks: int
    additional_deliveries: int
    last_error: Optional[str]
    dead_ms: int  # when it died, ms since the epoch (the node's clock)


@dataclass
class DeadLetterQueueView:
    name: str
    dead_jobs: int  # dead jobs here on this node (all, not only those listed)
    queued: int  # the queue's length (QLEN), dead or not
    jobs: list[DeadJobView] = field(default_factory=list)  # the last to die first


@dataclass
class DeadLetters:
    queues: list[DeadLetterQueueView]
    other_queues: int  # dead-letter queues beyond TOP_QUEUES, not listed
    scanned_jobs: int
    complete: bool  # False: the node holds more than JOB_SCAN_MAX jobs


def dead_letters(node: Any, top: int = TOP_QUEUES, shown: int = JOBS_SHOWN,
                 scan_max: int = JOB_SCAN_MAX) -> DeadLetters:
    by_queue: dict[bytes, list[Any]] = {}
    scanned = 0
    for job in islice(node.jobs.values(), scan_max):
        scanned += 1
        if job._rare is None:  # a plain job: no policy (job.py, _set_rare)
            continue
        policy = job.policy
        if policy is None or not policy.dead_from:
            continue
        by_queue.setdefault(job.queue, []).append(job)
    picked = heapq.nlargest(top, by_queue.items(), key=lambda item: len(item[1]))
    views = []
    for name, jobs in picked:
        queue = node.queues.get(name)
        view = DeadLetterQueueView(_text(name), len(jobs),
                                   len(queue.jobs) if queue is not None else 0)
        last = heapq.nlargest(shown, jobs, key=lambda j: j.policy.dead_ms)
        view.jobs = [_job_view(j) for j in last]
        views.append(view)
    return DeadLetters(views, len(by_queue) - len(picked), scanned,
                       scanned == len(node.jobs))


def _job_view(job: Any) -> DeadJobView:
    policy = job.policy
    return DeadJobView(_text(job.id), _text(policy.dead_from), STATE_NAMES[job.state],
                       job.nacks, job.deliveries,
                       _text(policy.last_error) if policy.last_error else None,
                       policy.dead_ms)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")
