"""Redis 7.0's Functions (functions.c, function_lua.c): FUNCTION LOAD,
DELETE, FLUSH, LIST, DUMP, RESTORE, STATS, KILL, HELP; FCALL, FCALL_RO.

- A library is one Lua chunk whose first line names it (``#!lua
  name=mylib``).  FUNCTION LOAD runs its body once, with the library API
  as its only globals (``redis.register_function``, ``redis.log``, the
  version): what it registers (a name, a callback, a description, flags)
  becomes callable by FCALL, by name, case-insensitively, node-wide.
- Loading is all or nothing: a library that does not compile, fails or
  times out (500 ms, ``LOAD_TIMEOUT_S``) while registering, registers
  nothing, or names a function another library has, changes nothing (with
  REPLACE the old library stays).  RESTORE of several libraries likewise.
- The functions run in a Lua state of their own (``Functions.sandbox``;
  SCRIPT FLUSH does not touch it), through the EVAL machinery of
  scripting.py: atomic, their writes one MULTI/EXEC block in the AOF,
  the time limit with -BUSY and FUNCTION KILL.  A function gets the keys
  and the arguments as its two arguments (no KEYS/ARGV globals).
- Flags (script.c): without ``no-writes`` a function is a write command
  (MISCONF while the AOF fails, refused by FCALL_RO) and, without
  ``allow-oom`` either, refused at maxmemory; ``no-writes`` makes every
  write inside it an error; ``allow-oom`` lets its commands grow memory
  past maxmemory.  ``allow-stale``, ``no-cluster`` and
  ``allow-cross-slot-keys`` are accepted and listed: a node is neither a
  replica nor a Redis Cluster node, so they change nothing here.
- Libraries are node state, beside the keys (FLUSHALL keeps them): each
  change is logged to the AOF as the FUNCTION command that made it
  (replayed on load with no time limit), an AOF rewrite writes one
  FUNCTION LOAD per library (``snapshot``), and their estimated size
  counts in ``used_memory``.
- FUNCTION DUMP's payload is Redis's (function_payload.py): a dump moves
  between redis-server and a node either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from ...protocol import aof, resp
from ...protocol.errors import OOM, CommandError, unknown_subcommand
from ..client import Client
from ..command import Commands
from . import function_payload
from .lua_sandbox import Sandbox, ScriptCompileError
from .numbers import parse_ll
from .patterns import match
from .scripting import BUSY, FLAG_NAMES, NO_WRITES, ALLOW_OOM, Scripting, kill, scripting
from .scripting import WRITE_FLAG_ON_RO, check_flags, split_args

if TYPE_CHECKING:
    from ..node import Node

COMMANDS = Commands(keys=(0, 0, 0))
command = COMMANDS.command

LOAD_TIMEOUT_S = 0.5  # a library's body at FUNCTION LOAD (Redis's LOAD_TIMEOUT_MS)
ENGINE = b"LUA"
# Estimated bytes beyond the code: the library's and each function's
# objects and dict slots, the compiled chunk (about twice the source).
LIBRARY_OVERHEAD = 600
FUNCTION_OVERHEAD = 300
COMPILED_PER_CODE_BYTE = 2
BAD_NAME = ("ERR Library names can only contain letters, numbers, or underscores(_) "
            "and must be at least one character long")


class Function:
    __slots__ = ("name", "callback", "description", "flags", "library_name")

    def __init__(self, name: bytes, callback: Any, description: bytes | None,
                 flags: int, library: Library) -> None:
        self.name = name
        self.callback = callback  # (the Lua function, its handle: Sandbox.compile)
        self.description = description
        self.flags = flags  # FLAG_NAMES bits
        # its library's name, not the library: a pointer back would make a
        # reference cycle, which the node's collector never looks for in
        # old objects (shell/collector.py)
        self.library_name = library.name


class Library:
    __slots__ = ("name", "code", "functions", "memory")

    def __init__(self, name: bytes, code: bytes) -> None:
        self.name = name
        self.code = code  # the whole payload, shebang included (LIST WITHCODE, DUMP)
        self.functions: dict[bytes, Function] = {}  # by name as registered
        self.memory = (LIBRARY_OVERHEAD + len(name) + len(code) * (1 + COMPILED_PER_CODE_BYTE))

    def add(self, function: Function) -> None:
        self.functions[function.name] = function
        self.memory += FUNCTION_OVERHEAD + len(function.name) + len(function.description or b"")


class Functions:
    """The node's libraries (``scripting(node).functions``)."""

    def __init__(self, node: Node, engine: Scripting) -> None:
        self.node = node
        self.sandbox: Sandbox = engine._new_sandbox()  # a Lua state of their own
        self.libraries: dict[bytes, Library] = {}  # by name, case-sensitive
        self.functions: dict[bytes, Function] = {}  # by lower-case name
        self.memory = 0

    # ------------------------------------------------------------ creating

    def parse(self, code: bytes) -> tuple[bytes, bytes]:
        """The library's name and its body (from the shebang's newline on,
        so line numbers stay), or Redis's error (functionExtractLibMetaData)."""
        if code[:2] != b"#!":
            raise CommandError("ERR Missing library metadata")
        # (C strings: the shebang's newline must come before any NUL)
        nul = code.find(b"\0")
        end = code.find(b"\n", 0, nul if nul >= 0 else len(code))
        if end < 0:
            raise CommandError("ERR Invalid library metadata")
        parts = split_args(code[:end])
        if not parts:
            raise CommandError("ERR Invalid library metadata")
        engine = parts[0][2:]
        name = None
        for part in parts[1:]:
            if part[:5].lower() == b"name=":
                if name is not None:
                    raise CommandError("ERR Invalid metadata value, name argument was "
                                       "given multiple times")
                name = part[5:]
                continue
            raise CommandError("ERR Invalid metadata value given: "
                               + part.decode("utf-8", "replace"))
        if name is None:
            raise CommandError("ERR Library name was not given")
        if not valid_name(name):
            raise CommandError(BAD_NAME)
        if engine.upper() != ENGINE:
            raise CommandError("ERR Engine '%s' not found" % engine.decode("utf-8", "replace"))
        return name, code[end:]

    def instantiate(self, name: bytes, code: bytes, body: bytes, timeout_s: float) -> Library:
        """Run the library's body: a Library not linked yet, or Redis's error."""
        if timeout_s > 0:
            clock = self.node.clock
            deadline = clock() + timeout_s

            def expired() -> bool:
                return clock() > deadline
        else:
            def expired() -> bool:
                return False
        try:
            registered = self.sandbox.load_library(body, expired)
        except ScriptCompileError as exc:
            raise CommandError("ERR " + exc.message.decode("utf-8", "replace")) from None
        if not registered:
            raise CommandError("ERR No functions registered")
        library = Library(name, code)
        for fname, callback, description, flags in registered:
            library.add(Function(fname, callback, description, flags, library))
        return library

    def load(self, code: bytes, replace: bool, timeout_s: float) -> bytes:
        """FUNCTION LOAD: the library's name once it is linked."""
        name, body = self.parse(code)
        old = self.libraries.get(name)
        if old is not None and not replace:
            raise CommandError("ERR Library '%s' already exists" % name.decode("utf-8", "replace"))
        library = self.instantiate(name, code, body, timeout_s)
        for function in library.functions.values():
            other = self.functions.get(function.name.lower())
            if other is not None and (old is None or other.library_name != old.name):
                raise CommandError("ERR Function %s already exists"
                                   % function.name.decode("utf-8", "replace"))
        if old is not None:
            self._unlink(old)
        self._link(library)
        return name

    def restore(self, payload: bytes, policy: bytes) -> None:
        """FUNCTION RESTORE: the payload's libraries, all or none."""
        try:
            function_payload.verify(payload)
            codes = function_payload.load(payload)
        except function_payload.PayloadError as exc:
            raise CommandError(exc.message) from None
        new: dict[bytes, Library] = {}
        new_functions: set[bytes] = set()
        for code in codes:
            name, body = self.parse(code)
            if name in new:
                raise CommandError("ERR Library '%s' already exists"
                                   % name.decode("utf-8", "replace"))
            library = self.instantiate(name, code, body, 0)
            for function in library.functions.values():
                if function.name.lower() in new_functions:
                    raise CommandError("ERR Function %s already exists"
                                       % function.name.decode("utf-8", "replace"))
            new_functions.update(f.name.lower() for f in library.functions.values())
            new[name] = library
        if policy == b"FLUSH":
            self.flush()
        else:
            replaced = set()
            for name in new:
                if name in self.libraries:
                    if policy != b"REPLACE":
                        raise CommandError("ERR Library %s already exists"
                                           % name.decode("utf-8", "replace"))
                    replaced.add(name)
            for library in new.values():
                for function in library.functions.values():
                    other = self.functions.get(function.name.lower())
                    if other is not None and other.library_name not in replaced:
                        raise CommandError("ERR Function %s already exists"
                                           % function.name.decode("utf-8", "replace"))
            for name in replaced:
                self._unlink(self.libraries[name])
        for library in new.values():
            self._link(library)

    # ------------------------------------------------------------- linking

    def _link(self, library: Library) -> None:
        self.libraries[library.name] = library
        for function in library.functions.values():
            self.functions.setdefault(function.name.lower(), function)
        self._grow(library.memory)

    def _unlink(self, library: Library) -> None:
        del self.libraries[library.name]
        for function in library.functions.values():
            if self.functions.get(function.name.lower()) is function:
                del self.functions[function.name.lower()]
        self._grow(-library.memory)

    def delete(self, name: bytes) -> None:
        library = self.libraries.get(name)
        if library is None:
            raise CommandError("ERR Library not found")
        self._unlink(library)

    def flush(self) -> None:
        self.libraries = {}
        self.functions = {}
        self._grow(-self.memory)

    def _grow(self, delta: int) -> None:
        self.memory += delta
        self.node.memory_changed(delta)

    # ----------------------------------------------------------------- AOF

    def log(self, *argv: bytes) -> None:
        """A change, logged as the command that replays it (not while the
        AOF itself is replayed)."""
        if not self.node.keyspace.replaying:
            self.node.log.append_command(b"FUNCTION", *argv)

    def snapshot(self) -> Iterator[bytes]:
        """An AOF rewrite's records: one FUNCTION LOAD per library."""
        codes = [library.code for library in self.libraries.values()]
        return iter([b"".join(aof.command(b"FUNCTION", b"LOAD", code) for code in codes)]
                    if codes else [])


def functions(node: Node) -> Functions:
    engine = scripting(node)
    if engine.functions is None:
        engine.functions = Functions(node, engine)
    return engine.functions


def valid_name(name: bytes) -> bool:
    """Letters, digits and underscores, at least one (functionsVerifyName)."""
    return bool(name) and all(
        48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c == 95 for c in name)


# ------------------------------------------------------------- commands

_ARITY = {b"LOAD": -3, b"DELETE": 3, b"FLUSH": -2, b"LIST": -2, b"DUMP": 2,
          b"RESTORE": -3, b"STATS": 2, b"KILL": 2, b"HELP": 2}

HELP = [
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored "
    "using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a "
    "restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, "
    "replace the old",
    "      libraries with the new libraries (notice that even on this option there is a "
    "chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
]


def _syntax_error(sub: bytes) -> CommandError:
    return CommandError("ERR unknown subcommand or wrong number of arguments for '%s'. "
                        "Try FUNCTION HELP." % sub.decode("utf-8", "replace"))


def _deny_oom(node: Node) -> None:
    if node.config.maxmemory and node.used_memory >= node.config.maxmemory:
        raise CommandError(OOM)


@command("FUNCTION", -2, "", "Manage the Lua function libraries (FCALL's)",
         "LOAD|DELETE|FLUSH|LIST|DUMP|RESTORE|STATS|KILL|HELP [arguments]")
def function_(node: Node, client: Client, argv: list[bytes]) -> bytes:
    sub = argv[1].upper()
    arity = _ARITY.get(sub)
    if arity is None:
        raise CommandError(unknown_subcommand(argv[1].decode("utf-8", "replace"), "FUNCTION"))
    if (arity > 0 and len(argv) != arity) or len(argv) < -arity:
        raise CommandError("ERR wrong number of arguments for 'function|%s' command"
                           % sub.decode().lower())
    lib = functions(node)
    if sub == b"LOAD":
        _deny_oom(node)
        replace = False
        for option in argv[2:-1]:
            if option.upper() != b"REPLACE":
                raise CommandError("ERR Unknown option given: "
                                   + option.decode("utf-8", "replace"))
            replace = True
        replaying = node.keyspace.replaying  # the AOF's records run to the end
        name = lib.load(argv[-1], replace, 0 if replaying else LOAD_TIMEOUT_S)
        lib.log(*argv[1:])
        return resp.bulk(name)
    if sub == b"DELETE":
        lib.delete(argv[2])
        lib.log(b"DELETE", argv[2])
        return resp.OK
    if sub == b"FLUSH":
        if len(argv) > 3:
            raise _syntax_error(argv[1])
        if len(argv) == 3 and argv[2].upper() not in (b"SYNC", b"ASYNC"):
            raise CommandError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
        lib.flush()
        lib.log(b"FLUSH")
        return resp.OK
    if sub == b"LIST":
        return _list(lib, argv, client.proto)
    if sub == b"DUMP":
        return resp.bulk(function_payload.dump([li.code for li in lib.libraries.values()]))
    if sub == b"RESTORE":
        if len(argv) > 4:
            raise _syntax_error(argv[1])
        policy = argv[3].upper() if len(argv) == 4 else b"APPEND"
        if policy not in (b"FLUSH", b"APPEND", b"REPLACE"):
            raise CommandError("ERR Wrong restore policy given, value should be either "
                               "FLUSH, APPEND or REPLACE.")
        _deny_oom(node)
        lib.restore(argv[2], policy)
        lib.log(*argv[1:])
        return resp.OK
    if sub == b"STATS":
        return _stats(node, lib, client.proto)
    if sub == b"KILL":
        return kill(node, by_script_kill=False)
    return resp.encode([resp.Status(line) for line in HELP], client.proto)


def _list(lib: Functions, argv: list[bytes], proto: int) -> bytes:
    with_code = False
    pattern = None
    i = 2
    while i < len(argv):
        arg = argv[i]
        upper = arg.upper()
        if not with_code and upper == b"WITHCODE":
            with_code = True
        elif pattern is None and upper == b"LIBRARYNAME":
            if i >= len(argv) - 1:
                raise CommandError("ERR library name argument was not given")
            i += 1
            pattern = argv[i]
        else:
            raise CommandError("ERR Unknown argument " + arg.decode("utf-8", "replace"))
        i += 1
    null = resp.null(proto)
    out = []
    for library in lib.libraries.values():
        # (Redis matches library names ignoring case)
        if pattern is not None and not match(pattern.lower(), library.name.lower()):
            continue
        part = [b"%%%d\r\n" % (4 if with_code else 3) if proto == 3
                else b"*%d\r\n" % (8 if with_code else 6),
                resp.bulk(b"library_name"), resp.bulk(library.name),
                resp.bulk(b"engine"), resp.bulk(ENGINE),
                resp.bulk(b"functions"), b"*%d\r\n" % len(library.functions)]
        for function in library.functions.values():
            flags = [name for bit, name in enumerate(FLAG_NAMES) if function.flags & (1 << bit)]
            part += [b"%3\r\n" if proto == 3 else b"*6\r\n",
                     resp.bulk(b"name"), resp.bulk(function.name),
                     resp.bulk(b"description"),
                     resp.bulk(function.description) if function.description is not None
                     else null,
                     resp.bulk(b"flags"),
                     (b"~%d\r\n" if proto == 3 else b"*%d\r\n") % len(flags)]
            part += [b"+%s\r\n" % name for name in flags]
        if with_code:
            part += [resp.bulk(b"library_code"), resp.bulk(library.code)]
        out.append(b"".join(part))
    return b"*%d\r\n" % len(out) + b"".join(out)


def _stats(node: Node, lib: Functions, proto: int) -> bytes:
    run = node.scripting.running if node.scripting is not None else None
    if run is not None and not run.function:
        raise CommandError(BUSY)
    if run is None:
        running: Any = None
    else:
        running = {"name": run.sha, "command": list(run.argv),
                   "duration_ms": int((node.clock() - run.start_s) * 1000)}
    return resp.encode({
        "running_script": running,
        "engines": {"LUA": {"libraries_count": len(lib.libraries),
                            "functions_count": len(lib.functions)}},
    }, proto)


def _fcall(node: Node, client: Client, argv: list[bytes], readonly: bool) -> bytes:
    lib = functions(node)
    name = argv[1]
    # (names are kept lower-case: most calls name one so, no lower() then)
    function = lib.functions.get(name) or lib.functions.get(name.lower())
    if function is not None:
        # the flags make FCALL a write / denyoom command or not (script.c's
        # scriptFlagsToCmdFlags), checked as node.execute checks a command's
        flags = function.flags
        check_flags(node, flags, readonly=False)
    else:
        raise CommandError("ERR Function not found")
    numkeys = parse_ll(argv[2])
    if numkeys is None:
        raise CommandError("ERR Bad number of keys provided")
    if numkeys > len(argv) - 3:
        raise CommandError("ERR Number of keys can't be greater than number of args")
    if numkeys < 0:
        raise CommandError("ERR Number of keys can't be negative")
    if not flags & NO_WRITES and readonly:
        raise CommandError(WRITE_FLAG_ON_RO)
    engine = scripting(node)
    return engine.run(client, function.name, function.callback, numkeys, argv,
                      readonly or bool(flags & NO_WRITES), fcall=lib.sandbox,
                      allow_oom=bool(flags & ALLOW_OOM))


@command("FCALL", -3, "may_replicate", "Invoke a function", "function numkeys [key ...] [arg ...]")
def fcall(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _fcall(node, client, argv, readonly=False)


@command("FCALL_RO", -3, "readonly", "Invoke a read-only function",
         "function numkeys [key ...] [arg ...]")
def fcall_ro(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _fcall(node, client, argv, readonly=True)
