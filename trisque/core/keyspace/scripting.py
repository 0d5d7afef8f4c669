"""EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT, as Redis 7.0's eval.c and
script_lua.c: Lua 5.1 scripts that run atomically against the keyspace
(and the jobs).

- A script is compiled once per body (its SHA1 names it; EVAL caches it
  too, SCRIPT LOAD only caches) into a function of the sandbox
  (lua_sandbox.py), and run with ``KEYS`` and ``ARGV`` set.
- ``redis.call`` runs a command through the node's table on the script's
  own client (the caller's db; SELECT inside stays inside; RESP2 unless
  ``redis.setresp(3)``), inside ``Atomic``: nothing waits (blocking
  commands are not allowed, as 7.0; GETJOB acts as NOHANG, ADDJOB as
  ASYNC), and the writes reach the AOF as one MULTI/EXEC block of the
  commands that ran (their effects).  Replies are converted as
  lua_convert.py says.
- The core never awaits, so a script is atomic with respect to every
  other client.  The time limit (``busy-reply-threshold``, alias
  ``lua-time-limit``): every ``HOOK_EVERY`` Lua instructions a hook asks
  ``check``; past the threshold the run is ``busy`` and ``check`` calls
  ``node.on_busy`` (the shell's), which reads the other connections and
  answers them through ``execute_while_busy``: -BUSY, except the few
  commands Redis allows then (SCRIPT KILL, SHUTDOWN NOSAVE, AUTH, HELLO,
  MULTI, DISCARD, WATCH, UNWATCH).  SCRIPT KILL marks the run killed;
  the hook's next call raises the kill error in Lua (and from then on on
  every instruction, so a ``pcall`` cannot keep the script alive).  A
  script that already wrote cannot be killed (-UNKILLABLE): only
  SHUTDOWN NOSAVE ends it, and its torn AOF block is dropped on load.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Final

from ...protocol import resp
from ...protocol.errors import NOREPLICAS, OOM, CommandError, unknown_subcommand
from ..client import Client
from ..command import Commands
from .lua_convert import lua_to_reply, one_line, reply_to_lua, reply_value, to_integer
from .lua_sandbox import Sandbox, ScriptCompileError, ScriptError, lua_type
from .transactions import Atomic

if TYPE_CHECKING:
    from ..node import Node
    from .functions import Functions
    from ..command import Command

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: group generic, the key at argv[1]
key_command = COMMANDS.command

NOSCRIPT = "NOSCRIPT No matching script. Please use EVAL."
BUSY = ("BUSY Redis is busy running a script. You can only call SCRIPT KILL "
        "or SHUTDOWN NOSAVE.")
BUSY_FUNCTION = ("BUSY Redis is busy running a script. You can only call FUNCTION KILL "
                 "or SHUTDOWN NOSAVE.")
NOTBUSY = "NOTBUSY No scripts in execution right now."
UNKILLABLE = ("UNKILLABLE Sorry the script already executed write commands "
              "against the dataset. You can either wait the script termination "
              "or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
# Commands a script may not call (Redis 7.0's noscript flag, and blocking
# commands: a script cannot wait).
NOT_FROM_SCRIPTS: Final = frozenset((
    "AUTH", "HELLO", "CLIENT", "CONFIG", "DEBUG", "MONITOR", "SHUTDOWN", "QUIT",
    "RESET", "MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH", "EVAL", "EVALSHA",
    "EVAL_RO", "EVALSHA_RO", "SCRIPT", "BGREWRITEAOF", "SLOWLOG", "LATENCY",
    "BLPOP", "BRPOP", "BRPOPLPUSH", "BLMOVE", "BLMPOP", "BZPOPMIN", "BZPOPMAX",
    "BZMPOP", "LOADJOB", "SUBSCRIBE", "UNSUBSCRIBE", "PSUBSCRIBE", "PUNSUBSCRIBE",
    "SSUBSCRIBE", "SUNSUBSCRIBE", "FUNCTION", "FCALL", "FCALL_RO",
))
# What other clients may run while a script is past its time limit.
ALLOWED_WHILE_BUSY = frozenset(("AUTH", "HELLO", "MULTI", "DISCARD", "WATCH",
                                "UNWATCH", "QUIT", "RESET"))
LOG_LEVELS = ("debug", "verbose", "notice", "warning")
# Script flags in Redis's order (scripts_flags_def): a function's, or an
# EVAL script's from its shebang (#!lua flags=no-writes,allow-oom).
FLAG_NAMES = (b"no-writes", b"allow-oom", b"allow-stale", b"no-cluster",
              b"allow-cross-slot-keys")
# (Final: compiled code reads them as constants, not from the module's dict)
NO_WRITES: Final = 1
ALLOW_OOM: Final = 2


class ScriptRun:
    """The script running now (``Scripting.running``): an EVAL's, or a
    function's (FCALL: ``function`` set, its name in ``sha``).  An engine
    keeps one and resets it for every run."""

    __slots__ = ("sha", "client", "caller", "start_s", "busy", "killed",
                 "wrote", "readonly", "resp", "function", "allow_oom", "argv")

    def __init__(self, sha: bytes, client: Client, caller: Client, start_s: float,
                 readonly: bool) -> None:
        self.sha = sha
        self.client = client  # the script's own (db, protocol of redis.call)
        self.caller = caller
        self.start_s = start_s
        self.busy = False  # past the time limit: others get -BUSY
        self.killed = False  # SCRIPT KILL (or SHUTDOWN NOSAVE) asked
        self.wrote = False  # ran a write command: SCRIPT KILL refused
        self.readonly = readonly  # EVAL_RO / EVALSHA_RO, FCALL_RO, no-writes
        self.resp = 2  # redis.setresp
        self.function = False  # FCALL: FUNCTION KILL, not SCRIPT KILL
        self.allow_oom = False  # the allow-oom flag: no OOM check in redis.call
        self.argv: list[bytes] = []  # the caller's command (FUNCTION STATS)


class Scripting:
    """``node.scripting``: the Lua state, the script cache, the run."""

    def __init__(self, node: Node) -> None:
        self.node = node
        # sha -> (body, (function, handle): Sandbox.compile, shebang flags or None)
        self.scripts: dict[bytes, tuple[bytes, Any, int | None]] = {}
        self.running: ScriptRun | None = None
        self.sandbox = self._new_sandbox()
        self.lua = self.sandbox  # the Lua state of the script running (tables for its replies)
        self.functions: Functions | None = None  # FUNCTION's libraries (functions.py)
        self.client = Client(0)  # the scripts' own (redis.call runs on it)
        self.client.authenticated = True
        self._atomic = Atomic(node)  # around every run (scripts never nest)
        self._record = ScriptRun(b"", self.client, self.client, 0.0, False)
        # the table's commands by their lower-case names too (scripts
        # mostly call them so: one look-up, no upper())
        self._lower: dict[bytes, Command] = {
            name.lower(): command for name, command in node.table.items()}

    def _new_sandbox(self) -> Sandbox:
        """A Lua state whose redis.call runs on this engine (EVAL's; the
        functions have one of their own, see functions.py)."""
        return Sandbox(self._call, self._pcall, self._check, self._log, _sha1hex,
                       self._setresp, self._command, self._reply)

    def flush(self) -> None:
        """SCRIPT FLUSH: a new Lua state, an empty cache (as Redis)."""
        self.scripts = {}
        self.sandbox = self._new_sandbox()

    def load(self, body: bytes) -> tuple[bytes, Any, int | None]:
        """The script's SHA1, compiled function and shebang flags (None:
        no shebang, Redis's compatibility mode), compiling it if new."""
        sha = _sha1hex(body)
        entry = self.scripts.get(sha)
        if entry is None:
            flags, shebang_len = shebang_flags(body)
            try:
                # (the shebang's newline stays: line numbers are the body's)
                function = self.sandbox.compile(body[shebang_len:])
            except ScriptCompileError as exc:
                raise CommandError("ERR Error compiling script (new function): "
                                   + exc.message.decode("utf-8", "replace")) from None
            entry = self.scripts[sha] = (body, function, flags)
        return sha, entry[1], entry[2]

    # --------------------------------------------------------------- run

    def run(self, caller: Client, sha: bytes, function: Any, numkeys: int,
            argv: list[bytes], readonly: bool, fcall: Sandbox | None = None,
            allow_oom: bool = False) -> bytes:
        """Run the script of an EVAL/EVALSHA request ``argv``, or
        (``fcall``: the functions' sandbox) the registered function named
        ``sha`` an FCALL ``argv`` calls, with the first ``numkeys`` of
        ``argv[3:]`` as its keys, the rest as its arguments."""
        node = self.node
        # One client for every run, as Redis's script client: the caller's
        # db and address, RESP2 until redis.setresp.
        client = self.client
        client.db = caller.db
        client.addr = caller.addr
        client.proto = 2
        if client.out:
            client.out.clear()  # (what a command sent it itself: nobody reads it)
        # One run record, reset for every run (scripts never nest)
        run = self._record
        run.sha = sha
        run.caller = caller
        run.start_s = node.clock()
        run.busy = run.killed = run.wrote = False
        run.readonly = readonly
        run.resp = 2
        run.allow_oom = allow_oom
        run.argv = argv
        if fcall is not None:
            run.function = True
            self.lua = lua = fcall
        else:
            run.function = False
            self.lua = lua = self.sandbox
        self.running = run
        # The script's records form one AOF block, blocking commands
        # answer at once (transactions.Atomic, kept for every run).
        atomic = self._atomic
        atomic.begin()
        try:
            binding = lua.binding
            if binding is not None:
                # the C binding (lua_call.c): a plain result, or None (held)
                out = binding.run(fcall is not None, function[1], numkeys, argv)
                if out is None:
                    out = lua.held()
            else:
                call = lua.lua_run if fcall is None else lua.lua_call_function
                # (one key, with or without one argument, the common calls:
                # no list slice and no tuple made of it)
                f = function[0]
                n = len(argv)
                if n == 4:
                    out = call(f, numkeys, argv[3])
                elif n == 5:
                    out = call(f, numkeys, argv[3], argv[4])
                else:
                    out = call(f, numkeys, *argv[3:])
        finally:
            self.running = None
            # killed although it wrote: SHUTDOWN NOSAVE, drop it on load
            atomic.abandoned = run.killed and run.wrote
            atomic.end()
        # A string or a number the script returned comes alone (the Lua
        # runner's fast path), a status table of "OK" as True, false (the
        # C binding's only) as False; anything else as (ok, result, kind).
        plain = type(out)
        if plain is bytes:
            return _bulk(out)
        if plain is int:
            return b":%d\r\n" % to_integer(out)
        if plain is bool:
            if out:  # a status table of "OK", read in Lua or C
                return b"+OK\r\n"
            return lua_to_reply(False, caller.proto, run.resp, lua.rawget)
        if plain is not tuple:  # (a float)
            return lua_to_reply(out, caller.proto, run.resp, lua.rawget)
        outcome: tuple[bool, Any, Any] = out
        ok, result, kind = outcome
        if kind is not None:  # a status or an error table, read in Lua
            if kind == b"+":
                return b"+%s\r\n" % one_line(result)
            if kind == b"!":  # an error of redis.call/pcall, counted when it was answered
                node.error_counted = True
            return b"-%s\r\n" % one_line(result)  # (no code of its own: sent as is)
        if ok:
            # (an error table it returned was read in Lua: kind above)
            return lua_to_reply(result, caller.proto, run.resp, lua.rawget)
        rawget = lua.rawget
        if lua_type(result) == "table" and rawget(result, b"ignore_error_stats_update") is True:
            # an error of redis.call/pcall, counted when it was answered
            node.error_counted = type(rawget(result, b"err")) is bytes
        return _error_reply(result, sha)

    def _call(self, *argv: Any) -> Any:
        """redis.call: the reply, or a ScriptError raised into the script."""
        return self._reply(self._command(argv))

    def _reply(self, reply: bytes) -> Any:
        """redis.call's reply as a Lua value, or its error raised as a
        ScriptError (also the C binding's, for the replies it leaves to
        Python: arrays, RESP3's, errors)."""
        if reply[0] == 45:  # -
            raise ScriptError(reply[1:-2])
        return reply_value(reply, self.lua)

    def _pcall(self, *argv: Any) -> Any:
        """redis.pcall: errors come back as {err=...}."""
        return reply_to_lua(self._command(argv), self.lua)[1]

    def _command(self, argv: tuple[Any, ...]) -> bytes:
        """Check and run one command of a script; its encoded reply.  A
        refusal is counted here (INFO errorstats, the command's
        rejected_calls), as Redis's scriptCall: the script's own error
        reply, made of it, is not counted again."""
        run = self.running
        assert run is not None
        node = self.node
        refusal = self._refusal(run, argv)
        if isinstance(refusal, bytes):
            node.stats.error_reply(refusal)
            return refusal
        # (typed: compiled code unpacks it and reads Command.write natively)
        command, args = refusal
        if command.write:
            run.wrote = True
        return node.call(run.client, command, args)

    def _refusal(self, run: ScriptRun, argv: tuple[Any, ...]
                 ) -> bytes | tuple[Command, list[bytes]]:
        """The error a script's command gets before running, or the
        command and its arguments."""
        node = self.node
        if not argv:
            return b"-ERR Please specify at least one argument for this redis lib call\r\n"
        args = list(argv)
        for i, arg in enumerate(args):
            if type(arg) is not bytes:
                kind = type(arg)
                if kind is int or kind is float:
                    args[i] = _number_arg(arg)
                else:
                    return b"-ERR Lua redis lib command arguments must be strings or integers\r\n"
        command = self._lower.get(args[0]) or command_of(node, args[0])
        if command is None:
            return b"-ERR Unknown Redis command called from script\r\n"
        refused = _refused(node, run, command, args)
        if refused is not None:
            command.rejected += 1
            return refused
        return command, args

    def _check(self) -> bool:
        """The Lua hook: past the time limit, let the shell answer others
        (-BUSY, SCRIPT KILL); True once the script must die."""
        run = self.running
        if run is None:
            return False
        node = self.node
        if not run.busy:
            limit_ms = node.config.busy_reply_threshold
            if limit_ms <= 0 or (node.clock() - run.start_s) * 1000 < limit_ms:
                return run.killed
            run.busy = True
            self._log(3, b"Slow script detected: still in execution after %d "
                      b"milliseconds. You can try killing the script using the "
                      b"%s command. Script name is: %s."
                      % (int((node.clock() - run.start_s) * 1000),
                         b"FUNCTION KILL" if run.function else b"SCRIPT KILL", run.sha))
        if node.on_busy is not None:
            node.on_busy()
        return run.killed

    def _log(self, level: int, text: bytes) -> None:
        if self.node.on_log is not None:
            self.node.on_log(LOG_LEVELS[level], text.decode("utf-8", "replace"))

    def _setresp(self, version: Any = None) -> None:
        if version not in (2, 3):
            raise ScriptError(b"ERR RESP version must be 2 or 3.")
        run = self.running
        if run is not None:
            run.resp = version
            run.client.proto = version


def info_fields(node: Node) -> list[tuple[str, int]]:
    """INFO memory's script fields (Redis 7.0's names; sizes estimated)."""
    engine: Scripting | None = node.scripting
    if engine is None:
        return [("number_of_cached_scripts", 0), ("used_memory_scripts_eval", 0),
                ("number_of_functions", 0), ("number_of_libraries", 0),
                ("used_memory_functions", 0)]
    eval_memory = sum(40 + 2 * len(entry[0]) for entry in engine.scripts.values())
    functions = engine.functions
    return [("number_of_cached_scripts", len(engine.scripts)),
            ("used_memory_scripts_eval", eval_memory),
            ("number_of_functions", len(functions.functions) if functions else 0),
            ("number_of_libraries", len(functions.libraries) if functions else 0),
            ("used_memory_functions", functions.memory if functions else 0)]


def _refused(node: Node, run: ScriptRun, command: Command, args: list[bytes]) -> bytes | None:
    """Why a script may not run this command now (scriptCall's checks)."""
    arity = command.arity
    if (arity > 0 and len(args) != arity) or len(args) < -arity:
        return b"-ERR Wrong number of args calling Redis command from script\r\n"
    if command.name in NOT_FROM_SCRIPTS or (
            command.name == "CLUSTER" and len(args) > 1 and args[1].upper() == b"RESET"):
        return b"-ERR This Redis command is not allowed from script\r\n"
    write = command.write
    if run.readonly and (write or "may_replicate" in command.flags):
        # (may_replicate too: what CLIENT PAUSE WRITE holds, script.c says)
        return b"-ERR Write commands are not allowed from read-only scripts.\r\n"
    if write:
        if node.config.min_replicas_to_write and node.config.min_replicas_max_lag:
            return resp.error(NOREPLICAS)
        if node.log_failing:  # (node.log is the script's AtomicLog: read the node's)
            return resp.error("MISCONF Errors writing to the AOF file: " + node.log_failing)
    if (command.deny_oom and not run.wrote and not run.allow_oom and node.config.maxmemory
            and node.used_memory >= node.config.maxmemory):
        return resp.error(OOM)
    return None


def _bulk(data: bytes) -> bytes:
    """A bulk reply (typed: compiled, the formatting is mypyc's own)."""
    return b"$%d\r\n%s\r\n" % (len(data), data)


def _sha1hex(data: bytes) -> bytes:
    return hashlib.sha1(data).hexdigest().encode()


def _number_arg(number: Any) -> bytes:
    """A Lua number given to redis.call, as Redis writes it (%.17g)."""
    if type(number) is int:
        return b"%d" % number
    if number == int(number) and abs(number) < 1e17:
        return b"%d" % int(number)
    return b"%.17g" % number


def _error_reply(error: Any, sha: bytes) -> bytes:
    """A script's uncaught error, as Redis 7.0's luaCallFunction words it."""
    message = error[b"err"] if hasattr(error, "keys") else None
    if type(message) is not bytes:
        message = b"ERR unknown error"
    message = message.replace(b"\r", b" ").replace(b"\n", b" ")
    if message[:1] == b"-":
        message = message[1:]
    source, line = error[b"source"], error[b"line"]
    if type(source) is bytes and line is not None:
        return b"-%s script: %s, on %s:%d.\r\n" % (message, sha, source, int(line))
    return b"-%s\r\n" % message


def command_of(node: Node, name: bytes) -> Command | None:
    return node.table.get(name) or node.table.get(name.upper())


def scripting(node: Node) -> Scripting:
    engine: Scripting | None = node.scripting  # (the node holds it untyped)
    if engine is None:
        engine = node.scripting = Scripting(node)
    return engine


# ---------------------------------------------------------- -BUSY, KILL

def execute_while_busy(node: Node, client: Client, argv: list[bytes]) -> None:
    """Another client's request while a script is past its time limit
    (the shell calls this from inside the Lua hook): -BUSY, except
    SCRIPT KILL, SHUTDOWN NOSAVE and the commands Redis allows then."""
    command = command_of(node, argv[0])
    run = node.scripting.running if node.scripting else None
    if command is not None:
        name = command.name
        sub = argv[1].upper() if len(argv) > 1 else b""
        if (name in ALLOWED_WHILE_BUSY
                or (name == "SCRIPT" and sub == b"KILL")
                or (name == "FUNCTION" and sub in (b"KILL", b"STATS"))
                or (name == "SHUTDOWN" and b"NOSAVE" in (a.upper() for a in argv[1:]))):
            if name == "SHUTDOWN" and run is not None:
                run.killed = True  # ends the script even if it wrote
            node.execute(client, argv)
            return
    node._reply_error(client, BUSY_FUNCTION if run is not None and run.function else BUSY,
                      command)


def kill(node: Node, by_script_kill: bool) -> bytes:
    """SCRIPT KILL (``by_script_kill``) or FUNCTION KILL, as script.c's
    scriptKill: each kills only its own kind of script."""
    engine = node.scripting
    run = engine.running if engine is not None else None
    if run is None or not run.busy:
        raise CommandError(NOTBUSY)
    if run.wrote:
        raise CommandError(UNKILLABLE)
    if by_script_kill and run.function:
        raise CommandError(BUSY_FUNCTION)
    if not by_script_kill and not run.function:
        raise CommandError(BUSY)
    run.killed = True
    return resp.OK


# ------------------------------------------------------------- commands

def _numkeys(argv: list[bytes]) -> int:
    text = argv[2]
    try:
        if not text or text.strip() != text:
            raise ValueError
        n = int(text)
    except ValueError:
        raise CommandError("ERR value is not an integer or out of range") from None
    if n < 0:
        raise CommandError("ERR Number of keys can't be negative")
    if n > len(argv) - 3:
        raise CommandError("ERR Number of keys can't be greater than number of args")
    return n


def _eval(node: Node, client: Client, argv: list[bytes], by_sha: bool,
          readonly: bool) -> bytes:
    engine = scripting(node)
    entry = engine.scripts.get(argv[1].lower() if by_sha else _sha1hex(argv[1]))
    if entry is not None:
        flags = entry[2]
    elif by_sha:
        flags = None
    else:
        try:
            flags = shebang_flags(argv[1])[0]
        except CommandError:
            flags = None  # (reported when it is loaded, below)
    if flags is not None:
        check_flags(node, flags, readonly=False)  # what node.execute checks of a command
    n = _numkeys(argv)
    if by_sha:
        if entry is None:
            raise CommandError(NOSCRIPT)
        sha, function = argv[1].lower(), entry[1]
    else:
        sha, function, flags = engine.load(argv[1])
    allow_oom = False
    if flags is not None:
        if readonly and not flags & NO_WRITES:
            raise CommandError(WRITE_FLAG_ON_RO)
        readonly = readonly or bool(flags & NO_WRITES)
        allow_oom = bool(flags & ALLOW_OOM)
    return engine.run(client, sha, function, n, argv, readonly,
                      allow_oom=allow_oom)


WRITE_FLAG_ON_RO: Final = "ERR Can not execute a script with write flag using *_ro command."


def check_flags(node: Node, flags: int, readonly: bool) -> None:
    """A script's flags make its command a write (MISCONF while the AOF
    fails) and denyoom (-OOM at maxmemory) or not (script.c's
    scriptFlagsToCmdFlags, checked as node.execute checks a command)."""
    if (not flags & (NO_WRITES | ALLOW_OOM) and node.config.maxmemory
            and node.used_memory >= node.config.maxmemory):
        raise CommandError(OOM)
    if not flags & NO_WRITES and node.log_failing:
        raise CommandError("MISCONF Errors writing to the AOF file: " + node.log_failing)
    if (not flags & NO_WRITES and node.config.min_replicas_to_write
            and node.config.min_replicas_max_lag):
        raise CommandError(NOREPLICAS)
    if readonly and not flags & NO_WRITES:
        raise CommandError(WRITE_FLAG_ON_RO)


def shebang_flags(body: bytes) -> tuple[int | None, int]:
    """An EVAL script's flags from its ``#!lua flags=...`` line and that
    line's length; (None, 0) without a shebang (eval.c's
    evalExtractShebangFlags, its errors)."""
    if body[:2] != b"#!":
        return None, 0
    nul = body.find(b"\0")
    end = body.find(b"\n", 0, nul if nul >= 0 else len(body))
    if end < 0:
        raise CommandError("ERR Invalid script shebang")
    parts = split_args(body[:end])
    if not parts:
        raise CommandError("ERR Invalid engine in script shebang")
    if parts[0] != b"#!lua":
        raise CommandError("ERR Unexpected engine in script shebang: "
                           + parts[0].decode("utf-8", "replace"))
    flags = 0
    for part in parts[1:]:
        if not part.startswith(b"flags="):
            raise CommandError("ERR Unknown lua shebang option: "
                               + part.decode("utf-8", "replace"))
        names = part[6:].split(b",") if part[6:] else []
        for name in names:
            if name not in FLAG_NAMES:
                raise CommandError("ERR Unexpected flag in script shebang: "
                                   + name.decode("utf-8", "replace"))
            flags |= 1 << FLAG_NAMES.index(name)
    return flags, end


_ESCAPES = {ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t", ord("b"): b"\b",
            ord("a"): b"\a"}
_SPACE = b" \t\n\v\f\r"


def split_args(line: bytes) -> list[bytes] | None:
    """Redis's sdssplitargs: words, "quoted" (with escapes) or 'quoted';
    None if a quote is not closed or is followed by a non-space."""
    out: list[bytes] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in _SPACE:
            i += 1
        if i >= n:
            return out
        word = bytearray()
        in_double = in_single = False
        while True:
            if in_double:
                if i >= n:
                    return None
                c = line[i]
                hexa = b"0123456789abcdefABCDEF"
                if (c == 92 and i + 3 < n and line[i + 1] == 120 and line[i + 2] in hexa
                        and line[i + 3] in hexa):
                    word.append(int(line[i + 2:i + 4], 16))
                    i += 3
                elif c == 92 and i + 1 < n:
                    i += 1
                    word += _ESCAPES.get(line[i], bytes((line[i],)))
                elif c == 34:
                    if i + 1 < n and line[i + 1] not in _SPACE:
                        return None
                    in_double = False
                    i += 1
                    break
                else:
                    word.append(c)
            elif in_single:
                if i >= n:
                    return None
                c = line[i]
                if c == 92 and i + 1 < n and line[i + 1] == 39:
                    i += 1
                    word.append(39)
                elif c == 39:
                    if i + 1 < n and line[i + 1] not in _SPACE:
                        return None
                    in_single = False
                    i += 1
                    break
                else:
                    word.append(c)
            else:
                if i >= n:
                    break
                c = line[i]
                if c in _SPACE:
                    i += 1
                    break
                if c == 34:
                    in_double = True
                elif c == 39:
                    in_single = True
                else:
                    word.append(c)
            i += 1
        out.append(bytes(word))


@key_command("EVAL", -3, "may_replicate", keys=(0, 0, 0))
def eval_(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _eval(node, client, argv, by_sha=False, readonly=False)


@key_command("EVALSHA", -3, "may_replicate", keys=(0, 0, 0))
def evalsha(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _eval(node, client, argv, by_sha=True, readonly=False)


@key_command("EVAL_RO", -3, "readonly", keys=(0, 0, 0))
def eval_ro(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _eval(node, client, argv, by_sha=False, readonly=True)


@key_command("EVALSHA_RO", -3, "readonly", keys=(0, 0, 0))
def evalsha_ro(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _eval(node, client, argv, by_sha=True, readonly=True)


_SCRIPT_ARITY = {b"LOAD": 3, b"EXISTS": -3, b"FLUSH": -2, b"KILL": 2, b"HELP": 2}


@key_command("SCRIPT", -2, "", keys=(0, 0, 0))
def script(node: Node, client: Client, argv: list[bytes]) -> bytes:
    sub = argv[1].upper()
    arity = _SCRIPT_ARITY.get(sub)
    if arity is None:
        raise CommandError(unknown_subcommand(argv[1].decode("utf-8", "replace"), "SCRIPT"))
    if (arity > 0 and len(argv) != arity) or len(argv) < -arity:
        raise CommandError(f"ERR wrong number of arguments for 'script|{sub.decode().lower()}' command")
    engine = scripting(node)
    if sub == b"LOAD":
        sha, _, _ = engine.load(argv[2])
        return resp.bulk(sha)
    if sub == b"EXISTS":
        return b"*%d\r\n" % (len(argv) - 2) + b"".join(
            b":1\r\n" if sha.lower() in engine.scripts else b":0\r\n" for sha in argv[2:])
    if sub == b"FLUSH":
        if len(argv) > 3 or (len(argv) == 3 and argv[2].upper() not in (b"SYNC", b"ASYNC")):
            raise CommandError("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
        if engine.running is not None:
            raise CommandError(BUSY)  # (cannot happen: SCRIPT is not allowed while busy)
        engine.flush()
        return resp.OK
    if sub == b"KILL":
        return kill(node, by_script_kill=True)
    return resp.encode([
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Print this help.",
    ], client.proto)
