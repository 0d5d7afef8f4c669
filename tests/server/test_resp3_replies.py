"""RESP3 connections to a real server: Disque's commands answer in Disque's
RESP2 shapes unless the connection sent ``CLIENT DISQUE-RESP3 ON``
(tests/unit/test_resp3_replies.py compares every Disque command's bytes);
here the opt-in the way the README shows it, with redis-py, and CLUSTER
and bare HELLO, which only a full node answers."""

import hiredis
import redis

from tests.harness import Server
from tests.server.util import Raw


def disque_resp3(connection: redis.connection.Connection) -> None:
    """redis-py's hook for each new connection: its handshake, then the
    opt-in."""
    connection.on_connect()
    connection.send_command("CLIENT", "DISQUE-RESP3", "ON")
    assert connection.read_response() in (b"OK", "OK")


def test_redis_py_opts_in_on_every_connection(shared: Server) -> None:
    plain = shared.client(protocol=3)
    maps = redis.Redis(host="127.0.0.1", port=shared.port, protocol=3,
                       redis_connect_func=disque_resp3)
    try:
        plain.execute_command("DEBUG", "FLUSHALL")
        job_id = maps.execute_command("ADDJOB", "q", "body", 0)
        assert plain.execute_command("SHOW", job_id)[:4] == [b"id", job_id, b"queue", b"q"]
        info = maps.execute_command("SHOW", job_id)
        assert isinstance(info, dict) and info[b"state"] == b"queued"
        assert info[b"next-requeue-within"] is not None and info[b"body"] == b"body"
        assert maps.execute_command("QSTAT", "q")[b"len"] == 1
        assert maps.execute_command("QSTAT", "nope") is None
        assert maps.info("jobs") == plain.info("jobs") == {"registered_jobs": 1}
        maps.connection_pool.disconnect()  # a new connection opts in again
        assert isinstance(maps.execute_command("SHOW", job_id), dict)
        assert isinstance(plain.execute_command("SHOW", job_id), list)
        assert maps.config_get("port") == {"port": str(shared.port)}
    finally:
        plain.close()
        maps.close()


def test_cluster_and_bare_hello_same_bytes_on_every_connection(shared: Server) -> None:
    requests = [("HELLO",), ("CLUSTER", "INFO"), ("CLUSTER", "NODES"),
                ("CLUSTER", "MYID"), ("CLUSTER", "LEAVING")]
    with Raw(shared.port) as r2, Raw(shared.port) as r3, Raw(shared.port) as maps:
        r3.call("HELLO", 3)
        maps.call("HELLO", 3)
        assert maps.call("CLIENT", "DISQUE-RESP3", "ON") == b"OK"
        for request in requests:
            replies = []
            for raw in (r2, r3, maps):
                raw.send_command(*request)
                replies.append(reply_bytes(raw))
            assert replies[0] == replies[1] == replies[2], request


def reply_bytes(raw: Raw) -> bytes:
    """The next reply as it came on the wire."""
    reader = hiredis.Reader()
    data = b""
    while reader.gets() is False:
        chunk = raw.sock.recv(65536)
        assert chunk, "closed by server"
        reader.feed(chunk)
        data += chunk
    return data
