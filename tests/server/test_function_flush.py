"""FUNCTION FLUSH, the call Redis's own test suite makes before every test
(tools/redis-suite.sh): OK with no option, SYNC or ASYNC, Redis 7.0's
errors otherwise, and the connection keeps working."""

import pytest
import redis


def test_function_flush_answers_ok(c):
    assert c.execute_command("FUNCTION", "FLUSH") == b"OK"
    assert c.execute_command("FUNCTION", "FLUSH", "sync") == b"OK"
    assert c.execute_command("FUNCTION", "flush", "ASYNC") == b"OK"


def test_function_flush_bad_input_gets_redis_errors(c):
    with pytest.raises(redis.ResponseError, match="^FUNCTION FLUSH only supports SYNC.ASYNC option$"):
        c.execute_command("FUNCTION", "FLUSH", "now")
    with pytest.raises(redis.ResponseError, match="^unknown subcommand or wrong number of arguments "
                                                  "for 'FLUSH'. Try FUNCTION HELP.$"):
        c.execute_command("FUNCTION", "FLUSH", "SYNC", "x")
    assert c.ping()
