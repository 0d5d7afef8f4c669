"""FUNCTION and FCALL against a real trisque-server: libraries loaded,
called, listed, deleted, flushed, dumped and restored (to and from a real
redis-server too); bad libraries change nothing, not even the AOF; the
libraries and what functions wrote survive kill -9 and an AOF rewrite;
their memory counts; a busy function gets -BUSY for the others and only
FUNCTION KILL ends it."""

import os
import subprocess
import threading

import pytest
import redis

from tests.harness import wait_for
from tests.server.conftest import REDIS_SERVER
from tests.server.util import Raw

LIB = ("#!lua name=%s\n"
       "local function key(keys) return keys[1] or 'k' end\n"
       "redis.register_function('%s_set', function(keys, args)\n"
       "  return redis.call('set', key(keys), args[1]) end)\n"
       "redis.register_function{function_name='%s_get', description='reads',\n"
       "  callback=function(keys) return redis.call('get', key(keys)) end,\n"
       "  flags={'no-writes'}}\n")
BUSY_FUNCTION = ("Redis is busy running a script. You can only call FUNCTION KILL "
                 "or SHUTDOWN NOSAVE.")


def lib(name):
    return LIB % (name, name, name)


def names(client):
    return sorted(entry[1] for entry in client.execute_command("FUNCTION", "LIST"))


def redis_names(client):
    """(redis-py turns a redis-server's FUNCTION LIST into dicts)"""
    return sorted(entry[b"library_name"] if isinstance(entry, dict) else entry[1]
                  for entry in client.execute_command("FUNCTION", "LIST"))


def aof_text(srv):
    parts = []
    for root, _dirs, files in os.walk(srv.dir):
        for name in files:
            if "aof" in name:
                with open(os.path.join(root, name), "rb") as f:
                    parts.append(f.read())
    return b"".join(parts)


def test_load_call_list_delete_flush(c):
    c.execute_command("FUNCTION", "FLUSH")
    assert c.execute_command("FUNCTION", "LOAD", lib("one")) == b"one"
    assert c.execute_command("FCALL", "one_set", 1, "a", "v1") == b"OK"
    assert c.execute_command("FCALL_RO", "ONE_GET", 1, "a") == b"v1"  # any case
    assert c.execute_command("FUNCTION", "LOAD", lib("two")) == b"two"
    assert names(c) == [b"one", b"two"]
    listing = c.execute_command("FUNCTION", "LIST", "LIBRARYNAME", "one", "WITHCODE")
    assert listing[0][:4] == [b"library_name", b"one", b"engine", b"LUA"]
    functions = {f[1]: f for f in listing[0][5]}
    assert functions[b"one_get"] == [b"name", b"one_get", b"description", b"reads",
                                     b"flags", [b"no-writes"]]
    assert functions[b"one_set"][3] is None and functions[b"one_set"][5] == []
    assert listing[0][6:] == [b"library_code", lib("one").encode()]
    stats = c.execute_command("FUNCTION", "STATS")
    assert stats == [b"running_script", None, b"engines",
                     [b"LUA", [b"libraries_count", 2, b"functions_count", 4]]]
    assert c.execute_command("FUNCTION", "DELETE", "one") == b"OK"
    with pytest.raises(redis.ResponseError, match="^Function not found$"):
        c.execute_command("FCALL", "one_set", 0, "x")
    assert c.execute_command("FLUSHALL")  # keeps the libraries
    assert names(c) == [b"two"]
    assert c.execute_command("FUNCTION", "FLUSH", "ASYNC") == b"OK"
    assert names(c) == []


def test_read_only_rules(c):
    c.execute_command("FUNCTION", "FLUSH")
    c.execute_command("FUNCTION", "LOAD", lib("ro"))
    with pytest.raises(redis.ResponseError,
                       match=r"^Can not execute a script with write flag using \*_ro command\.$"):
        c.execute_command("FCALL_RO", "ro_set", 1, "a", "v")
    code = ("#!lua name=nw\nredis.register_function{function_name='nw', "
            "callback=function() return redis.call('set', 'a', 'b') end, flags={'no-writes'}}")
    c.execute_command("FUNCTION", "LOAD", code)
    with pytest.raises(redis.ResponseError,
                       match="^Write commands are not allowed from read-only scripts"):
        c.execute_command("FCALL", "nw", 0)
    assert c.exists("a") == 0


def test_bad_libraries_change_nothing(make_server):
    srv = make_server(config="appendonly yes\nappendfsync always\n")
    c = srv.client()
    c.execute_command("FUNCTION", "LOAD", lib("keep"))
    before = aof_text(srv)
    bad = [
        (lib("keep").replace("return redis", "return = redis", 1), "Error compiling function"),
        (lib("keep") + "error('late')\n", "Error registering functions"),
        (lib("keep") + "redis.register_function('keep_set', function() end)\n",
         "Function already exists in the library"),
        ("#!lua name=keep\nlocal a = 1 while true do a = a + 1 end", "FUNCTION LOAD timeout"),
        ("#!lua name=keep\nreturn 1", "No functions registered"),
        ("#!lua name=other\nredis.register_function('keep_get', function() end)",
         "Function keep_get already exists"),
    ]
    for code, error in bad:
        with pytest.raises(redis.ResponseError, match=error):
            c.execute_command("FUNCTION", "LOAD", "REPLACE", code)
        assert names(c) == [b"keep"]
        assert c.execute_command("FCALL", "keep_set", 1, "k", "still") == b"OK"
    # A payload with one good library and one bad: neither is restored.
    payload_src = redis.Redis(port=srv.port)
    payload_src.execute_command("FUNCTION", "LOAD", lib("extra"))
    payload = payload_src.execute_command("FUNCTION", "DUMP")
    payload_src.execute_command("FUNCTION", "DELETE", "extra")
    with pytest.raises(redis.ResponseError, match="Library keep already exists"):
        c.execute_command("FUNCTION", "RESTORE", payload)  # (keep and extra in it)
    assert names(c) == [b"keep"]
    with pytest.raises(redis.ResponseError, match="payload version or checksum are wrong"):
        c.execute_command("FUNCTION", "RESTORE", payload[:-1] + b"x", "FLUSH")
    assert names(c) == [b"keep"]
    # Only successful changes reached the AOF: the failed loads did not.
    after = aof_text(srv)[len(before):]
    assert b"while true" not in after and b"return = redis" not in after
    assert b"late" not in after and b"name=other" not in after


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not installed")
def test_dump_moves_between_redis_and_trisque(c, redis_port):
    theirs = redis.Redis(port=redis_port)
    theirs.execute_command("FUNCTION", "FLUSH")
    c.execute_command("FUNCTION", "FLUSH")
    long_body = lib("redislib") + "-- " + "padding " * 40 + "\n"  # long: Redis LZF-compresses it
    theirs.execute_command("FUNCTION", "LOAD", long_body)
    payload = theirs.execute_command("FUNCTION", "DUMP")
    assert c.execute_command("FUNCTION", "RESTORE", payload) == b"OK"
    assert c.execute_command("FUNCTION", "LIST", "WITHCODE")[0][7] == long_body.encode()
    assert c.execute_command("FCALL", "redislib_set", 1, "x", "1") == b"OK"
    c.execute_command("FUNCTION", "LOAD", lib("ours"))
    ours_payload = c.execute_command("FUNCTION", "DUMP")
    theirs.execute_command("FUNCTION", "FLUSH")
    assert theirs.execute_command("FUNCTION", "RESTORE", ours_payload) == b"OK"
    assert redis_names(theirs) == [b"ours", b"redislib"]
    # policies: APPEND refuses a library that exists, REPLACE replaces it
    with pytest.raises(redis.ResponseError, match="^Library (ours|redislib) already exists$"):
        c.execute_command("FUNCTION", "RESTORE", ours_payload)
    assert c.execute_command("FUNCTION", "RESTORE", ours_payload, "REPLACE") == b"OK"
    assert c.execute_command("FUNCTION", "RESTORE", payload, "FLUSH") == b"OK"
    assert names(c) == [b"redislib"]


def test_libraries_and_writes_survive_kill9_and_rewrite(make_server):
    srv = make_server(config="appendonly yes\nappendfsync always\n")
    c = srv.client()
    for name in ("a", "b", "c"):
        c.execute_command("FUNCTION", "LOAD", lib(name))
    c.execute_command("FCALL", "a_set", 1, "ka", "1")
    c.execute_command("FUNCTION", "DELETE", "b")
    c.execute_command("FUNCTION", "LOAD", "REPLACE", lib("c").replace("reads", "changed"))
    payload = c.execute_command("FUNCTION", "DUMP")
    srv.kill()
    srv.start()
    c = srv.client()
    assert names(c) == [b"a", b"c"]
    assert c.execute_command("FUNCTION", "DUMP") == payload
    assert c.get("ka") == b"1"
    assert c.execute_command("FCALL", "c_set", 1, "kc", "2") == b"OK"
    # A rewrite keeps the libraries as one FUNCTION LOAD each (not their history).
    c.execute_command("BGREWRITEAOF")
    wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0, 20,
             message="the rewrite")
    c.execute_command("FUNCTION", "LOAD", lib("d"))  # after the rewrite
    srv.kill()
    text = aof_text(srv)
    assert b"DELETE" not in text and text.count(b"name=c\n") == 1
    srv.start()
    c = srv.client()
    assert names(c) == [b"a", b"c", b"d"]
    assert c.execute_command("FUNCTION", "DUMP") != payload
    assert c.mget("ka", "kc") == [b"1", b"2"]
    assert c.execute_command("FCALL_RO", "c_get", 1, "kc") == b"2"


def test_flush_and_restore_replay_from_the_aof(make_server):
    srv = make_server(config="appendonly yes\nappendfsync always\n")
    c = srv.client()
    c.execute_command("FUNCTION", "LOAD", lib("gone"))
    payload = c.execute_command("FUNCTION", "DUMP")
    c.execute_command("FUNCTION", "FLUSH")
    c.execute_command("FUNCTION", "LOAD", lib("x"))
    c.execute_command("FUNCTION", "RESTORE", payload, "APPEND")
    srv.kill()
    srv.start()
    assert names(srv.client()) == [b"gone", b"x"]


def test_libraries_count_in_used_memory(c):
    c.execute_command("FUNCTION", "FLUSH")
    before = c.info("memory")["used_memory"]
    big = lib("big") + "-- " + "x" * 20000 + "\n"
    c.execute_command("FUNCTION", "LOAD", big)
    loaded = c.info("memory")["used_memory"]
    assert loaded - before >= 20000
    c.execute_command("FUNCTION", "DELETE", "big")
    assert c.info("memory")["used_memory"] < loaded - 20000
    c.config_set("maxmemory", 1)
    try:
        with pytest.raises(redis.ResponseError, match="^command not allowed when used memory"):
            c.execute_command("FUNCTION", "LOAD", big)
        assert names(c) == []
    finally:
        c.config_set("maxmemory", 0)


def _fcall_error(client, name, errors):
    try:
        client.execute_command("FCALL", name, 0)
    except redis.RedisError as exc:
        errors.append(str(exc))


def _busy(client):
    try:
        client.ping()
        return False
    except redis.ResponseError as exc:
        assert str(exc) == "BUSY " + BUSY_FUNCTION  # (redis-py keeps BUSY's code)
        return True


def test_busy_function_only_function_kill_ends_it(make_server):
    srv = make_server(config="busy-reply-threshold 100\n")
    looper, other = srv.client(), srv.client()
    looper.execute_command("FUNCTION", "LOAD",
                           "#!lua name=loop\nredis.register_function('spin', "
                           "function() local a = 1 while true do a = a + 1 end end)")
    errors = []
    thread = threading.Thread(target=_fcall_error, args=(looper, "spin", errors))
    thread.start()
    try:
        wait_for(lambda: _busy(other), timeout=10, message="-BUSY")
        stats = other.execute_command("FUNCTION", "STATS")
        assert stats[1][:4] == [b"name", b"spin", b"command", [b"FCALL", b"spin", b"0"]]
        with pytest.raises(redis.ResponseError, match="^BUSY " + BUSY_FUNCTION):
            other.execute_command("SCRIPT", "KILL")
        assert other.execute_command("FUNCTION", "KILL") == b"OK"
    finally:
        thread.join(10)
    assert errors and errors[0].startswith("Script killed by user with SCRIPT KILL")
    assert other.ping()
    with pytest.raises(redis.ResponseError, match="^NOTBUSY No scripts in execution right now.$"):
        other.execute_command("FUNCTION", "KILL")


def test_redis_cli_loads_a_library_from_a_file(shared, tmp_path):
    # redis-cli -x reads the library from stdin, as Redis's docs show
    client = shared.client()
    client.execute_command("FUNCTION", "FLUSH")
    result = subprocess.run(["redis-cli", "-p", str(shared.port), "-x", "FUNCTION", "LOAD"],
                            input=lib("cli").encode(), capture_output=True, timeout=10)
    if result.returncode != 0 and b"not found" in result.stderr:
        pytest.skip("redis-cli not installed")
    assert result.stdout.strip() == b"cli"
    assert client.execute_command("FCALL", "cli_set", 1, "z", "1") == b"OK"


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not installed")
def test_command_getkeys_as_redis(shared, redis_port):
    # (FCALL's and EVAL's keys are counted by numkeys; Redis's unit/functions checks it)
    cases = [["fcall", "f", "1", "x", "foo"], ["fcall_ro", "f", "2", "a", "b", "c"],
             ["eval", "return 1", "0"], ["eval", "return 1", "1", "k"],
             ["evalsha_ro", "ab", "3", "a"], ["get", "k"], ["mset", "a", "1", "b", "2"],
             ["del", "a", "b", "c"], ["nosuch", "a"], ["ping", "x"], ["get"], ["set", "k"]]
    ours, theirs = Raw(shared.port), Raw(redis_port)
    for case in cases:
        replies = []
        for conn in (ours, theirs):
            conn.send_command("COMMAND", "GETKEYS", *case)
            reply = conn.reply()
            replies.append(str(reply) if isinstance(reply, Exception) else reply)
        assert replies[0] == replies[1], case


def test_function_load_and_fcall_inside_exec_replay(make_server):
    # one MULTI/EXEC block in the AOF: the library and the function's write
    srv = make_server(config="appendonly yes\nappendfsync always\n")
    c = srv.client()
    pipe = c.pipeline(transaction=True)
    pipe.execute_command("FUNCTION", "LOAD", lib("tx"))
    pipe.execute_command("FCALL", "tx_set", 1, "kt", "in-exec")
    pipe.execute_command("FUNCTION", "LOAD", "#!lua name=bad\nreturn 1")  # fails alone
    results = pipe.execute(raise_on_error=False)
    assert results[:2] == [b"tx", b"OK"]
    assert isinstance(results[2], redis.ResponseError)
    srv.kill()
    srv.start()
    c = srv.client()
    assert names(c) == [b"tx"]
    assert c.get("kt") == b"in-exec"
