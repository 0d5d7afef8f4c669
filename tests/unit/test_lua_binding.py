"""The C binding of a script run (lua_call.c, ``_lua_call``) against lupa's
path: the same requests on a node core with ``TRISQUE_LUA_BINDING`` on and
off give the same replies, byte for byte (errors and their line numbers,
redis.call's replies of every kind, RESP3, coroutines, cjson's errors,
FCALL).  The server's own script tests run both ways too
(tests/server/test_*_lupa.py)."""

import os

import pytest

from trisque.core.admin.build_form import build_form
from trisque.core.admin.config import Config
from trisque.core.keyspace import lua_sandbox
from trisque.core.keyspace.scripting import scripting
from trisque.core.node import Node
from trisque.core.table import COMMANDS

LIBRARY = b"""#!lua name=lb
redis.register_function('lb_get', function(keys, args) return redis.call('get', keys[1]) end)
redis.register_function('lb_set', function(keys, args)
  return redis.call('set', keys[1], args[1]) end)
redis.register_function('lb_all', function(keys, args) return {#keys, #args, keys, args} end)
redis.register_function('lb_fail', function(keys, args)
  local x = 1
  return redis.call('incr', keys[1]) end)
redis.register_function{function_name='lb_ro', callback=function(keys, args)
  return redis.call('set', keys[1], 'x') end, flags={'no-writes'}}
"""

# Scripts: (body, keys and arguments).  Each runs by EVAL, then by EVALSHA.
SCRIPTS = [
    ("return redis.call('get', KEYS[1])", ["s"]),
    ("return redis.call('get', KEYS[1])", ["nosuch"]),
    ("return redis.call('set', KEYS[1], ARGV[1])", ["s2", "v2"]),
    ("return redis.call('incr', KEYS[1])", ["n"]),
    ("return redis.call('incrbyfloat', KEYS[1], 1.5)", ["f"]),
    ("return redis.call('incr', KEYS[1])", ["s"]),  # an error: -ERR not an integer
    ("return redis.pcall('incr', KEYS[1])", ["s"]),
    ("local r = redis.pcall('incr', KEYS[1]) return {type(r), r.err}", ["s"]),
    ("local ok, e = pcall(redis.call, 'nosuch') return {tostring(ok), e.err}", []),
    ("local ok, e = pcall(redis.call, 'incr', KEYS[1]) return {tostring(ok), e.err}", ["s"]),
    ("return redis.call('nosuch')", []),
    ("return redis.call()", []),
    ("return redis.call('get', {})", []),
    ("return redis.call('get', true)", []),
    ("return redis.call('get', nil)", []),
    ("return redis.call('set', 'k', 3.25)", []),
    ("return redis.call('set', 'k', 7) and redis.call('get', 'k')", []),
    ("return redis.call('set', 'k', 1e20) and redis.call('get', 'k')", []),
    ("return redis.call('lrange', KEYS[1], 0, -1)", ["l"]),
    ("return redis.call('hgetall', KEYS[1])", ["h"]),
    ("redis.setresp(3) return redis.call('hgetall', KEYS[1])", ["h"]),
    ("redis.setresp(3) local m = redis.call('hgetall', KEYS[1]) return m.map.a", ["h"]),
    ("redis.setresp(3) return {redis.call('get', 'nosuch') == nil}", []),
    ("redis.setresp(3) return redis.call('incrbyfloat', 'f2', 2.5)", []),
    ("local t = redis.call('set', 'k', 'v') t.ok = 'changed' return t", []),
    ("return redis.call('ping')", []),
    ("return redis.status_reply('FINE')", []),
    ("return redis.error_reply('MY err')", []),
    ("return {err = 'bare'}", []),
    ("return 3.9", []), ("return -3.9", []), ("return 1e300", []), ("return 0/0", []),
    ("return nil", []), ("return false", []), ("return true", []),
    ("redis.setresp(3) return false", []),
    ("return {1, 'two', {3, false, 4}, nil, 5}", []),
    ("return KEYS[1] .. ARGV[1] .. #KEYS .. #ARGV", ["a", "b", "c", "d"]),
    ("return #KEYS + #ARGV", []),
    ("\n\nlocal x = nil\nreturn x.y", []),  # a Lua error with its line
    ("error('plain')", []),
    ("error({err='table error'})", []),
    ("local x = 1\nreturn redis.call('incr', KEYS[1])", ["s"]),
    ("return cjson.decode('{bad')", []),
    ("local ok, e = pcall(cjson.decode, '{bad') return redis.call('get', KEYS[1])", ["s"]),
    ("return cjson.encode({a = redis.call('get', KEYS[1])})", ["s"]),
    ("return cmsgpack.unpack(cmsgpack.pack({1, 2, redis.call('get', KEYS[1])}))", ["s"]),
    ("local co = coroutine.create(function() coroutine.yield(redis.call('get', KEYS[1])) "
     "return redis.call('incr', 'n') end) local _, a = coroutine.resume(co) "
     "local _, b = coroutine.resume(co) return {a, b}", ["s"]),
    ("local co = coroutine.wrap(function() return redis.call('incr', KEYS[1]) end) return co()",
     ["s"]),
    ("return redis.sha1hex('x')", []),
    ("return redis.call('eval', 'return 1', 0)", []),
    ("return redis.call('blpop', 'l', 0)", []),
]

# (every other script's arguments are all keys)
NUMKEYS = {"return redis.call('set', KEYS[1], ARGV[1])": 1,
           "return KEYS[1] .. ARGV[1] .. #KEYS .. #ARGV": 2}

FCALLS = [
    ("lb_get", ["s"]), ("lb_get", ["nosuch"]), ("lb_set", ["s3", "v3"]), ("lb_fail", ["s"]),
    ("lb_all", ["k1", "k2", "a1"]), ("lb_all", []), ("lb_ro", ["s4"]), ("nosuch", []),
]


def _run(node, client, *argv):
    node.execute(client, [a if isinstance(a, bytes) else str(a).encode() for a in argv])
    out = b"".join(client.out)
    client.out.clear()
    return out


def _replies(monkeypatch, binding):
    monkeypatch.setenv("TRISQUE_LUA_BINDING", "1" if binding else "0")
    node = Node(Config(), "a" * 40, lambda: 1000.0, table=COMMANDS)
    c = node.add_client()
    for setup in (["SET", "s", "text"], ["RPUSH", "l", "x", "y"], ["HSET", "h", "a", "1"],
                  ["FUNCTION", "LOAD", LIBRARY]):
        assert not _run(node, c, *setup).startswith(b"-")
    engine = scripting(node)
    assert (engine.sandbox.binding is not None) == (binding and lua_sandbox._lua_call is not None)
    assert (engine.functions.sandbox.binding is not None) == (engine.sandbox.binding is not None)
    out = []
    for body, args in SCRIPTS:
        n = NUMKEYS.get(body, len(args))
        out.append(_run(node, c, "EVAL", body, n, *args))
        sha = _run(node, c, "SCRIPT", "LOAD", body).split(b"\r\n")[1]
        out.append(_run(node, c, "EVALSHA", sha, n, *args))
    for name, args in FCALLS:
        n = {"lb_all": 2, "lb_set": 1}.get(name, len(args)) if args else 0
        out.append(_run(node, c, "FCALL", name, n, *args))
        out.append(_run(node, c, "FCALL_RO", name, n, *args))
    # SCRIPT FLUSH makes a new Lua state: the binding follows it
    assert _run(node, c, "SCRIPT", "FLUSH") == b"+OK\r\n"
    out.append(_run(node, c, "EVAL", "return redis.call('get', KEYS[1])", 1, "s"))
    out.append(_run(node, c, "INFO", "errorstats"))
    out.append(_run(node, c, "GET", "k"))
    return out


def test_binding_and_lupa_give_the_same_replies(monkeypatch):
    with_binding = _replies(monkeypatch, True)
    without = _replies(monkeypatch, False)
    for i, (a, b) in enumerate(zip(with_binding, without)):
        assert a == b, (i, a, b)
    assert len(with_binding) == len(without)
    replies = dict(zip(((body, tuple(args)) for body, args in SCRIPTS), with_binding[0::2]))
    assert replies[("return redis.call('get', KEYS[1])", ("s",))] == b"$4\r\ntext\r\n"
    assert replies[("return redis.call('get', KEYS[1])", ("nosuch",))] == b"$-1\r\n"
    assert replies[("return false", ())] == b"$-1\r\n"
    assert replies[("redis.setresp(3) return false", ())] == b":0\r\n"
    assert replies[("return redis.call('set', KEYS[1], ARGV[1])", ("s2", "v2"))] == b"+OK\r\n"
    assert replies[("return redis.call('incr', KEYS[1])", ("s",))].startswith(
        b"-ERR value is not an integer or out of range script: ")
    assert replies[("return redis.call('get', {})", ())].startswith(
        b"-ERR Lua redis lib command arguments must be strings or integers script: ")
    assert replies[("\n\nlocal x = nil\nreturn x.y", ())].endswith(b"on @user_script:4.\r\n")
    assert replies[("return {1, 'two', {3, false, 4}, nil, 5}", ())] == (
        b"*3\r\n:1\r\n$3\r\ntwo\r\n*3\r\n:3\r\n$-1\r\n:4\r\n")
    assert replies[("return cjson.decode('{bad')", ())].startswith(b"-ERR user_script:1: ")
    assert replies[("local ok, e = pcall(cjson.decode, '{bad') return redis.call('get', KEYS[1])",
                    ("s",))] == b"$4\r\ntext\r\n"
    assert replies[("return redis.call('set', 'k', 1e20) and redis.call('get', 'k')", ())] == (
        b"$5\r\n1e+20\r\n")


def test_expected_builds_have_the_binding():
    # CI (.ci/run) expects the compiled build, this module with it: no
    # silent fallback to lupa's path.  make test-pure runs this file again
    # from a copy without any .so (the interpreted core, no binding): the
    # form that runs is checked by tests/server/test_build_form.py.
    if os.environ.get("TRISQUE_EXPECT_BUILD") != "compiled":
        pytest.skip("not asked for the compiled build")
    if not build_form().startswith("compiled"):
        pytest.skip("the interpreted core runs (make test-pure)")
    assert lua_sandbox._lua_call is not None


@pytest.mark.parametrize("binding", [True, False], ids=["binding", "lupa"])
def test_a_killed_run_leaves_the_hook_for_the_next(monkeypatch, binding):
    # the kill turns the hook on for every instruction and the run takes
    # it off; the next run (and a coroutine it makes) must be hooked again
    monkeypatch.setenv("TRISQUE_LUA_BINDING", "1" if binding else "0")
    now = [1000.0]

    def clock():
        now[0] += 0.05  # every read 50 ms later: busy after a few hook calls
        return now[0]
    node = Node(Config(), "a" * 40, clock, table=COMMANDS)
    node.config.busy_reply_threshold = 1000
    looper, other = node.add_client(), node.add_client()
    kills = []

    def on_busy():
        node.execute(other, [b"SCRIPT", b"KILL"])
        kills.append(b"".join(other.out))
        other.out.clear()
    node.on_busy = on_busy
    loops = ("local i = 0 while true do i = i + 1 end",
             "local co = coroutine.wrap(function() while true do end end) co()",
             "local i = 0 while true do pcall(function() i = i + 1 end) end")
    for body in loops:
        reply = _run(node, looper, "EVAL", body, 0)
        assert reply.startswith(b"-ERR Script killed by user with SCRIPT KILL... script: ")
        assert _run(node, looper, "EVAL", "return redis.call('ping')", 0) == b"+PONG\r\n"
    assert kills == [b"+OK\r\n"] * 3


@pytest.mark.parametrize("binding", [True, False], ids=["binding", "lupa"])
def test_redis_call_takes_as_many_arguments_as_redis(monkeypatch, binding):
    # Redis's "Script check unpack with massive arguments": redis.call with
    # 8,001 arguments, as many as Lua 5.1 lets a C function take.  The
    # binding's redis.call is one; lupa's callable needs one slot more
    # (docs/testing.md)
    monkeypatch.setenv("TRISQUE_LUA_BINDING", "1" if binding else "0")
    node = Node(Config(), "a" * 40, lambda: 1000.0, table=COMMANDS)
    c = node.add_client()
    body = "local a = {} for i = 1, 7999 do a[i] = i end return redis.call('rpush', 'big', unpack(a))"
    reply = _run(node, c, "EVAL", body, 0)
    if binding and lua_sandbox._lua_call is not None:
        assert reply == b":7999\r\n"
        assert _run(node, c, "LINDEX", "big", -1) == b"$4\r\n7999\r\n"
    elif reply.startswith(b"-"):  # (lupa's path today: an error, nothing written)
        assert _run(node, c, "EXISTS", "big") == b":0\r\n"
    else:
        assert reply == b":7999\r\n"
