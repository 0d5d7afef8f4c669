"""CONFIG GET / SET / RESETSTAT / REWRITE against a real server, and the
restart that re-reads a rewritten file."""

import os

import pytest
import redis

from tests.server.util import Raw


def test_config_get(any_c, shared):
    c = any_c
    assert c.config_get("port") == {"port": str(shared.port)}
    got = c.config_get("max*")
    assert {"maxmemory", "maxclients", "maxmemory-policy"} <= set(got)
    assert got["maxmemory"] == str(1024 ** 3)
    assert c.config_get("nosuch*") == {}
    assert c.config_get("appendonly") == {"appendonly": "no"}
    assert os.path.isabs(c.config_get("dir")["dir"])


def test_config_get_raw_shapes(shared):
    with Raw(shared.port) as raw:
        assert raw.call("CONFIG", "GET", "hz") == [b"hz", b"10"]
        assert str(raw.call("CONFIG", "GET")) == "ERR Wrong number of arguments for CONFIG GET"
        raw.call("HELLO", 3)
        assert raw.call("CONFIG", "GET", "hz") == {b"hz": b"10"}


def test_config_set(c):
    assert c.config_set("maxmemory", "10mb")
    assert c.config_get("maxmemory") == {"maxmemory": str(10 * 1024 * 1024)}
    assert c.config_set("maxmemory", "1gb")
    assert c.config_set("loglevel", "warning")
    assert c.config_get("loglevel") == {"loglevel": "warning"}
    assert c.config_set("loglevel", "verbose")
    assert c.config_set("slowlog-max-len", 5)
    assert c.config_set("timeout", 0)
    for name, value, message in [
        ("maxmemory", "lots", "Invalid argument 'lots' for CONFIG SET 'maxmemory'"),
        ("loglevel", "loud", "Invalid argument 'loud' for CONFIG SET 'loglevel'"),
        ("hz", "0", "Invalid argument '0' for CONFIG SET 'hz'"),
        ("nosuch", "1", "Unsupported CONFIG parameter: nosuch"),
        ("port", "1234", "Unsupported CONFIG parameter: port"),
    ]:
        with pytest.raises(redis.ResponseError) as info:
            c.config_set(name, value)
        assert str(info.value).startswith(message), str(info.value)
    assert c.config_get("maxmemory") == {"maxmemory": str(1024 ** 3)}
    with pytest.raises(redis.ResponseError, match="Wrong number of arguments for CONFIG SET"):
        c.execute_command("CONFIG", "SET", "maxmemory")
    with pytest.raises(redis.ResponseError, match="CONFIG subcommand must be one of"):
        c.execute_command("CONFIG", "NOSUCH")


def test_config_resetstat(c):
    for _ in range(5):
        c.execute_command("QLEN", "q")
    assert c.info("stats")["total_commands_processed"] >= 5
    assert c.execute_command("CONFIG", "RESETSTAT") == b"OK"
    assert c.info("stats")["total_commands_processed"] <= 2
    assert "cmdstat_qlen" not in c.info("commandstats")


def test_config_rewrite_keeps_comments_and_unknown_lines(make_server):
    srv = make_server(config=(
        "# my own comment\n"
        "save 900 1\n"            # accepted and ignored: must survive
        "\n"
        "maxmemory 100mb\n"
        "   # indented comment\n"
        'requirepass "old pass"\n'
    ))
    with Raw(srv.port) as raw:
        raw.call("AUTH", "old pass")
        assert raw.call("CONFIG", "SET", "maxmemory", "200mb") == b"OK"
        assert raw.call("CONFIG", "SET", "requirepass", "new pass") == b"OK"
        assert raw.call("CONFIG", "SET", "cluster-node-timeout", "3000") == b"OK"
        assert raw.call("CONFIG", "REWRITE") == b"OK"
    text = open(srv.config_path).read()
    lines = text.splitlines()
    assert "# my own comment" in lines and "   # indented comment" in lines
    assert "save 900 1" in lines
    assert "maxmemory 200mb" in lines and "maxmemory 100mb" not in lines
    assert 'requirepass "new pass"' in lines
    assert "cluster-node-timeout 3000" in lines
    assert f'dir "{os.path.realpath(srv.dir)}"' in lines
    assert f"port {srv.port}" in lines
    assert 'logfile "log.txt"' in lines
    # the order of the lines that were there is kept
    assert lines.index("# my own comment") < lines.index("maxmemory 200mb")
    # the restart reads it back
    srv.restart()
    with Raw(srv.port) as raw:
        assert str(raw.call("PING")).startswith("NOAUTH")
        assert raw.call("AUTH", "new pass") == b"OK"
        assert raw.call("CONFIG", "GET", "maxmemory") == [b"maxmemory", str(200 * 1024 ** 2).encode()]
        assert raw.call("CONFIG", "GET", "cluster-node-timeout") == [b"cluster-node-timeout", b"3000"]
        # rewriting an unchanged config changes nothing
        assert raw.call("CONFIG", "REWRITE") == b"OK"
    assert open(srv.config_path).read() == text


def test_config_rewrite_with_relative_dir(tmp_path):
    """The Disque harness: relative config path and relative dir, cwd above
    it; the rewrite must find the file after the chdir and write dir as an
    absolute quoted path."""
    from tests.harness import Server
    inst = tmp_path / "disque_0"
    inst.mkdir()
    srv = Server(directory=str(inst))
    with open(srv.config_path, "w") as f:
        f.write(f"port {srv.port}\ndir ./disque_0\nlogfile log.txt\nloglevel notice\n"
                f"bind 127.0.0.1\n")
    import subprocess
    from tests.harness import server_command
    srv.proc = subprocess.Popen(server_command() + ["disque_0/disque.conf"],
                                cwd=str(tmp_path), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
    try:
        srv.wait_ready()
        assert os.path.exists(inst / "log.txt")
        with Raw(srv.port) as raw:
            assert raw.call("CONFIG", "SET", "cluster-node-timeout", "3000") == b"OK"
            assert raw.call("CONFIG", "REWRITE") == b"OK"
        lines = open(srv.config_path).read().splitlines()
        assert f'dir "{os.path.realpath(inst)}"' in lines
        assert 'logfile "log.txt"' in lines and "loglevel notice" in lines
        assert "bind 127.0.0.1" in lines and "cluster-node-timeout 3000" in lines
        srv.stop()
        srv.proc = subprocess.Popen(server_command() + ["disque_0/disque.conf"],
                                    cwd=str(tmp_path), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE)
        srv.wait_ready()
        with Raw(srv.port) as raw:
            assert raw.call("CONFIG", "GET", "cluster-node-timeout")[1] == b"3000"
    finally:
        srv.stop()
