"""pydisque's API against a trisque node, as its users call it.

Run by test_pydisque.py in a child interpreter whose redis-py is the
version under test (tests/client_libs.py), with hiredis or without it
(redis-py's pure-Python parsers):
``python pydisque_api.py PORT REDIS_MAJOR hiredis|pure``.  Prints ``ok``
and the redis-py version; an assertion error otherwise, or a timeout
error where a reply would leave the client waiting.
"""

import sys
from typing import Any

import redis
import redis.utils
from redis.backoff import NoBackoff
from redis.retry import Retry
from pydisque.client import Client


class TimedRedis(redis.Redis):
    """pydisque's connections, with a socket timeout: a reply the client
    cannot parse to its end fails the run instead of hanging it (after
    pydisque's own three tries; redis-py's are turned off)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("socket_timeout", 2)
        kwargs.setdefault("retry", Retry(NoBackoff(), 0))
        super().__init__(*args, **kwargs)


redis.Redis = TimedRedis  # type: ignore[misc]  # (pydisque calls redis.Redis)


def main(port: int, major: int, parser: str) -> None:
    assert redis.__version__.startswith(f"{major}."), redis.__version__
    assert redis.utils.HIREDIS_AVAILABLE == (parser == "hiredis"), parser
    client = Client([f"127.0.0.1:{port}"])
    client.connect()  # HELLO: Disque's node list
    node_id = client.connected_node.node_id
    assert len(node_id) == 40, node_id
    conn = client.get_connection()
    # pydisque passes no protocol: redis-py's default, RESP3 from 8 on
    resp = conn.client_info()["resp"]
    assert resp == ("3" if major >= 8 else "2"), resp

    version, myself, *nodes = client.hello()
    assert (version, myself) == (1, node_id) and nodes[0][0] == node_id, nodes

    job_id = client.add_job("pyd", "first", timeout=0, retry=30)
    other = client.add_job("pyd", "second", timeout=0, retry=30)
    assert client.qlen("pyd") == 2
    assert client.qpeek("pyd", 1) == [[b"pyd", job_id, b"first"]]
    assert client.qpeek("pyd", -1) == [[b"pyd", other, b"second"]]

    show = client.show(job_id, return_dict=True)
    assert show[b"id"] == job_id and show[b"queue"] == b"pyd", show
    assert show[b"state"] == b"queued" and show[b"body"] == b"first", show
    assert show[b"repl"] == 1 and show[b"retry"] == 30 and show[b"nacks"] == 0, show
    assert show[b"nodes-delivered"] == [node_id], show
    assert len(client.show(job_id)) == 30  # Disque's flat array, as it documents
    assert client.show("D-12345678-aaaaaaaaaaaaaaaaaaaaaaaa-0001") is None
    once = client.add_job("pyd-once", "x", timeout=0, retry=0)  # no requeue: a null field
    show = client.show(once, return_dict=True)
    assert show[b"next-requeue-within"] is None and show[b"body"] == b"x", show
    client.del_job(once)

    stat = client.qstat("pyd", return_dict=True)
    assert stat[b"name"] == b"pyd" and stat[b"len"] == 2, stat
    assert stat[b"jobs-in"] == 2 and stat[b"pause"] == b"none", stat
    assert stat[b"import-from"] == [] and stat[b"blocked"] == 0, stat
    assert client.qstat("pyd")[:2] == [b"name", b"pyd"]
    assert client.qstat("no-such-queue") is None

    # pydisque names GETJOB's [queue, id, body] (job_id, queue_name, job)
    [(queue, got, body)] = client.get_job(["pyd"], timeout=100)
    assert (queue, got, body) == (b"pyd", job_id, b"first")
    assert client.show(job_id, return_dict=True)[b"state"] == b"active"
    client.nack_job(job_id)
    jobs = client.get_job(["pyd"], count=2, withcounters=True)
    counters = {got: (queue, body, nacks) for queue, got, body, nacks, _ in jobs}
    assert counters == {job_id: (b"pyd", b"first", 1), other: (b"pyd", b"second", 0)}, jobs

    client.ack_job(job_id, other)
    assert client.show(job_id) is None and client.show(other) is None
    assert client.get_job(["pyd"], nohang=True) == []
    assert client.get_job(["pyd"], timeout=50) == []

    info = client.info()
    assert info["registered_jobs"] == 0 and info["tcp_port"] == port, info
    cursor, queues = client.qscan(busyloop=True)
    assert cursor == b"0" and b"pyd" in queues, queues
    print("ok", redis.__version__)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
