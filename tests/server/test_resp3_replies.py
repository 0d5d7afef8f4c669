"""RESP3 connections to a real server: Disque's commands answer in Disque's
RESP2 shapes unless the connection sent ``CLIENT DISQUE-RESP3 ON``
(tests/unit/test_resp3_replies.py compares every Disque command's bytes);
here the opt-in the way the README shows it, with redis-py, and CLUSTER
and bare HELLO, which only a full node answers."""

import hiredis
import redis

from tests.harness import Server, wait_for
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


UNKNOWN_ID = "D-12345678-aaaaaaaaaaaaaaaaaaaaaaaa-0001"


def test_disque_nulls_are_resp3_nulls_on_resp3(shared: Server) -> None:
    """Disque's commands on a RESP3 connection: flat arrays, and every null
    RESP3's ``_`` (a null reply and a null inside an array), byte for byte;
    RESP2 keeps ``$-1``/``*-1``.  redis-py's pure-Python RESP3 parser reads
    ``$-1`` as a length and waits for -1 bytes: pydisque's show() of an
    acknowledged job hung there (tests/server/test_pydisque.py)."""
    with Raw(shared.port) as r2, Raw(shared.port) as r3, Raw(shared.port) as blocked:
        r3.call("HELLO", 3)
        blocked.call("HELLO", 3)
        acked = r3.call("ADDJOB", "nulls", "x", 0)
        once = r3.call("ADDJOB", "nulls-once", "y", 0, "RETRY", 0)
        assert r3.call("ACKJOB", acked) == 1
        for raw, null, null_array in ((r2, b"$-1\r\n", b"*-1\r\n"), (r3, b"_\r\n", b"_\r\n")):
            raw.send_command("SHOW", acked)
            assert reply_bytes(raw) == null
            raw.send_command("SHOW", UNKNOWN_ID)
            assert reply_bytes(raw) == null
            raw.send_command("QSTAT", "never-used")  # (GETJOB makes its queues)
            assert reply_bytes(raw) == null_array
            raw.send_command("GETJOB", "NOHANG", "FROM", "no-such-queue")
            assert reply_bytes(raw) == null_array
            raw.send_command("GETJOB", "TIMEOUT", 10, "FROM", "no-such-queue")
            assert reply_bytes(raw) == null_array
            raw.send_command("SHOW", once)  # next-requeue-within: a null field
            show = reply_bytes(raw)
            assert show.startswith(b"*30\r\n$2\r\nid\r\n")
            assert b"$19\r\nnext-requeue-within\r\n" + null in show
            raw.send_command("JSCAN", 0, "QUEUE", "nulls-once", "REPLY", "all")
            assert b"$19\r\nnext-requeue-within\r\n" + null in reply_bytes(raw)
            # inside EXEC and a script, and a blocked GETJOB's timeout
            assert raw.call("MULTI") == b"OK"
            raw.send_command("GETJOB", "NOHANG", "FROM", "no-such-queue")
            raw.send_command("SHOW", acked)
            assert raw.reply() == raw.reply() == b"QUEUED"
            raw.send_command("EXEC")
            assert reply_bytes(raw) == b"*2\r\n" + null_array + null
            raw.send_command("EVAL", "return redis.call('SHOW', ARGV[1])", 0, acked)
            assert reply_bytes(raw) == null
        client_id = blocked.call("CLIENT", "ID")
        blocked.send_command("GETJOB", "FROM", "no-such-queue")
        wait_for(lambda: b"cmd=getjob" in r2.call("CLIENT", "LIST"), message="blocked")
        assert r2.call("CLIENT", "UNBLOCK", client_id) == 1
        assert reply_bytes(blocked) == b"_\r\n"
        assert r3.call("DELJOB", once) == 1
