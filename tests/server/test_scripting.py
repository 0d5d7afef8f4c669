"""EVAL and friends against a real trisque-server: replies byte for byte
against redis-server 7.0 (RESP2 and RESP3), redis-py's Script objects, a
script that loops forever (-BUSY for the others, SCRIPT KILL ends it, the
node stays up), one that wrote first (-UNKILLABLE, SHUTDOWN NOSAVE), and
scripts' atomicity."""

import socket
import threading
import time

import pytest
import redis

from tests.harness import wait_for
from tests.server.conftest import REDIS_SERVER
from tests.server.util import Raw, raw_replies, reads_never_torn

BUSY = ("Redis is busy running a script. You can only call SCRIPT KILL or "
        "SHUTDOWN NOSAVE.")


CASES = [
    "return {1,2,3.7,'x',nil,4}", "return {ok='fine'}", "return {err='My Error'}",
    "return redis.error_reply('My Error')", "return redis.error_reply('oops')",
    "return redis.error_reply('-X oops')", "return redis.status_reply('FINE')",
    "error('boom')", "error({err='X boom'})", "return redis.call('nosuch')",
    "return redis.call('lpush','s','x')", "return redis.pcall('lpush','s','x')",
    "return redis.call('get')", "return x", "x=1", "return os", "return io",
    "return debug", "return require", "return loadfile", "return dofile",
    "return print", "return getfenv", "return python", "syntax error here",
    "return true", "return false", "return 3.99", "return -3.99",
    "return {true,false,1}", "return tostring(1e20)", "return 1e20", "return 0/0",
    "return redis.sha1hex('')", "return KEYS[1]..ARGV[1]",
    "return redis.call('set','a','1')", "redis.call('set','a','1'); error('x')",
    "return {1,{ok='x'},{err='bad'}}", "return redis.call('get','nokey')",
    "return {double=3.5}", "return {double=0.1}", "return redis.log(redis.LOG_WARNING,'hi')",
    "redis.call('set','k',0.1) return redis.call('get','k')", "return redis.call()",
    "return redis.call({})", "return redis.pcall('set',{})", "return redis.call('multi')",
    "return redis.call('eval','return 1','0')", "return redis.call('blpop','l','0')",
    "return redis.setresp(4)", "return string.rep('x',3)", "string.x=1",
    "rawset(_G,'x',1)", "return type(loadstring)", "return bit.band(7,3)",
    "return bit.bxor(5,3,1)", "return bit.tohex(255)", "return bit.lshift(1,31)",
    "return type(coroutine)", "pcall(error,'x') return 1", "return unpack(ARGV)",
    "redis.setresp(3) return redis.call('hgetall','nohash')",
    "redis.setresp(3) return redis.call('get','nokey')",
    "redis.setresp(3) return {redis.call('sadd','st','a'), redis.call('smembers','st')}",
    "redis.setresp(3) return redis.call('zadd','z','1.5','m') + redis.call('zscore','z','m').double",
    "redis.call('hset','h','f','v') return redis.call('hgetall','h')",
    "return redis.call('incrbyfloat','fl','1.5')",
    "return redis.call('select','1')", "return redis.call('ping')",
    "return {1,2,nil,3}", "return {}", "return {a=1}", "return 'a\\r\\nb'",
    "return {ok='x\\ny'}", "return tonumber('12')", "return 2^53",
    "local t = {} for i=1,200 do t[i]=i end return t",
    "return redis.call('lpush','l','a','b') .. 'x'", "return #KEYS + #ARGV",
    "return cjson ~= nil and 1 or 0",
]


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not installed")
@pytest.mark.parametrize("proto", [2, 3])
def test_same_bytes_as_redis(shared, redis_port, proto):
    commands = [["HELLO", proto], ["SET", "s", "str"]]
    for body in CASES:
        commands.append(["EVAL", body, 1, "k", "v"])
    commands += [["EVALSHA", "abcdef", 0], ["EVAL", "return 1", -1], ["EVAL", "return 1", 2, "a"],
                 ["EVAL", "return 1", "x"], ["SCRIPT", "LOAD", "return 1"],
                 ["SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "ab"],
                 ["EVALSHA", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", 0],
                 ["EVALSHA_RO", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", 0],
                 ["EVAL_RO", "return redis.call('set','a','1')", 0],
                 ["EVAL_RO", "return redis.call('get','a')", 0],
                 ["SCRIPT", "FLUSH"], ["SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"],
                 ["SCRIPT", "KILL"], ["SCRIPT", "FOO"], ["SCRIPT", "LOAD"],
                 ["SCRIPT", "FLUSH", "x"], ["SCRIPT", "FLUSH", "ASYNC"],
                 ["MULTI"], ["EVAL", "return redis.call('incr','n')", 0],
                 ["EVAL", "error('in exec')", 0], ["EXEC"]]
    shared.client().execute_command("DEBUG", "FLUSHALL")
    shared.client().execute_command("SCRIPT", "FLUSH")
    redis.Redis(port=redis_port).flushall()
    redis.Redis(port=redis_port).script_flush()
    mine = raw_replies(shared.port, commands)
    theirs = raw_replies(redis_port, commands)
    differences = [(argv, a, b) for argv, a, b in zip(commands, mine, theirs)
                   if argv[0] != "HELLO" and a != b]
    assert differences == []


def test_redis_py_script_objects(any_c):
    c = any_c
    incr_by = c.register_script("return redis.call('incrby', KEYS[1], ARGV[1])")
    assert incr_by(keys=["n"], args=[5]) == 5
    assert incr_by(keys=["n"], args=[2]) == 7  # EVALSHA now
    assert c.script_exists(incr_by.sha) == [True]
    assert c.eval("return {KEYS[1], ARGV[1], 3}", 1, "k", "a") == [b"k", b"a", 3]
    with pytest.raises(redis.ResponseError, match="user_script:1: boom"):
        c.eval("error('boom')", 0)
    assert c.ping()  # the node stays up after an erroring script


def test_loop_forever_busy_then_script_kill(make_server):
    srv = make_server(config="busy-reply-threshold 200\n")
    looper = srv.client()
    other = srv.client()
    other.set("x", "1")
    result = {}

    def run():
        try:
            result["reply"] = looper.eval("local i = 0 while true do i = i + 1 end", 0)
        except redis.ResponseError as exc:
            result["error"] = str(exc)

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.05)
    start = time.monotonic()
    wait_for(lambda: _busy(other), timeout=10, message="-BUSY")
    busy_after = time.monotonic() - start
    fresh = srv.client()  # a connection made during the script is served too
    with pytest.raises(redis.ResponseError) as busy:
        fresh.get("x")
    assert str(busy.value) == "BUSY " + BUSY
    assert other.execute_command("SCRIPT", "KILL") in (True, b"OK", "OK")
    thread.join(10)
    assert result["error"].startswith("Script killed by user with SCRIPT KILL... script: ")
    assert other.get("x") == b"1" and looper.ping()  # the node stays up
    assert busy_after < 2.0
    assert "Slow script detected" in srv.log()


def _busy(client):
    try:
        client.get("x")
    except redis.ResponseError as exc:
        if str(exc) == "BUSY " + BUSY:  # (redis-py keeps an unknown code)
            return True
        raise
    return False


def test_pcall_cannot_survive_kill(make_server):
    srv = make_server(config="busy-reply-threshold 100\n")
    looper, other = srv.client(), srv.client()
    errors = []
    thread = threading.Thread(target=lambda: _eval_error(
        looper, "while true do pcall(function() while true do end end) end", errors))
    thread.start()
    wait_for(lambda: _busy(other), timeout=10, message="-BUSY")
    other.execute_command("SCRIPT", "KILL")
    thread.join(10)
    assert errors and "Script killed" in errors[0]


def _eval_error(client, body, errors):
    try:
        client.eval(body, 0)
    except (redis.ResponseError, redis.ConnectionError) as exc:
        errors.append(str(exc))


def test_script_that_wrote_is_unkillable_until_shutdown_nosave(make_server):
    srv = make_server(config="busy-reply-threshold 100\nappendonly yes\nappendfsync always\n")
    looper, other = srv.client(), srv.client()
    other.set("before", "1")
    errors = []
    thread = threading.Thread(target=lambda: _eval_error(
        looper, "redis.call('set','w','1') while true do end", errors))
    thread.start()
    wait_for(lambda: _busy(other), timeout=10, message="-BUSY")
    with pytest.raises(redis.ResponseError, match="^UNKILLABLE|Sorry the script already executed"):
        other.execute_command("SCRIPT", "KILL")
    try:
        other.execute_command("SHUTDOWN", "NOSAVE")
    except redis.ConnectionError:
        pass
    thread.join(10)
    wait_for(lambda: srv.proc.poll() is not None, timeout=10, message="exit")
    srv.start()
    c = srv.client()
    # The script's write was in a MULTI block that never got its EXEC: dropped.
    assert c.get("before") == b"1" and c.get("w") is None


def test_scripts_are_atomic_for_other_clients(shared):
    c = shared.client()
    c.execute_command("DEBUG", "FLUSHALL")
    script = c.register_script("redis.call('incr', KEYS[1]) for i = 1, 2000 do end "
                               "return redis.call('incr', KEYS[2])")
    seen = reads_never_torn(shared, lambda: script(keys=["x", "y"]))
    assert seen and all(a == b for a, b in seen)


def test_sandbox_keeps_the_host_out(c):
    for body in ("return os.execute('true')", "return io.open('/etc/passwd')",
                 "return require('os')", "return python.eval('1')",
                 "return redis.call.__globals__",
                 "return loadstring('return os')()",
                 "local ok, e = pcall(redis.call, 'nosuch') return e.__class__"):
        with pytest.raises(redis.ResponseError):
            c.eval(body, 0)
    ok_err = c.eval("local ok, e = pcall(redis.call, 'nosuch') return e.err", 0)
    assert ok_err == b"ERR Unknown Redis command called from script"


def test_reply_of_the_same_turn_goes_out_while_a_script_is_busy(make_server):
    # A GET run in the same event-loop turn as (before) an endless script:
    # its reply must reach the client while the script runs, or that client
    # waits for it and cannot send SCRIPT KILL (the cause of the rare
    # failure of test_pcall_cannot_survive_kill: 'other' stuck 30 s).
    srv = make_server(config="busy-reply-threshold 100\n")
    sleeper = srv.client()
    other = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    looper = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    other.sendall(b"PING\r\n")
    assert other.recv(100) == b"+PONG\r\n"
    looper.sendall(b"PING\r\n")
    assert looper.recv(100) == b"+PONG\r\n"
    thread = threading.Thread(target=lambda: sleeper.execute_command("DEBUG", "SLEEP", "0.5"))
    thread.start()
    time.sleep(0.2)  # the node sleeps: both requests wait for the same turn
    other.sendall(b"GET x\r\n")
    time.sleep(0.05)
    body = b"while true do pcall(function() while true do end end) end"
    looper.sendall(b"*3\r\n$4\r\nEVAL\r\n$%d\r\n%s\r\n$1\r\n0\r\n" % (len(body), body))
    thread.join(10)
    assert other.recv(100) == b"$-1\r\n"  # not held until the script ends
    other.sendall(b"SCRIPT KILL\r\n")
    assert other.recv(100) == b"+OK\r\n"
    looper.settimeout(10)
    assert looper.recv(200).startswith(b"-ERR Script killed by user with SCRIPT KILL...")


def test_a_loop_inside_a_coroutine_is_killed_too(make_server):
    """Lua 5.1 keeps a hook per thread: a coroutine the script makes gets
    the script's hook, so -BUSY and SCRIPT KILL reach a loop inside it
    (before, the node hung: no -BUSY, no PING, no kill)."""
    srv = make_server(config="busy-reply-threshold 100\n")
    looper, other = srv.client(), srv.client()
    errors = []
    thread = threading.Thread(target=lambda: _eval_error(
        looper, "coroutine.wrap(function() while true do end end)()", errors))
    thread.start()
    wait_for(lambda: _busy(other), timeout=10, message="-BUSY")
    other.execute_command("SCRIPT", "KILL")
    thread.join(10)
    assert errors and "Script killed" in errors[0]
    assert other.ping()


SHEBANG_CASES = [
    ["SET", "x", "123"], ["EVAL", "#!not-lua\nreturn 1", 0], ["EVAL", "#!lua\nreturn 1", 0],
    ["EVAL", "#!lua badger=data\nreturn 1", 0], ["EVAL", "#!lua flags=allow-oom,what?\nreturn 1", 0],
    ["EVAL", "#!lua flags=\nreturn 1", 0], ["EVAL", "#!lua", 0],
    ["EVAL", "#!lua flags=no-writes\nreturn redis.call('set','x',1)", 1, "x"],
    ["EVAL", "#!lua flags=no-writes\nreturn redis.call('get','x')", 1, "x"],
    ["EVAL_RO", "#!lua\nreturn 1", 0], ["EVAL_RO", "#!lua flags=no-writes\nreturn 1", 0],
    ["EVAL", "#!lua\nsyntax error", 0], ["EVAL", "#!lua\nreturn 1", "x"],
    ["EVAL", "#!lua\n\nerror('on line 3')", 0],
    ["CONFIG", "SET", "maxmemory", "1"],
    ["EVAL", "redis.call('set','x',1) return 1", 1, "x"],
    ["EVAL", "return redis.call('get','x')", 1, "x"], ["EVAL", "#!lua flags=\nreturn 1", 0],
    ["EVAL", "#!lua flags=allow-oom\nredis.call('set','x',1) return 1", 1, "x"],
    ["EVAL", "#!lua flags=no-writes\nredis.call('get','x') return 1", 0],
    ["EVAL_RO", "#!lua flags=no-writes\nreturn 1", 1, "x"],
    ["EVAL", "#!lua flags=no-writes,allow-oom\nreturn 2", 0],
    ["CONFIG", "SET", "maxmemory", "0"],
    ["SCRIPT", "LOAD", "#!lua flags=no-writes\nreturn redis.call('set','y',1)"],
    ["EVALSHA", "f6b4ea5ef7fa3a8c4b3c6e3e34fd0e1c3dc7bc93", 0],
]


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not installed")
def test_shebang_flags_as_redis(shared, redis_port):
    # EVAL's '#!lua flags=...' line (eval.c): its errors, and the flags'
    # effect on OOM, FCALL_RO-like refusals and writes
    replies = []
    for port in (shared.port, redis_port):
        conn = Raw(port)
        out = []
        for argv in SHEBANG_CASES:
            conn.send_command(*argv)
            reply = conn.reply()
            out.append(str(reply) if isinstance(reply, Exception) else reply)
        replies.append(out)
    assert replies[0] == replies[1]


NOREPLICAS_CASES = [
    ["SET", "x", "some value"], ["CONFIG", "SET", "min-replicas-to-write", "1"],
    ["EVAL", "#!lua flags=no-writes\nreturn redis.call('get','x')", 1, "x"],
    ["EVAL", "return redis.call('get','x')", 1, "x"],
    ["EVAL", "#!lua\nreturn redis.call('get','x')", 1, "x"],
    ["EVAL", "return redis.call('set','x', 1)", 1, "x"], ["SET", "x", "1"], ["GET", "x"],
    ["EVAL_RO", "#!lua\nreturn 1", 0], ["CONFIG", "GET", "min-replicas-to-write"],
    ["CONFIG", "GET", "min-slaves-max-lag"], ["CONFIG", "SET", "min-replicas-to-write", "0"],
    ["SET", "x", "2"],
]


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not installed")
def test_min_replicas_to_write_as_redis(make_server, redis_port):
    # A node has no Redis replicas: min-replicas-to-write > 0 refuses keyspace
    # writes as redis-server without replicas does (scripts by their flags)
    srv = make_server()
    replies = []
    for port in (srv.port, redis_port):
        conn = Raw(port)
        out = []
        for argv in NOREPLICAS_CASES:
            conn.send_command(*argv)
            reply = conn.reply()
            out.append(str(reply) if isinstance(reply, Exception) else reply)
        replies.append(out)
    assert replies[0] == replies[1]
    assert srv.client().execute_command("ADDJOB", "q", "body", 0)  # Disque's jobs: unaffected


ERRORSTATS_CASES = [
    ["CONFIG", "RESETSTAT"], ["EVAL", "return redis.error_reply('MY_ERR_CODE custom msg')", 0],
    ["EVAL", "return redis.error_reply('')", 0], ["EVAL", "return redis.call('select',99)", 0],
    ["EVAL", "local t = redis.pcall('select',99) return 1", 0],
    ["EVAL", "return redis.pcall('select',99)", 0],
    ["EVAL_RO", "return redis.call('set','x','y')", 1, "x"],
    ["EVAL_RO", "local t = redis.pcall('set','x','y') return 1", 1, "x"],
    ["CONFIG", "SET", "maxmemory", "1"], ["EVAL", "return redis.call('set','x','y')", 1, "x"],
    ["EVAL", "return redis.pcall('set','x','y')", 1, "x"], ["CONFIG", "SET", "maxmemory", "0"],
    ["GET"], ["SET", "s", "1"], ["LPUSH", "s", "1"], ["EVAL", "return redis.call('nosuch')", 0],
    ["EVAL", "return redis.call({})", 0], ["EVAL", "error('x')", 0],
    ["INFO", "errorstats"], ["CONFIG", "RESETSTAT"], ["INFO", "errorstats"],
]


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not installed")
def test_errorstats_of_scripts_as_redis(make_server, redis_port):
    # INFO errorstats counts each error once: a redis.call's where the
    # command answered it, not again in the script's reply (script_lua.c's
    # ignore_error_stats_update); redis.error_reply's in the script's reply
    srv = make_server()
    replies = []
    for port in (srv.port, redis_port):
        conn = Raw(port)
        out = []
        for argv in ERRORSTATS_CASES:
            conn.send_command(*argv)
            reply = conn.reply()
            out.append(str(reply) if isinstance(reply, Exception) else reply)
        conn.send_command("INFO", "stats")
        stats = conn.reply()
        out.append([line for line in stats.split(b"\r\n") if b"total_error_replies" in line])
        # failed_calls: a script answering an error failed, as its inner command
        for argv in (["CONFIG", "RESETSTAT"], ["EVAL", "return redis.call('select',99)", 0],
                     ["EVAL", "return redis.pcall('select',99)", 0],
                     ["EVAL_RO", "return redis.call('set','x','y')", 1, "x"]):
            conn.send_command(*argv)
            conn.reply()
        conn.send_command("INFO", "commandstats")
        lines = conn.reply().split(b"\r\n")
        out.append(sorted(line.split(b":")[0] + b" " + line[line.index(b"rejected"):]
                          for line in lines if line.startswith(b"cmdstat_")
                          and line.split(b":")[0] in (b"cmdstat_eval", b"cmdstat_eval_ro",
                                                      b"cmdstat_select", b"cmdstat_set")))
        replies.append(out)
    assert replies[0] == replies[1]
