"""dwq's client side against a trisque node running a real dwq worker
(``dwqw -n w1 -q dwq-test``), with dwq's own calls: what ``dwqc`` does
to submit jobs and collect their results, what ``dwqm`` does to watch
queues and control workers.

Run by test_pydisque.py in a child interpreter with dwq and the redis-py
under test first on its path: ``python dwq_client.py PORT``.  Prints
``ok``; an assertion error otherwise.
"""

import os
import sys
import time
from collections.abc import Callable

from dwq import Disque, Job

QUEUE = "dwq-test"
WORKER = "w1"


def wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def results(control_queue: str, count: int) -> dict[str, dict]:
    """The next ``count`` results posted to ``control_queue``, by job ID
    (dwqc's loop: Job.wait is GETJOB FROM the queue, then FASTACK)."""
    got: dict[str, dict] = {}
    while len(got) < count:
        for body in Job.wait(control_queue):
            got[body["job_id"]] = body
    return got


def control(command: str, control_queue: str) -> str:
    """Send a control command to the worker (dwqm's way) and return its
    answer."""
    job_id = Job.add(f"control::worker::{WORKER}", {"control": {"cmd": command}},
                     [control_queue])
    [reply] = results(control_queue, 1).values()
    assert reply["job_id"] == job_id and reply["state"] == "done", reply
    return reply["result"]["output"]


def main(port: int) -> None:
    Disque.connect([f"127.0.0.1:{port}"])
    control_queue = f"control::client::{os.getpid()}"

    # dwqm's view (QSTAT read as Disque's flat array): the worker's two
    # threads wait on the job queue, its main thread on its control queue.
    queues = [QUEUE, f"control::worker::{WORKER}"]
    wait(lambda: [Disque.qstat(queues).get(q, {}).get("blocked") for q in queues] == [2, 1],
         "the worker waiting for jobs")
    stat = Disque.qstat(queues)[QUEUE]
    assert stat["len"] == 0 and stat["pause"] == "none", stat
    assert control("ping", control_queue) == "pong"

    # dwqc: a job that passes, and one that fails: the worker NACKs it
    # once (max_retries 1, read from GETJOB WITHCOUNTERS), then reports it.
    passing = Job.add(QUEUE, {"command": "echo hello from $DWQ_WORKER"}, [control_queue])
    failing = Job.add(QUEUE, {"command": "echo try $DWQ_JOBID; exit 3",
                              "options": {"max_retries": 1}}, [control_queue])
    done = results(control_queue, 2)
    assert set(done) == {passing, failing}, done
    result = done[passing]["result"]
    assert (result["status"], result["output"], result["worker"]) == (
        0, "hello from w1\n", WORKER), result
    result = done[failing]["result"]
    assert (result["status"], result["output"]) == (3, f"try {failing}\n"), result

    # The worker posts a result, then ACKs the job: gone soon after.
    disque = Disque.get()
    wait(lambda: disque.show(passing) is None and disque.show(failing) is None,
         "jobs acknowledged")
    assert disque.qlen(QUEUE) == 0

    assert control("shutdown", control_queue) == "shutting down"
    print("ok")


if __name__ == "__main__":
    main(int(sys.argv[1]))
