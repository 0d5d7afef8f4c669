"""The dashboard's dead-letter list on a node core in process (no sockets),
its clock set by the test: which queues and jobs it shows, in what order,
and its bounds (queues shown, jobs per queue, jobs scanned)."""

import time

from trisque.cluster.cluster import Cluster
from trisque.cluster.outbox import Transport
from trisque.core.admin.config import Config
from trisque.core.node import Node
from trisque.core.table import COMMANDS
from trisque.web.dead_letter_view import dead_letters

START_S = time.time()


def make_node() -> tuple[Node, list[float]]:
    now = [START_S]
    node = Node(Config(), "a" * 40, lambda: now[0], table=COMMANDS)
    Cluster(node, Transport(), "127.0.0.1", 7711, 17711)
    return node, now


def run(node: Node, *argv: object) -> bytes:
    client = node.add_client()
    client.authenticated = True
    node.execute(client, [str(a).encode() for a in argv])
    reply = b"".join(client.out)
    node.remove_client(client)
    return reply


def kill(node: Node, now: list[float], queue: str, reason: str) -> bytes:
    """A job that dies in ``queue`` one second after the last one."""
    now[0] += 1
    job_id = run(node, "ADDJOB", queue, "body", 0, "RETRY", 60, "MAXDELIVERIES", 1)
    job_id = job_id[1:].strip()  # +D-...
    assert run(node, "GETJOB", "NOHANG", "FROM", queue).count(job_id) == 1
    assert run(node, "NACK", job_id.decode(), "REASON", reason) == b":1\r\n"
    return job_id


def test_queues_by_dead_jobs_and_the_last_to_die_first() -> None:
    node, now = make_node()
    run(node, "ADDJOB", "plain", "alive", 0)
    a = [kill(node, now, "a", f"error {i}") for i in range(5)]
    b = [kill(node, now, "b", "b failed") for _ in range(2)]
    kill(node, now, "c", "c failed")
    view = dead_letters(node, top=2, shown=3)
    assert [(q.name, q.dead_jobs, q.queued) for q in view.queues] == [("a:dead", 5, 5),
                                                                       ("b:dead", 2, 2)]
    assert view.other_queues == 1 and view.complete and view.scanned_jobs == 9
    jobs = view.queues[0].jobs
    assert [j.id.encode() for j in jobs] == [a[4], a[3], a[2]]
    assert [j.last_error for j in jobs] == ["error 4", "error 3", "error 2"]
    assert all(j.died_in == "a" and j.state == "queued" and j.nacks == 1 for j in jobs)
    # each died at its own second of the node's clock
    assert [j.dead_ms for j in jobs] == [int((START_S + k) * 1000) for k in (5, 4, 3)]
    assert [j.id.encode() for j in view.queues[1].jobs] == [b[1], b[0]]


def test_taken_revived_and_bounded() -> None:
    node, now = make_node()
    first = kill(node, now, "q", "one")
    second = kill(node, now, "q", "two")
    # a consumer of the dead-letter queue holds one: still dead, active
    assert first in run(node, "GETJOB", "NOHANG", "FROM", "q:dead")
    states = {j.id.encode(): j.state for j in dead_letters(node).queues[0].jobs}
    assert states == {first: "active", second: "queued"}
    assert run(node, "REVIVE", second.decode()) == b":1\r\n"
    view = dead_letters(node)
    assert [j.id.encode() for j in view.queues[0].jobs] == [first]
    assert view.queues[0].queued == 0
    # more jobs than the scan takes: said so
    for i in range(5):
        run(node, "ADDJOB", "plain", f"job {i}", 0)
    view = dead_letters(node, scan_max=3)
    assert not view.complete and view.scanned_jobs == 3
    assert dead_letters(node, scan_max=7).complete
