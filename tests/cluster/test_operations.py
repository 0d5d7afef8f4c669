"""The operator procedures README's "Operating a cluster" describes, on real
processes: removing a node (CLUSTER LEAVING yes, drained by federation,
stopped, CLUSTER FORGET on the others) and upgrading by a controlled
restart one node at a time, neither losing a job."""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Callable, Iterator

import redis

from tests.harness import Server, wait_for

from .conftest import Cluster, addjob, cluster_nodes, info, reachable


def consume(client: redis.Redis, queue: str, seen: dict[str, int],
            stop: threading.Event, errors: list[BaseException]) -> None:
    """GETJOB and ACKJOB until told to stop, counting each body seen."""
    try:
        while not stop.is_set():
            jobs = client.execute_command("GETJOB", "TIMEOUT", 200, "COUNT", 10,
                                          "FROM", queue)
            if not jobs:
                continue
            for _queue, _job_id, body in jobs:
                seen[body.decode()] = seen.get(body.decode(), 0) + 1
            client.execute_command("ACKJOB", *[job_id for _, job_id, _ in jobs])
    except BaseException as exc:  # reported by the test, not lost in a thread
        errors.append(exc)


@contextlib.contextmanager
def consumers(clients: list[redis.Redis], queue: str, seen: dict[str, int]
              ) -> Iterator[list[BaseException]]:
    """Consumer threads on ``queue`` while the block runs; yields their errors."""
    stop = threading.Event()
    errors: list[BaseException] = []
    threads = [threading.Thread(target=consume, args=(c, queue, seen, stop, errors),
                                daemon=True) for c in clients]
    for t in threads:
        t.start()
    try:
        yield errors
    finally:
        stop.set()
        for t in threads:
            t.join(5)


def test_a_leaving_node_is_drained_and_forgotten_without_losing_a_job(
        make_cluster: Callable[..., Cluster]) -> None:
    c = make_cluster(3)
    ids = c.ids()
    bodies = [f"job {i}" for i in range(30)]
    for i, body in enumerate(bodies):
        # one copy (on node 0 only) or two (node 0 and one other)
        addjob(c[0], "work", body, "REPLICATE", 1 if i % 3 else 2)
    assert info(c[0], "registered_jobs") == 30
    c[0].execute_command("CLUSTER", "LEAVING", "yes")
    wait_for(lambda: all("leaving" in cluster_nodes(c[i])[ids[0]]["flags"]
                         for i in (1, 2)), 10, message="the others seeing node 0 leaving")
    # Consumers only on the nodes that stay: federation moves node 0's jobs
    # to them, their acks free node 0's copies.
    seen: dict[str, int] = {}
    with consumers([c.servers[i].client() for i in (1, 2)], "work", seen) as errors:
        wait_for(lambda: set(seen) == set(bodies) or errors, 30,
                 message="every job delivered from the leaving node")
        wait_for(lambda: info(c[0], "registered_jobs") == 0, 20,
                 message="node 0 holding no job")
    assert not errors, errors
    assert set(seen) == set(bodies)
    # Stopped, then forgotten by every node that stays.
    c.servers[0].stop()
    for i in (1, 2):
        c[i].execute_command("CLUSTER", "FORGET", ids[0])
    for i in (1, 2):
        assert ids[0] not in cluster_nodes(c[i])
        wait_for(lambda i=i: reachable(c[i]) == 1, 5, message="the two left meshed")
    # The two left still replicate between themselves, and never relearn it.
    job_id = addjob(c[1], "after", "x", "REPLICATE", 2)
    assert sorted(c.job_holders(job_id)) == [1, 2]
    for i in (1, 2):
        assert ids[0] not in cluster_nodes(c[i])


def wait_back(c: Cluster, i: int, ids: list[str]) -> None:
    """The operator's check after restarting node i: INFO loading:0 and
    every other node showing it connected and not failing."""
    wait_for(lambda: info(c[i], "loading") == 0, 20, message=f"node {i} loaded")

    def seen_ok() -> bool:
        for j in c.alive():
            if j == i:
                continue
            entry = cluster_nodes(c[j]).get(ids[i])
            if entry is None or entry["link"] != "connected" or entry["flags"] & {
                    "fail", "fail?", "handshake", "noaddr"}:
                return False
        return True
    wait_for(seen_ok, 20, message=f"the others seeing node {i} connected")


def shutdown(server: Server, *args: str) -> None:
    """SHUTDOWN [REWRITE-AOF] on a raw socket (redis-py would spend seconds
    reconnecting to the node that just went away); the node exits with 0."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(" ".join(("SHUTDOWN",) + args).encode() + b"\r\n")
        assert sock.recv(100) == b"", "SHUTDOWN answers by closing the connection"
    assert server.proc is not None
    assert server.proc.wait(20) == 0


def test_a_rolling_restart_keeps_every_job(make_cluster: Callable[..., Cluster]) -> None:
    c = make_cluster(3, config="appendonly yes\n")
    ids = c.ids()
    bodies: list[str] = []
    for i in range(30):
        body = f"before {i}"
        addjob(c[i % 3], "roll", body, "REPLICATE", 2, "RETRY", 2)
        bodies.append(body)
    for i in range(3):
        args = ("REWRITE-AOF",) if i == 0 else ()
        held = info(c[i], "registered_jobs")
        assert held > 0
        shutdown(c.servers[i], *args)
        # Meanwhile the other two keep taking jobs.
        for k in range(5):
            body = f"during restart of {i}: {k}"
            addjob(c[(i + 1) % 3], "roll", body, "REPLICATE", 2, "RETRY", 2)
            bodies.append(body)
        c.servers[i].start(wait=False)
        c.servers[i].wait_ready(20)
        c.clients[i] = c.servers[i].client()
        wait_back(c, i, ids)
        assert info(c[i], "registered_jobs") == held, "its AOF brought back every copy"
    seen: dict[str, int] = {}
    with consumers(list(c.clients), "roll", seen) as errors:
        wait_for(lambda: set(seen) >= set(bodies) or errors, 30,
                 message="every job delivered after the rolling restart")
    assert not errors, errors
    assert set(seen) == set(bodies)


def test_a_node_above_75_percent_of_maxmemory_holds_no_new_copy(
        make_cluster: Callable[..., Cluster]) -> None:
    """README's sizing: above 75% a node keeps no copy of the jobs its
    clients add and refuses copies from others; back under, it takes them."""
    c = make_cluster(3)
    used = info(c[0], "used_memory")
    c[0].config_set("maxmemory", int(used / 0.8))  # 80%: level 1
    assert info(c[0], "memory_warning_level") == 1
    added_here = addjob(c[0], "full", "a", "REPLICATE", 2)
    assert sorted(c.job_holders(added_here)) == [1, 2]
    for k in range(8):  # whichever node node 1 picks first, never node 0
        job_id = addjob(c[1], "full", f"b{k}", "REPLICATE", 2)
        assert sorted(c.job_holders(job_id)) == [1, 2]
    c[0].config_set("maxmemory", "1gb")
    assert info(c[0], "memory_warning_level") == 0
    job_id = addjob(c[0], "full", "c", "REPLICATE", 3)
    assert sorted(c.job_holders(job_id)) == [0, 1, 2]
