"""The Lua interpreter scripts run in: real Lua 5.1 (lupa's ``lua51``, the
version Redis embeds), its globals cut down to what Redis 7.0 offers.

What a script sees (``G``, reached through a read-only proxy set as every
script's environment): the base functions Redis keeps (no ``print``,
``dofile``, ``loadfile``, ``getfenv``/``setfenv``, ``module``,
``newproxy``; ``load``/``loadstring`` compile into the same sandbox),
``string``, ``table``, ``math``, ``coroutine``, ``bit``, ``redis``,
``KEYS`` and ``ARGV``.  No ``os``, ``io``, ``debug``, ``package``,
``require`` or lupa's ``python``: nothing reaches the host.  Reading a
missing global or writing any global (or a library's field) is an error
with Redis's texts; ``rawset`` and ``setmetatable`` refuse the read-only
tables as Redis's read-only table flag does.

``debug.sethook`` and ``debug.getinfo`` are kept as upvalues of the
bootstrap only: the hook counts instructions and asks Python (``check``)
whether the script was killed; the error handler (Redis's
``__redis__err__handler``) adds the script's source and line to an error.

A run's two crossings (Python calls the runner; ``redis.call`` calls
Python) go through the C binding of lua_call.c (``_lua_call``) when it
is built and ``TRISQUE_LUA_BINDING`` is not ``0``: it works on this same
Lua state (lupa's own Lua 5.1), so only the crossings change; without it
lupa makes them (the interpreted install, ``make test-pure``).
"""

from __future__ import annotations

import os
from typing import Any, Callable

import lupa.lua51 as lua51

from ..admin.version import REDIS_VERSION
from . import lua_libs

try:
    from . import _lua_call
except ImportError:  # not built (an interpreted install), or lupa's Lua lacks a symbol
    _lua_call = None  # type: ignore[assignment]


def binding_available() -> bool:
    """Whether new sandboxes run scripts through the C binding."""
    return _lua_call is not None and os.environ.get("TRISQUE_LUA_BINDING") != "0"

# Instructions between two calls of the time-limit hook (Redis's value):
# about 1 ms of a tight Lua loop here.
HOOK_EVERY = 100000

_BOOTSTRAP = r"""
local pycall, pypcall, pyerror, pycheck, pylog, pysha1, pysetresp, bitops,
      version, version_num, pycjson, pycmsgpack, null, pylib_error, copen, pyreply = ...
-- The C binding (lua_call.c), when Python found it: its redis.call and
-- redis.pcall, and keep() to hand it the runners below.
local ccall, cpcall, keep
if copen then ccall, cpcall, keep = copen() end
local sethook, getinfo = debug.sethook, debug.getinfo
-- The hook the script runs under. Lua 5.1 keeps a hook per thread: every
-- coroutine the script creates gets it too (coroutine.create/wrap below),
-- else a loop inside a coroutine would never see SCRIPT KILL or -BUSY.
local hook_fn, hook_count = nil, 0
local function set_hook(fn, count)
  hook_fn, hook_count = fn, count
  if fn then sethook(fn, "", count) else sethook() end
end
local error, type, tostring, select, unpack, xpcall, pcall, rawset =
      error, type, tostring, select, unpack, xpcall, pcall, rawset
local setmetatable, getmetatable, setfenv, loadstring, load =
      setmetatable, getmetatable, setfenv, loadstring, load
local READONLY = "Attempt to modify a readonly table"
local readonly = {}

local function refuse() error(READONLY, 2) end
local function freeze(lib)
  local proxy = setmetatable({}, {__index = lib, __newindex = refuse, __metatable = false})
  readonly[proxy] = true
  return proxy
end

local G = {}
-- While FUNCTION LOAD runs a library's body, its globals are the library
-- API (LIB: only ``redis.register_function``, ``redis.log``, the log
-- levels and the version); the functions it registered see G when they
-- run (Redis swaps the __index of the globals' metatable the same way).
local LIB = {}
local loading = nil  -- the registrations of the library being loaded
local function nonexistent(name)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 3)
end
local function globals_index(_, name)
  local v
  if loading then v = rawget(LIB, name) else v = rawget(G, name) end
  if v == nil then nonexistent(name) end
  return v
end
-- A script's global read is a table look-up (env's __index is G, or LIB
-- while a library loads), not a Lua call per read; only a missing one
-- reaches a function, at the same depth as globals_index (the error's
-- level 3 is the script).
local function missing(_, name) nonexistent(name) end
setmetatable(G, {__index = missing})
setmetatable(LIB, {__index = missing})
-- What getmetatable(_G) shows: a read-only table (Redis's globals'
-- metatable is protected; changing it is "Attempt to modify...").
local shown_metatable = setmetatable({}, {__index = {__index = globals_index},
                                          __newindex = refuse, __metatable = false})
readonly[shown_metatable] = true
local env_meta = {__index = G, __newindex = refuse, __metatable = shown_metatable}
local env = setmetatable({}, env_meta)
readonly[env] = true

for _, name in ipairs{"assert", "error", "ipairs", "next", "pairs", "pcall",
    "rawequal", "rawget", "select", "tonumber", "tostring", "type", "unpack",
    "xpcall", "getmetatable", "collectgarbage", "gcinfo", "_VERSION"} do
  G[name] = _G[name]
end
G.rawset = function(t, k, v)
  if readonly[t] then error(READONLY, 0) end
  return rawset(t, k, v)
end
G.setmetatable = function(t, mt)
  if readonly[t] then error(READONLY, 0) end
  return setmetatable(t, mt)
end
-- No precompiled chunks (Redis refuses binary code: its bytecode is not
-- verified): a chunk starting with the signature byte does not load.
local BINARY = "\27"
G.loadstring = function(s, name)
  if type(s) == "string" and s:sub(1, 1) == BINARY then return nil end
  local f, err = loadstring(s, name)
  if f then setfenv(f, env) end
  return f, err
end
G.load = function(reader, name)
  local first = true
  local function text_only()
    local piece = reader()
    if first and type(piece) == "string" and piece ~= "" then
      first = false
      if piece:sub(1, 1) == BINARY then error("binary chunks are not allowed", 0) end
    end
    return piece
  end
  local ok, f, err = pcall(load, text_only, name)
  if not ok then return nil end
  if f then setfenv(f, env) end
  return f, err
end
G._G = env
G.string = freeze(string)
G.table = freeze(table)
G.math = freeze(math)
local co_create, co_resume = coroutine.create, coroutine.resume
local hooked_coroutine = {}
for name, fn in pairs(coroutine) do hooked_coroutine[name] = fn end
hooked_coroutine.create = function(f)
  local co = co_create(f)
  if hook_fn then sethook(co, hook_fn, "", hook_count) end
  return co
end
local function pack(...) return {n = select("#", ...), ...} end
hooked_coroutine.wrap = function(f)  -- as Lua 5.1's auxwrap
  local co = hooked_coroutine.create(f)
  return function(...)
    local r = pack(co_resume(co, ...))
    if not r[1] then
      if type(r[2]) == "string" then error(r[2], 2) end
      error(r[2], 0)
    end
    return unpack(r, 2, r.n)
  end
end
G.coroutine = freeze(hooked_coroutine)
G.bit = freeze(bitops)

-- cjson and cmsgpack (lua_libs.py): Python functions, C functions for Lua
-- as in Redis (a tail call keeps the script's frame); their failures get
-- the script's position in the handler, as the C libraries' luaL_error.
local function lib_of(pyfuncs, fields)
  local lib = {}
  for name, f in pairs(pyfuncs) do lib[name] = f end
  for name, v in pairs(fields) do lib[name] = v end
  return lib
end
G.cjson = freeze(lib_of(pycjson, {null = null, _NAME = "cjson", _VERSION = "2.1.0"}))
G.cmsgpack = freeze(lib_of(pycmsgpack, {_NAME = "cmsgpack", _VERSION = "lua-cmsgpack 0.4.0",
  _COPYRIGHT = "Copyright (C) 2012, Salvatore Sanfilippo",
  _DESCRIPTION = "MessagePack C implementation for Lua"}))

-- redis.call / redis.pcall / redis.setresp are Python callables: C
-- functions for Lua, so "return redis.call(...)" keeps the script's frame
-- (and its line in the error), as Redis's C functions do.  Python raises
-- ScriptError for redis.call's errors: the handler turns it into a table.
local redis = {
  call = ccall or pycall,
  pcall = cpcall or pypcall,
  sha1hex = function(s)
    if select('#', s) == 0 or (type(s) ~= "string" and type(s) ~= "number") then
      error("wrong number of arguments", 2)
    end
    return pysha1(tostring(s))
  end,
  error_reply = function(msg)
    if type(msg) ~= "string" then error("ERR wrong number or type of arguments", 2) end
    if msg:sub(1, 1) ~= "-" then msg = "-" .. msg end
    local space = msg:find(" ", 1, true)
    if space then
      msg = msg:sub(2, space - 1) .. " " .. msg:sub(space + 1)
    else
      msg = "ERR " .. msg:sub(2)
    end
    return {err = (msg:gsub("[\r\n]+$", ""))}
  end,
  status_reply = function(msg)
    if type(msg) ~= "string" then error("ERR wrong number or type of arguments", 2) end
    return {ok = msg}
  end,
  log = function(level, ...)
    local n = select('#', ...)
    if n == 0 then error("redis.log() requires two arguments or more.", 2) end
    if type(level) ~= "number" then error("First argument must be a number (log level).", 2) end
    if level < 0 or level > 3 then error("Invalid debug level.", 2) end
    local parts = {}
    for i = 1, n do parts[i] = tostring((select(i, ...))) end
    pylog(level, table.concat(parts, " "))
  end,
  setresp = pysetresp,
  replicate_commands = function() return true end,
  set_repl = function() end,
  breakpoint = function() return false end,
  debug = function() end,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = version, REDIS_VERSION_NUM = version_num,
  REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
}
G.redis = freeze(redis)

-- Redis's __redis__err__handler: an error becomes {err=..., source=...,
-- line=...} pointing at the script's line (the first frame of the
-- script's chunk: calls to redis.call and the hook sit above it).
local function handler(err)
  local info
  for level = 2, 40 do
    local i = getinfo(level, "nSl")
    if i == nil then break end
    if i.source == "@user_script" or i.source == "@user_function" then info = i break end
  end
  if type(err) == "userdata" then
    local lib = pylib_error(err)  -- a cjson/cmsgpack failure
    if lib then
      local where = info and (info.short_src .. ":" .. info.currentline .. ": ") or ""
      err = {err = "ERR " .. where .. lib}
    else
      -- a ScriptError raised by redis.call: its error was counted when
      -- the command answered it (INFO errorstats), not again by the script
      err = {err = pyerror(err), ignore_error_stats_update = true}
    end
  elseif type(err) ~= "table" then
    err = {err = "ERR " .. tostring(err)}
  end
  if info then
    err.source = info.source
    err.line = info.currentline
  end
  return err
end

local function killed()
  -- not in our own code (the error handler, run): only in the script's
  local running = getinfo(2, "S")
  if running == nil or running.source ~= "=sandbox" then
    error({err = "ERR Script killed by user with SCRIPT KILL..."})
  end
end
local function hook()
  if pycheck() then
    -- every instruction from now on: a pcall in the script cannot keep it
    set_hook(killed, 1)
    killed()
  end
end

-- Every compiled script and registered function has a number (its handle:
-- what the C binding's runners take); weak values: the entry goes with
-- the function once Python no longer holds it.
local FN = setmetatable({}, {__mode = "v"})
local last_handle = 0
local function handle_of(f)
  last_handle = last_handle + 1
  FN[last_handle] = f
  return last_handle
end

-- ------------------------------------------------------------ functions
-- redis.register_function, as function_lua.c: the positional form
-- (name, callback) or one table of named arguments (function_name,
-- callback, description, flags; keys case-insensitive).  Errors are
-- Redis's texts, raised as {err=...} (luaPushError).
local FLAGS = {["no-writes"] = 1, ["allow-oom"] = 2, ["allow-stale"] = 4,
               ["no-cluster"] = 8, ["allow-cross-slot-keys"] = 16}
local lower, find = string.lower, string.find
local function fail(msg) error({err = "ERR " .. msg}) end
local function is_string(v) return type(v) == "string" or type(v) == "number" end
local function read_flags(t)
  local flags, j = 0, 1
  while true do
    local v = t[j]
    if v == nil then return flags end
    if not is_string(v) then return nil end
    local bit = FLAGS[lower(tostring(v))]
    if bit == nil then return nil end
    if flags % (2 * bit) < bit then flags = flags + bit end
    j = j + 1
  end
end
local function register_function(...)
  if not loading then
    fail("redis.register_function can only be called on FUNCTION LOAD command")
  end
  local n = select("#", ...)
  if n < 1 or n > 2 then fail("wrong number of arguments to redis.register_function") end
  local name, callback, desc, flags = nil, nil, nil, 0
  if n == 1 then
    local args = ...
    if type(args) ~= "table" then
      fail("calling redis.register_function with a single argument is only applicable "
           .. "to Lua table (representing named arguments).")
    end
    for k, v in pairs(args) do
      if not is_string(k) then
        fail("named argument key given to redis.register_function is not a string")
      end
      local key = lower(tostring(k))
      if key == "function_name" then
        if not is_string(v) then
          fail("function_name argument given to redis.register_function must be a string")
        end
        name = tostring(v)
      elseif key == "description" then
        if not is_string(v) then
          fail("description argument given to redis.register_function must be a string")
        end
        desc = tostring(v)
      elseif key == "callback" then
        if type(v) ~= "function" then
          fail("callback argument given to redis.register_function must be a function")
        end
        callback = v
      elseif key == "flags" then
        if type(v) ~= "table" then
          fail("flags argument to redis.register_function must be a table representing function flags")
        end
        flags = read_flags(v)
        if flags == nil then fail("unknown flag given") end
      else
        fail("unknown argument given to redis.register_function")
      end
    end
    if name == nil then fail("redis.register_function must get a function name argument") end
    if callback == nil then fail("redis.register_function must get a callback argument") end
  else
    local a, b = ...
    if not is_string(a) then fail("first argument to redis.register_function must be a string") end
    if type(b) ~= "function" then fail("second argument to redis.register_function must be a function") end
    name, callback = tostring(a), b
  end
  if name == "" or find(name, "[^%w_]") then
    fail("Library names can only contain letters, numbers, or underscores(_) "
         .. "and must be at least one character long")
  end
  if loading.names[name] then fail("Function already exists in the library") end
  loading.names[name] = true
  local registered = loading.functions
  registered[#registered + 1] = {name, callback, desc or false, flags, handle_of(callback)}
end

-- The library API: globals while a library's body runs.  Its ``redis``
-- answers a missing field as a missing global (register_function's
-- context has no redis.call).
local lib_redis = {register_function = register_function, log = redis.log,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = version, REDIS_VERSION_NUM = version_num}
local lib_redis_proxy = setmetatable({}, {
  __index = function(_, name)
    local v = lib_redis[name]
    if v == nil then nonexistent(name) end
    return v
  end,
  __newindex = refuse, __metatable = false})
readonly[lib_redis_proxy] = true
LIB.redis = lib_redis_proxy

local function load_timeout()
  local running = getinfo(2, "S")
  if running == nil or running.source ~= "=sandbox" then
    error({err = "ERR FUNCTION LOAD timeout"})
  end
end

-- FUNCTION LOAD: compile a library's body and run it with the library
-- API as its globals; ``expired()`` (every HOOK_EVERY instructions) says
-- when its time is up.  Returns the registrations {name, callback,
-- description or false, flags}, or nil and the error text.
local function load_library(body, expired)
  local f, err = loadstring(body, "@user_function")
  if not f then return nil, "Error compiling function: " .. err end
  setfenv(f, env)
  loading = {names = {}, functions = {}}
  env_meta.__index = LIB
  set_hook(function() if expired() then set_hook(load_timeout, 1) load_timeout() end end,
           __HOOK_EVERY__)
  local ok, result = pcall(f)
  set_hook(nil, 0)
  local registered = loading.functions
  loading = nil
  env_meta.__index = G
  if not ok then
    local msg
    if type(result) == "table" and type(result.err) == "string" then
      msg = result.err
    else
      msg = "ERR " .. tostring(result)
    end
    return nil, "Error registering functions: " .. msg
  end
  return registered, false
end

local function compile(body)
  local f, err = loadstring(body, "@user_script")
  if not f then return nil, err end
  setfenv(f, env)
  return f, handle_of(f)
end

-- Keys and arguments come as varargs (nkeys, keys..., args...): cheaper
-- than two tables made by Python (lupa's table_from costs ~6 us each).
-- One table of them all becomes KEYS once the arguments moved out (its
-- length is the count: every item is a string, no nil holes).
local function split(nkeys, ...)
  local keys, argv = {...}, {}
  for i = nkeys + 1, #keys do
    argv[i - nkeys] = keys[i]
    keys[i] = nil
  end
  return keys, argv
end

-- A run's outcome for Python: ok, the result, and for a status or an
-- error table the script returned, its text and "+" / "-" ("!" for an
-- error of redis.call's, counted when it was answered) in place of the
-- table: read here, no crossing back into Lua per field.
local function outcome(ok, result)
  if ok and type(result) == "table" then
    local err = rawget(result, "err")
    if type(err) == "string" then
      if rawget(result, "ignore_error_stats_update") == true then return ok, err, "!" end
      return ok, err, "-"
    end
    local status = rawget(result, "ok")
    if type(status) == "string" then return ok, status, "+" end
  end
  return ok, result, nil
end

-- The hook stays installed between runs (installing it costs more than
-- the script: it asks Python only every HOOK_EVERY instructions); a run
-- that was killed leaves it per instruction, the next run puts it back
-- (both checks inline in run and call_function: a Lua call each cost
-- ~400 instructions a run).  A result that is not a table needs no
-- outcome() look; a string or a number goes back alone (what most
-- scripts return: lupa makes no tuple of three for it), and a status
-- table of "OK" (what ``return redis.call('set', ...)`` returns) as a
-- lone true (never returned alone otherwise: a boolean result comes as
-- the three values).

local function run(f, nkeys, ...)
  local keys, argv = split(nkeys, ...)
  G.KEYS = keys
  G.ARGV = argv
  if hook_fn ~= hook then set_hook(hook, __HOOK_EVERY__) end
  local ok, result = xpcall(f, handler)
  if hook_fn ~= hook then set_hook(nil, 0) end  -- killed: unhooked
  if ok then
    local t = type(result)
    if t == "string" or t == "number" then return result end
    if t ~= "table" then return ok, result, nil end
    if rawget(result, "ok") == "OK" and type(rawget(result, "err")) ~= "string" then
      return true
    end
  end
  return outcome(ok, result)
end

-- FCALL: a registered function gets the keys and the arguments as its
-- two arguments (no KEYS/ARGV globals), through ``invoke`` (xpcall calls
-- a function without arguments; one closure, not one per call).
local current_f, current_keys, current_argv
local function invoke()
  local f, keys, argv = current_f, current_keys, current_argv
  current_f, current_keys, current_argv = nil, nil, nil
  return f(keys, argv)
end
local function call_function(f, nkeys, ...)
  current_f = f
  current_keys, current_argv = split(nkeys, ...)
  if hook_fn ~= hook then set_hook(hook, __HOOK_EVERY__) end
  local ok, result = xpcall(invoke, handler)
  if hook_fn ~= hook then set_hook(nil, 0) end  -- killed: unhooked
  if ok then
    local t = type(result)
    if t == "string" or t == "number" then return result end
    if t ~= "table" then return ok, result, nil end
    if rawget(result, "ok") == "OK" and type(rawget(result, "err")) ~= "string" then
      return true
    end
  end
  return outcome(ok, result)
end

-- Fresh {ok="OK"} tables, made n at a time (redis.call's most common
-- status reply: one crossing into Lua per n instead of one each).
local function status_tables(n, text)
  local made = {}
  for i = 1, n do made[i] = {ok = text} end
  return unpack(made, 1, n)
end

-- The C binding's run (lua_call.c) is run's and call_function's, made in
-- C: it calls FN[handle] under handler with KEYS/ARGV (G's, or a
-- function's two arguments) and reads a string, a number or a status "OK"
-- result itself; anything else it hands to hold() for Python (held()).
-- arm() and disarm(): the hook, as run puts it back and takes it off.
local held_ok, held_result, held_kind
local function hold(ok, result)
  held_ok, held_result, held_kind = outcome(ok, result)
end
local function held()
  local ok, result, kind = held_ok, held_result, held_kind
  held_ok, held_result, held_kind = nil, nil, nil
  return ok, result, kind
end
local function arm() set_hook(hook, __HOOK_EVERY__) end
local function disarm() set_hook(nil, 0) end
if keep then keep(FN, G, handler, hold, arm, disarm, pyreply, __HOOK_EVERY__) end

return compile, run, load_library, call_function, status_tables, held
"""


def _bit_ops(lua: Any) -> Any:
    """LuaBitOp's ``bit`` (Redis embeds it): 32-bit two's complement."""
    def tobit(x: float) -> int:
        n = int(x) & 0xFFFFFFFF
        return n - 0x100000000 if n & 0x80000000 else n

    def fold(op: Callable[[int, int], int]) -> Callable[..., int]:
        def apply(*args: float) -> int:
            acc = tobit(args[0])
            for arg in args[1:]:
                acc = tobit(op(acc, tobit(arg)))
            return acc
        return apply

    def tohex(x: float, n: float = 8) -> bytes:
        digits = int(n)
        value = int(x) & 0xFFFFFFFF
        text = "%08x" % value
        if digits < 0:
            digits, text = -digits, text.upper()
        return text[-min(digits, 8):].encode()

    ops = {
        b"tobit": tobit,
        b"bnot": lambda x: tobit(~tobit(x)),
        b"band": fold(lambda a, b: a & b),
        b"bor": fold(lambda a, b: a | b),
        b"bxor": fold(lambda a, b: a ^ b),
        b"lshift": lambda x, n: tobit((tobit(x) & 0xFFFFFFFF) << (int(n) & 31)),
        b"rshift": lambda x, n: tobit((tobit(x) & 0xFFFFFFFF) >> (int(n) & 31)),
        b"arshift": lambda x, n: tobit(tobit(x) >> (int(n) & 31)),
        b"rol": lambda x, n: tobit(((tobit(x) & 0xFFFFFFFF) << (int(n) & 31))
                                   | ((tobit(x) & 0xFFFFFFFF) >> (32 - (int(n) & 31)))),
        b"ror": lambda x, n: tobit(((tobit(x) & 0xFFFFFFFF) >> (int(n) & 31))
                                   | ((tobit(x) & 0xFFFFFFFF) << (32 - (int(n) & 31)))),
        b"bswap": lambda x: tobit(int.from_bytes(
            (tobit(x) & 0xFFFFFFFF).to_bytes(4, "little"), "big")),
        b"tohex": tohex,
    }
    return lua.table_from(ops)


class Sandbox:
    """One Lua state with the sandbox installed.  ``compile(body)`` returns
    a function or raises ``ScriptCompileError``; ``run(f, keys, argv)``
    returns ``(ok, result)``."""

    def __init__(self, call: Callable[..., Any], pcall: Callable[..., Any],
                 check: Callable[[], bool], log: Callable[[int, bytes], None],
                 sha1: Callable[[bytes], bytes], setresp: Callable[[int], None],
                 command: Callable[[tuple[Any, ...]], bytes],
                 reply: Callable[[bytes], Any]) -> None:
        # Lua sees Python objects (redis.call, a ScriptError caught by a
        # pcall) as userdata: attribute access would reach the host
        # (``f.__globals__``), so only a ScriptError's ``err`` is readable.
        self.lua = lua51.LuaRuntime(encoding=None, unpack_returned_tuples=True,
                                    register_eval=False, register_builtins=False,
                                    attribute_filter=_only_err)
        code = _BOOTSTRAP.replace("__HOOK_EVERY__", str(HOOK_EVERY)).encode()
        chunk = self.lua.eval(b"loadstring")(code, b"=sandbox")
        major, minor, patch = (int(part) for part in REDIS_VERSION.split("."))
        null = self.lua.eval(b"newproxy(false)")  # cjson.null
        cjson = lua_libs.CJson(self.lua, null)
        cmsgpack = lua_libs.CMsgpack(self.lua)
        # The C binding: package.loadlib of lua_call.c's entry gives the
        # bootstrap its redis.call/pcall (``command``, Scripting._command,
        # runs the command; ``reply``, Scripting._reply, converts the replies
        # it leaves to Python) and takes its runners.
        opener = None
        if binding_available():
            opened = self.lua.eval(b"package.loadlib")(_lua_call.__file__.encode(),
                                                       b"trisque_lua_open")
            opener = opened if lua_type(opened) == "function" else None
        (self._compile, self._run, self._load_library, self._call_function,
         self.status_tables, self.held) = chunk(call, pcall, _error_text, check, log, sha1,
                                                 setresp, _bit_ops(self.lua),
                                                 REDIS_VERSION.encode(),
                                                 (major << 16) | (minor << 8) | patch,
                                                 self.lua.table_from(cjson.functions()),
                                                 self.lua.table_from(cmsgpack.functions()),
                                                 null, lua_libs.error_text, opener, reply)
        # run(fcall, handle, numkeys, argv) in C: bytes, an int, a float,
        # True (a status "OK"), or None: read the outcome with held(),
        # (ok, result, kind) as the Lua runners below answer it
        self.binding: Any = _lua_call.Binding(command) if opener is not None else None
        self.rawget = self.lua.eval(b"rawget")  # (lua_convert reads results with it)
        # fresh {ok="OK"} tables, made n at a time by status_tables(n, text)
        # (lua_convert.status_ok: compiled, this class is not)
        self.ok_tables: list[Any] = []
        # The Lua ``run`` and ``call_function``, taking (f, nkeys, keys...,
        # args...) straight (no Python frame between).  Their answer: a
        # string or a number the script returned, alone; else (ok, result,
        # kind), kind b"+" (a status), b"-" (an error) or b"!" (redis.call's
        # error, counted already) with the text as the result in place of
        # the table the script returned, or None (Scripting.run reads it);
        # True alone for a status table of "OK".
        self.lua_run = self._run
        self.lua_call_function = self._call_function
        # Nothing outside the sandbox's upvalues keeps these any more.
        globals_ = self.lua.globals()
        for name in (b"os", b"io", b"debug", b"package", b"require", b"dofile",
                     b"loadfile", b"python", b"module", b"newproxy", b"print"):
            globals_[name] = None

    def compile(self, body: bytes) -> tuple[Any, int]:
        """The script's function and its handle (the C binding's name for it)."""
        f, err = self._compile(body)
        if f is None:
            raise ScriptCompileError(err)
        return f, int(err)

    def load_library(self, body: bytes, expired: Callable[[], bool]) -> list[Any]:
        """Run a library's body (FUNCTION LOAD): its registrations as
        ``(name, (callback, handle), description or None, flags)``; raises
        ``ScriptCompileError`` with Redis's text if it fails."""
        registered, err = self._load_library(body, expired)
        if registered is None:
            raise ScriptCompileError(err)
        out = []
        for i in range(1, len(registered) + 1):
            name, callback, desc, flags, handle = (registered[i][j] for j in (1, 2, 3, 4, 5))
            out.append((name, (callback, int(handle)), None if desc is False else desc,
                        int(flags)))
        return out

    def table(self, items: Any) -> Any:
        return self.lua.table_from(items)



class ScriptError(Exception):
    """Raised by redis.call (and redis.setresp) into the script: the Lua
    error handler makes it ``{err=...}``; a script's own pcall sees it as
    an object whose ``err`` field is the text."""

    def __init__(self, err: bytes) -> None:
        super().__init__(err)
        self.err = err


def _error_text(exc: object) -> bytes:
    if isinstance(exc, ScriptError):
        return exc.err
    return b"ERR " + str(exc).encode("utf-8", "replace")


def _only_err(obj: object, name: Any, setting: bool) -> Any:
    if not setting and isinstance(obj, ScriptError) and name in ("err", b"err"):
        return "err"
    raise AttributeError("not accessible from scripts")


class ScriptCompileError(Exception):
    def __init__(self, message: bytes) -> None:
        super().__init__(message)
        self.message = message


def lua_type(value: object) -> str | None:
    """'table', 'function'... for a Lua object lupa handed back, else None."""
    kind: str | None = lua51.lua_type(value)
    return kind
