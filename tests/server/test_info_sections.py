"""INFO with several sections (Redis 7): each section once, in order,
default/all/everything combined with others; commandstats counts the
calls refused before running and those that answered an error."""

import pytest
import redis

from tests.server.util import Raw


def sections(text):
    return [line[2:] for line in text.splitlines() if line.startswith("# ")]


def test_several_sections_each_once(shared):
    with Raw(shared.port) as raw:
        def info(*args):
            return raw.call("INFO", *args).decode()
        assert sections(info("cpu", "sentinel", "keyspace", "CPU")) == ["CPU", "Keyspace"]
        both = info("cpu", "all")
        assert both.count("used_cpu_user_children") == 1
        assert "master_repl_offset" in both and "rejected_calls" in both
        default = info("cpu", "default")
        assert "master_repl_offset" in default and "rejected_calls" not in default
        assert "rejected_calls" not in info()
        assert "rejected_calls" in info("everything")


def test_commandstats_counts_rejected_and_failed_calls(c):
    c.config_resetstat()
    c.set("k", "v")
    with pytest.raises(redis.ResponseError):
        c.execute_command("INCR", "k")  # runs, answers an error
    with pytest.raises(redis.ResponseError):
        c.execute_command("INCR")  # wrong arity: refused
    stats = c.info("commandstats")
    assert stats["cmdstat_incr"]["calls"] == 1
    assert stats["cmdstat_incr"]["failed_calls"] == 1
    assert stats["cmdstat_incr"]["rejected_calls"] == 1
    assert stats["cmdstat_set"]["failed_calls"] == 0
