"""A bug in a command handler costs that command, not the node."""

import pytest
import redis

from tests.harness import wait_for


def test_handler_exception_answers_an_error_and_the_node_keeps_serving(server):
    r = server.client()
    job_id = r.execute_command("ADDJOB", "q", "kept", 0)
    # DEBUG OOM raises inside its handler, as a bug would.
    with pytest.raises(redis.ResponseError, match="internal error in debug"):
        r.execute_command("DEBUG", "OOM")
    assert r.ping()
    assert r.execute_command("SHOW", job_id) is not None
    assert r.execute_command("QLEN", "q") == 1
    wait_for(lambda: "Internal error running 'DEBUG OOM'" in server.log(),
             message="the traceback in the log")
    assert "Traceback" in server.log()
