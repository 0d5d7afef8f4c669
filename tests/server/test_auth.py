"""requirepass: -NOAUTH before AUTH, AUTH forms, HELLO AUTH, redis-py with
a password over RESP2 and RESP3, CONFIG SET requirepass at runtime."""

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.server.util import Raw, encode

PASSWORD = "s3cret pass"  # with a space: the config value is quoted


@pytest.fixture(scope="module")
def secured():
    from tests.harness import Server
    srv = Server(config=f'requirepass "{PASSWORD}"\n').start()
    yield srv
    srv.cleanup()


def test_noauth_before_auth(secured):
    with Raw(secured.port) as raw:
        for args in (("ADDJOB", "q", "x", 0), ("PING",), ("INFO",), ("HELLO",),
                     ("CLIENT", "LIST"), ("CONFIG", "GET", "requirepass")):
            assert str(raw.call(*args)) == "NOAUTH Authentication required.", args
        raw.send(b"PING\r\n")  # inline too
        assert str(raw.reply()) == "NOAUTH Authentication required."
        assert str(raw.call("AUTH", "wrong")) == "ERR invalid password"
        assert str(raw.call("PING")).startswith("NOAUTH")
        assert str(raw.call("AUTH", "default", "wrong")).startswith("WRONGPASS")
        assert str(raw.call("AUTH", "someone", PASSWORD)).startswith("WRONGPASS")
        assert raw.call("AUTH", PASSWORD) == b"OK"
        assert raw.call("PING") == b"PONG"
        assert raw.call("ADDJOB", "q", "x", 0).startswith(b"D-")
        # a failed AUTH logs the client out again, as Disque does
        assert str(raw.call("AUTH", "wrong")) == "ERR invalid password"
        assert str(raw.call("PING")).startswith("NOAUTH")
        assert raw.call("AUTH", "default", PASSWORD) == b"OK"
        assert raw.call("QLEN", "q") == 1


def test_quit_allowed_before_auth(secured):
    with Raw(secured.port) as raw:
        raw.send(b"QUIT\r\n")
        assert raw.read_all_until_closed() == b"+OK\r\n"


def test_hello_with_auth(secured):
    with Raw(secured.port) as raw:
        assert str(raw.call("HELLO", 3)).startswith("NOAUTH")
        assert str(raw.call("HELLO", 3, "AUTH", "default", "bad")).startswith("WRONGPASS")
        reply = raw.call("HELLO", 3, "AUTH", "default", PASSWORD, "SETNAME", "me")
        assert reply[b"proto"] == 3
        assert raw.call("CLIENT", "GETNAME") == b"me"
        assert raw.call("HELLO")[0] == 1


@pytest.mark.parametrize("protocol", [2, 3, None])
def test_redis_py_with_password(secured, protocol):
    kwargs = {} if protocol is None else {"protocol": protocol}
    client = redis.Redis(host="127.0.0.1", port=secured.port, password=PASSWORD, **kwargs)
    try:
        assert client.ping()
        job_id = client.execute_command("ADDJOB", "py", "x", 0)
        assert client.execute_command("ACKJOB", job_id) == 1
    finally:
        client.close()


def no_retry():
    # redis-py retries connection errors (AuthenticationError is one)
    return Retry(NoBackoff(), 0)


def test_redis_py_wrong_password(secured):
    for protocol in (2, 3):
        client = redis.Redis(host="127.0.0.1", port=secured.port, password="nope",
                             protocol=protocol, retry=no_retry())
        with pytest.raises(redis.AuthenticationError):
            client.ping()


def test_auth_without_requirepass(shared):
    client = shared.client(retry=no_retry())
    with pytest.raises(redis.AuthenticationError, match="Client sent AUTH, but no password is set"):
        client.execute_command("AUTH", "x")


def test_config_set_requirepass_at_runtime(make_server):
    srv = make_server()
    with Raw(srv.port) as admin:
        assert admin.call("CONFIG", "SET", "requirepass", "pw") == b"OK"
        # connections already open stay authenticated
        assert admin.call("PING") == b"PONG"
        with Raw(srv.port) as other:
            assert str(other.call("PING")).startswith("NOAUTH")
            assert other.call("AUTH", "pw") == b"OK"
        assert admin.call("CONFIG", "SET", "requirepass", "") == b"OK"
        with Raw(srv.port) as other:
            assert other.call("PING") == b"PONG"


def test_failed_auth_is_slowed_logged_and_blocks_only_that_client(secured):
    """A refused AUTH answers after auth-failure-delay-ms (200), and the
    guesses pipelined behind it wait their turn: 5 guesses cost >= 1 s.
    Another client is served meanwhile; the failure is in the log with the
    guesser's address."""
    import time
    with Raw(secured.port) as guesser, Raw(secured.port) as other:
        assert other.call("AUTH", PASSWORD) == b"OK"
        start = time.monotonic()
        guesser.send(b"".join(encode("AUTH", f"guess{i}") for i in range(5)))
        # the other client is not held up by the guesser's wait
        assert other.call("PING") == b"PONG"
        # well before the five guesses' 1 s: a loop that waited for them answers after it
        assert time.monotonic() - start < 0.8
        replies = [str(guesser.reply()) for _ in range(5)]
        elapsed = time.monotonic() - start
        assert replies == ["ERR invalid password"] * 5
        assert elapsed >= 0.95, elapsed
        local = "127.0.0.1:%d" % guesser.sock.getsockname()[1]
        assert f"Failed AUTH from client {local}" in secured.log()
        assert guesser.call("AUTH", PASSWORD) == b"OK"  # the right one: no wait
        info = other.call("INFO", "stats").decode()
        assert "auth_failures:" in info


def test_hello_auth_failure_is_slowed(secured):
    import time
    with Raw(secured.port) as raw:
        start = time.monotonic()
        assert str(raw.call("HELLO", 3, "AUTH", "default", "bad")).startswith(
            "WRONGPASS invalid username-password pair or user is disabled.")
        assert time.monotonic() - start >= 0.18


def test_failure_delay_zero_and_inside_multi(make_server):
    srv = make_server(config='requirepass pw\nauth-failure-delay-ms 0\n')
    with Raw(srv.port) as raw:
        assert str(raw.call("AUTH", "x")) == "ERR invalid password"
        assert raw.call("AUTH", "pw") == b"OK"
        assert raw.call("CONFIG", "SET", "auth-failure-delay-ms", "5000") == b"OK"
        assert raw.call("MULTI") == b"OK"
        assert raw.call("AUTH", "bad") == b"QUEUED"
        # nothing waits inside EXEC: the error at once
        assert [str(r) for r in raw.call("EXEC")] == ["ERR invalid password"]
