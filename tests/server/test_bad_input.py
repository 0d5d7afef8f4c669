"""Bad input gets a clear error; a protocol error closes only that client;
other clients and stored jobs are unaffected."""

import random

import pytest

from tests.harness import wait_for
from tests.server.util import Raw, encode


@pytest.fixture(scope="module")
def small():
    """A server with a 1 KB bulk limit."""
    from tests.harness import Server
    srv = Server(config="proto-max-bulk-len 1kb\n").start()
    yield srv
    srv.cleanup()


@pytest.fixture
def witness(small):
    """Another client holding jobs and a blocked consumer, checked after
    each test to be unaffected."""
    with Raw(small.port) as raw, Raw(small.port) as consumer:
        raw.call("DEBUG", "FLUSHALL")
        ids = [raw.call("ADDJOB", "kept", "job%d" % i, 0) for i in range(3)]
        consumer.send_command("GETJOB", "TIMEOUT", 30000, "FROM", "waiting")
        wait_for(lambda: raw.call("INFO", "clients").count(b"blocked_clients:1"))
        yield raw
        assert raw.call("PING") == b"PONG"
        assert [j[1] for j in raw.call("QPEEK", "kept", 10)] == ids
        job_id = raw.call("ADDJOB", "waiting", "x", 0)
        assert consumer.reply() == [[b"waiting", job_id, b"x"]]


def closed_with(raw, message):
    """The connection ends with one protocol error line (replies to the
    complete requests before the bad bytes may come first)."""
    data = raw.read_all_until_closed()
    last = data[data.rfind(b"\r\n", 0, len(data) - 2) + 2 if data.count(b"\r\n") > 1 else 0:]
    assert last.endswith(b"\r\n") and last.startswith(b"-ERR Protocol error"), data
    assert message.encode() in last, data
    return data


def test_wrong_arity(witness):
    for args, name in [(("ADDJOB", "q", "x"), "addjob"), (("GETJOB",), "getjob"),
                       (("SHOW",), "show"), (("QLEN", "a", "b"), "qlen"),
                       (("WORKING", "a", "b"), "working"), (("PAUSE", "q"), "pause"),
                       (("TIME", "x"), "time"), (("MONITOR", "x"), "monitor")]:
        assert str(witness.call(*args)) == \
            f"ERR wrong number of arguments for '{name}' command"


def test_unknown_command(witness):
    assert str(witness.call("NOSUCH", "a")) == "ERR unknown command 'NOSUCH'"
    assert str(witness.call("GEOADD", "k", "1", "2", "m")) == "ERR unknown command 'GEOADD'"  # Redis's, not ours
    witness.send(b"garbage \x00\xff words\r\n")  # inline
    assert str(witness.reply()).startswith("ERR unknown command 'garbage'")


def test_error_replies_cannot_break_framing(witness):
    """User text echoed in an error must not contain CR/LF."""
    reply = witness.call("BAD\r\nCOMMAND")
    assert str(reply).startswith("ERR unknown command 'BAD")
    assert "\n" not in str(reply) and "\r" not in str(reply)
    reply = witness.call("CONFIG", "SET", "maxmemory", "1\r\n+OK")
    assert str(reply).startswith("ERR Invalid argument") and "\n" not in str(reply)
    reply = witness.call("DEBUG", "NO\r\nSUCH")
    assert "\n" not in str(reply)
    assert witness.call("ECHO", "still\r\nframed") == b"still\r\nframed"


@pytest.mark.parametrize("args", [
    ("ADDJOB", "q", "x", "ten"), ("ADDJOB", "q", "x", "0", "TTL", "1e3"),
    ("ADDJOB", "q", "x", "0", "RETRY", "9223372036854775808"),
    ("GETJOB", "TIMEOUT", "-5", "FROM", "q"), ("GETJOB", "COUNT", "1.0", "FROM", "q"),
    ("QPEEK", "q", "99999999999999999999"), ("JSCAN", "0", "COUNT", "x"),
    ("CLIENT", "KILL", "ID", "x"), ("SLOWLOG", "GET", "x"),
])
def test_bad_numbers(witness, args):
    reply = witness.call(*args)
    assert str(reply).startswith("ERR "), reply


@pytest.mark.parametrize("bad", ["x", "D-123", "D" * 40, "D-12345678-" + "a" * 29])
def test_bad_job_ids(witness, bad):
    for cmd in ("ACKJOB", "SHOW", "WORKING", "NACK", "DELJOB"):
        assert str(witness.call(cmd, bad)) == "BADID Invalid Job ID format."


def test_oversize_bulk_closes_only_that_client(small, witness):
    with Raw(small.port) as raw:
        assert raw.call("ADDJOB", "q", "x" * 1024, 0).startswith(b"D-")
        raw.send(b"*4\r\n$6\r\nADDJOB\r\n$1\r\nq\r\n$1025\r\n")
        closed_with(raw, "invalid bulk length")
    with Raw(small.port) as raw:
        # refused from the header alone: the body never has to arrive
        raw.send(b"*1\r\n$999999999999\r\n")
        closed_with(raw, "invalid bulk length")


def test_huge_multibulk_count(witness, small):
    for data in (b"*99999999\r\n", b"*1048577\r\n$1\r\nx\r\n",
                 encode("PING") + b"*2000000000\r\n"):
        with Raw(small.port) as raw:
            raw.send(data)
            out = raw.read_all_until_closed()
            assert b"-ERR Protocol error: invalid multibulk length\r\n" in out, out


def test_garbage_multibulk(witness, small):
    for data in (b"*1\r\nxyz\r\n", b"*x\r\n", b"*1\r\n$x\r\n",
                 b"*2\r\n*1\r\n$1\r\na\r\n$1\r\nb\r\n"):
        with Raw(small.port) as raw:
            raw.send(data)
            closed_with(raw, "")


def test_protocol_error_reply_is_one_line(witness, small):
    """The byte an error quotes may be CR or LF: the reply stays one line."""
    with Raw(small.port) as raw:
        raw.send(encode("PING") + b"*2\r\n$4\r\nECHO\r\n\n\r\n")
        data = raw.read_all_until_closed()
        assert data == b"+PONG\r\n-ERR Protocol error: expected '$', got ' '\r\n", data


def test_inline_requests_after_arrays_in_one_read(witness, small):
    """Redis tells inline from multibulk request by request, so a client may
    mix them in one write; a bulk longer than announced is cut as Redis
    does (the two bytes after it are skipped, the rest read inline)."""
    with Raw(small.port) as raw:
        raw.send(encode("PING") + b"PING\r\n\r\n" + encode("ECHO", "a") + b"ECHO b\r\n")
        assert [raw.reply() for _ in range(4)] == [b"PONG", b"PONG", b"a", b"b"]
        raw.send(b"*1\r\n$3\r\nabcde\r\n")
        assert str(raw.reply()).startswith("ERR unknown command 'abc'")
        assert raw.call("PING") == b"PONG"


def test_unbalanced_quotes_inline(witness, small):
    with Raw(small.port) as raw:
        raw.send(b'ADDJOB q "unterminated 0\r\n')
        closed_with(raw, "unbalanced quotes in request")


def test_too_long_inline_line(witness, small):
    with Raw(small.port) as raw:
        raw.send(b"A" * (70 * 1024))
        closed_with(raw, "too big inline request")


def test_pipeline_before_protocol_error_runs(witness, small):
    with Raw(small.port) as raw:
        raw.send(encode("ADDJOB", "before-error", "x", 0) + b"*1\r\n$x\r\n")
        data = raw.read_all_until_closed()
        assert data.startswith(b"+D-") and b"-ERR Protocol error" in data
    assert witness.call("QLEN", "before-error") == 1


def test_random_garbage_fuzz(witness, small):
    """Seeded random bytes from many connections: the node keeps serving."""
    rng = random.Random(2024)
    alphabet = b"*$:+-\r\n0123456789abcPING \x00\xff\"'"
    for _ in range(60):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randrange(1, 200)))
        with Raw(small.port, timeout=5) as raw:
            raw.send(data)
            raw.sock.shutdown(1)  # half-close: the server sees EOF
            try:
                raw.read_all_until_closed(timeout=5)
            except (ConnectionError, OSError):
                pass
    assert witness.call("PING") == b"PONG"
