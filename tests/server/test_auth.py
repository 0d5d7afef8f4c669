"""requirepass: -NOAUTH before AUTH, AUTH forms, HELLO AUTH, redis-py with
a password over RESP2 and RESP3, CONFIG SET requirepass at runtime."""

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.server.util import Raw

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
