"""Connection and server commands: PING, ECHO, QUIT, TIME, AUTH, HELLO, INFO,
COMMAND, CLIENT, CONFIG, DEBUG, SLOWLOG, LATENCY, MONITOR, SHUTDOWN."""

from __future__ import annotations

import gc
import hmac
import os
import time
from typing import TYPE_CHECKING

from ...protocol import errors, resp
from ...protocol.args import to_int, upper
from ...protocol.errors import CommandError

from . import auth_failure, client_pause
from .client_pause import HeldCommand
from . import info as info_module
from ..client import REPLY_OFF, REPLY_ON, REPLY_SKIP, BlockedGet
from .config import ConfigError
from ..keyspace.transactions import unwatch_all
from .version import VERSION
from ..command import Command, Commands, unique_commands
from ..command_keys import NO_MANDATORY_KEYS, key_positions

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands("server")  # and the connection's (group="connection")
command = COMMANDS.command


@command("PING", -1, "readonly fast",  # -LOADING while loading, as Disque
         "Ping the server", "[message]", group="connection")
def ping(node: Node, client: Client, argv: list[bytes]) -> bytes:
    if len(argv) > 2:
        raise CommandError(errors.wrong_arity("ping"))
    if client.pubsub is not None and client.proto == 2:
        # subscribed mode: a push-shaped ["pong", message] (Redis 7.0)
        return b"*2\r\n$4\r\npong\r\n" + resp.bulk(argv[1] if len(argv) == 2 else b"")
    if len(argv) == 2:
        return resp.bulk(argv[1])
    return resp.PONG


@command("ECHO", 2, "readonly fast",
         "Echo the given string", "message", group="connection")
def echo(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return resp.bulk(argv[1])


@command("QUIT", -1, "readonly fast loading noauth",
         "Close the connection", group="connection")
def quit_(node: Node, client: Client, argv: list[bytes]) -> bytes:
    client.close_after_reply = True
    return resp.OK


@command("RESET", 1, "noscript loading stale fast noauth",
         "Reset the connection: no transaction, watched keys, subscriptions, "
         "MONITOR, name; database 0, RESP2, CLIENT REPLY ON, authenticated "
         "again only without a password", group="connection")
def reset(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """Redis 7.0's clearClientConnectionState."""
    if client.monitor:
        node.monitors.remove(client)
        client.monitor = False
    client.db = 0
    client.proto = 2
    client.authenticated = not node.config.requirepass
    client.multi = None
    if client.watch is not None:
        unwatch_all(client)
    node.pubsub.drop(client)
    client.name = ""
    client.reply_mode = REPLY_ON
    return b"+RESET\r\n"


@command("TIME", 1, "readonly fast", "The server time")
def time_(node: Node, client: Client, argv: list[bytes]) -> bytes:
    now = node.clock()
    seconds = int(now)
    return resp.encode([str(seconds), str(int((now - seconds) * 1000000))])


WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."


def _password_ok(node: Node, password: bytes) -> bool:
    """Constant time: the comparison says nothing of how much matched."""
    if not node.config.requirepass:
        raise CommandError("ERR Client sent AUTH, but no password is set")
    return hmac.compare_digest(password, node.config.requirepass.encode())


@command("AUTH", -2, "readonly fast loading noauth",
         "Authenticate to the server", "[username] password", group="connection")
def auth(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    # AUTH password, or AUTH default password (Redis 6 form)
    password = argv[-1]
    # Disque's text for AUTH password; Redis 6's for AUTH user password.
    wrong = "ERR invalid password" if len(argv) == 2 else WRONGPASS
    if len(argv) == 3 and argv[1] != b"default":
        ok = False  # (no other user exists; with a password, compare anyway)
        if node.config.requirepass:
            _password_ok(node, password)
    else:
        ok = _password_ok(node, password)
    if not ok:
        client.authenticated = not node.config.requirepass
        auth_failure.refuse(node, client, wrong)
        return None  # (answered after the delay)
    client.authenticated = True
    return resp.OK


@command("HELLO", -1, "readonly fast loading noauth",
         "Without arguments: this node and the nodes it knows; "
         "with a protocol version: switch to RESP2 or RESP3",
         "[protover [AUTH username password] [SETNAME clientname]]", group="connection")
def hello(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    """Bare HELLO is Disque's: [1, myid, [id, ip, port, priority]...].
    HELLO protover [AUTH user pass] [SETNAME name] is Redis's handshake."""
    if len(argv) == 1:
        if not client.authenticated:
            raise CommandError(errors.NOAUTH)
        return resp.encode([1, node.id] + node.cluster.hello_nodes(), client.disque_proto())
    try:
        proto = to_int(argv[1])
    except CommandError:
        raise CommandError("ERR Protocol version is not an integer or out of range") from None
    if proto not in (2, 3):
        raise CommandError("NOPROTO unsupported protocol version")
    i = 2
    name = None
    while i < len(argv):
        opt = argv[i].upper()
        if opt == b"AUTH" and i + 2 < len(argv):
            ok = (argv[i + 1] == b"default") & _password_ok(node, argv[i + 2])
            if not ok:
                auth_failure.refuse(node, client, WRONGPASS)
                return None  # (answered after the delay)
            client.authenticated = True
            i += 3
        elif opt == b"SETNAME" and i + 1 < len(argv):
            name = _valid_name(argv[i + 1])
            i += 2
        else:
            raise CommandError(f"ERR Syntax error in HELLO option '{argv[i].decode(errors='replace')}'")
    if not client.authenticated:
        raise CommandError(errors.NOAUTH)
    if name is not None:
        client.name = name
    client.proto = proto
    return resp.encode({
        "server": "disque",
        "version": VERSION,
        "proto": proto,
        "id": client.id,
        "mode": "cluster" if node.cluster_size > 1 else "standalone",
        "role": "master",
        "modules": [],
    }, proto)


def _valid_name(arg: bytes) -> str:
    name = arg.decode("utf-8", "replace")
    if any(ch <= " " or ch > "~" for ch in name):
        raise CommandError("ERR Client names cannot contain spaces, newlines or special characters.")
    return name


@command("INFO", -1, "readonly loading",
         "Information and statistics about the node", "[section ...]")
def info(node: Node, client: Client, argv: list[bytes]) -> bytes:
    sections = [arg.decode("utf-8", "replace").lower() for arg in argv[1:]]
    # Disque's sections, so Disque's bulk (Redis 7's verbatim string only
    # after CLIENT DISQUE-RESP3 ON).
    return resp.encode(resp.Verbatim(info_module.render(node, sections)), client.disque_proto())


@command("COMMAND", -1, "readonly loading",
         "Details about the commands", "[COUNT|INFO|DOCS|LIST] [command ...]")
def command_(node: Node, client: Client, argv: list[bytes]) -> bytes:
    commands = unique_commands(node.table)
    if len(argv) == 1:
        return resp.encode([_command_info(c) for c in commands], client.proto)
    sub = upper(argv[1])
    if sub == "COUNT":
        return resp.integer(len(commands))
    if sub == "INFO":
        wanted = [a.upper() for a in argv[2:]]  # in the order asked
        by_name = {c.name.encode(): c for c in commands}
        return resp.encode([_command_info(by_name[n]) if n in by_name else None
                            for n in wanted] if wanted else
                           [_command_info(c) for c in commands], client.proto)
    if sub == "DOCS":
        names = {a.upper() for a in argv[2:]}
        docs: dict[str, dict[str, object]] = {}
        for c in commands:
            if not names or c.name.encode() in names:
                entry: dict[str, object] = {"summary": c.summary, "since": "1.0.0",
                                            "group": c.group}
                if c.syntax:  # one argument named by the whole line: redis-cli prints it as is
                    entry["arguments"] = [{"name": c.syntax, "type": "string"}]
                docs[c.lname] = entry
        return resp.encode(docs, client.proto)
    if sub == "LIST":
        return resp.encode([c.lname for c in commands], client.proto)
    if sub == "GETKEYS":
        if len(argv) < 4:  # (command|getkeys: arity -4 in Redis 7.0)
            raise CommandError(errors.wrong_arity("command|getkeys"))
        return _getkeys(node, argv[2:], client.proto)
    raise CommandError("ERR Unknown subcommand or wrong number of arguments.")


def _getkeys(node: Node, request: list[bytes], proto: int) -> bytes:
    """COMMAND GETKEYS command arg...: the request's keys, Redis 7.0's errors."""
    command = node.table.get(request[0].upper())
    if command is None:
        raise CommandError("ERR Invalid command specified")
    positions = key_positions(command, request)
    if positions is None:
        raise CommandError("ERR The command has no key arguments")
    arity = command.arity
    if (arity > 0 and len(request) != arity) or len(request) < -arity:
        raise CommandError("ERR Invalid number of arguments specified for command")
    if not positions and command.name not in NO_MANDATORY_KEYS:
        raise CommandError("ERR Invalid arguments specified for command")
    return resp.encode([request[i] for i in positions], proto)


def _command_info(c: Command) -> list[object]:
    """Redis 7's ten fields (Disque gave the first six; RESP3 clients such
    as redis-py expect the ACL categories too)."""
    categories = ["@" + f for f in c.flags if f in ("write", "read", "fast", "admin")]
    if "readonly" in c.flags:
        categories.append("@read")
    return [c.lname, c.arity, [resp.Status(f) for f in c.flags],
            c.first_key, c.last_key, c.key_step,
            [resp.Status(cat) for cat in categories], [], [], []]


@command("CLIENT", -2, "admin readonly loading",  # client libraries send CLIENT SETINFO on connect
         "Manage client connections",
         "LIST|ID|INFO|KILL|SETNAME|GETNAME|SETINFO|REPLY|PAUSE|UNPAUSE|DISQUE-RESP3 [arguments]",
         group="connection")
def client_(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    sub = upper(argv[1])
    if sub == "ID" and len(argv) == 2:
        return resp.integer(client.id)
    if sub == "GETNAME" and len(argv) == 2:
        return resp.bulk(client.name) if client.name else resp.null(client.proto)
    if sub == "SETNAME" and len(argv) == 3:
        client.name = _valid_name(argv[2])
        return resp.OK
    if sub == "SETINFO" and len(argv) == 4:
        attr = upper(argv[2])
        if attr == "LIB-NAME":
            client.lib_name = _valid_name(argv[3])
        elif attr == "LIB-VER":
            client.lib_ver = _valid_name(argv[3])
        else:
            raise CommandError(f"ERR Unrecognized option '{argv[2].decode(errors='replace')}'")
        return resp.OK
    if sub == "DISQUE-RESP3" and len(argv) == 3:  # client.py says why
        mode = upper(argv[2])
        if mode not in ("ON", "OFF"):
            raise CommandError(errors.SYNTAX)
        client.disque_resp3 = mode == "ON"
        return resp.OK
    if sub == "MAINT_NOTIFICATIONS":
        return resp.OK  # redis-py 8 asks; we have no maintenance events
    if sub == "LIST":
        now_ms = node.now_ms()
        lines = "".join(_client_line(c, now_ms) + "\n" for c in node.clients.values())
        return resp.encode(resp.Verbatim(lines), client.proto)
    if sub == "INFO" and len(argv) == 2:
        return resp.encode(resp.Verbatim(_client_line(client, node.now_ms()) + "\n"), client.proto)
    if sub == "REPLY" and len(argv) == 3:
        mode = upper(argv[2])
        if mode == "ON":
            client.reply_mode = REPLY_ON
            return resp.OK
        if mode == "OFF":
            client.reply_mode = REPLY_OFF
            return None
        if mode == "SKIP":
            client.reply_mode = REPLY_SKIP
            return None
        raise CommandError(errors.SYNTAX)
    if sub == "KILL" and len(argv) >= 3:
        return _client_kill(node, client, argv)
    if sub == "UNBLOCK" and len(argv) in (3, 4):
        return _client_unblock(node, argv)
    if sub == "PAUSE":
        if len(argv) < 3:
            raise CommandError(errors.wrong_arity("client|pause"))
        if len(argv) > 4:  # (the subcommand's arity is -3: clientCommand says so)
            raise CommandError("ERR unknown subcommand or wrong number of arguments for '"
                               + argv[1].decode("utf-8", "replace") + "'. Try CLIENT HELP.")
        return client_pause.client_pause(node, argv)
    if sub == "UNPAUSE":
        if len(argv) != 2:
            raise CommandError(errors.wrong_arity("client|unpause"))
        return client_pause.client_unpause(node)
    raise CommandError("ERR Syntax error, try CLIENT (LIST | KILL ip:port | GETNAME | SETNAME connection-name)")


def _client_unblock(node: Node, argv: list[bytes]) -> bytes:
    """CLIENT UNBLOCK id [TIMEOUT|ERROR]: a blocked client (GETJOB,
    BLPOP...) answers now, as if timed out or with Redis's -UNBLOCKED."""
    client_id = to_int(argv[2], errors.NOT_INTEGER)
    reason = upper(argv[3]) if len(argv) == 4 else "TIMEOUT"
    if reason not in ("TIMEOUT", "ERROR"):
        raise CommandError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
    target = node.clients.get(client_id)
    if target is None or target.blocked is None or type(target.blocked) is HeldCommand:
        return resp.ZERO  # (a client held by CLIENT PAUSE waits for its end)
    if reason == "ERROR":
        node.unblock(target)
        node.reply(target, resp.error("UNBLOCKED client unblocked via CLIENT UNBLOCK"))
    else:
        node.blocked_timeout(target)
    return resp.ONE


def _client_line(c: Client, now_ms: int) -> str:
    flags = "b" if c.blocked is not None else ("O" if c.monitor else "")
    subs = c.pubsub
    if subs is not None:
        flags += "P"
    flags = flags or "N"
    fd = getattr(c.transport, "fd", -1)  # -1: no socket (Redis's for its fake clients)
    sub, psub, ssub = ((len(subs.channels), len(subs.patterns), len(subs.shard))
                       if subs is not None else (0, 0, 0))
    return (f"id={c.id} addr={c.addr} laddr={c.laddr} fd={fd} name={c.name} "
            f"age={(now_ms - c.ctime_ms) // 1000} idle={(now_ms - c.last_ms) // 1000} "
            f"flags={flags} db={c.db} sub={sub} psub={psub} ssub={ssub} multi=-1 "
            f"qbuf=0 qbuf-free=0 obl=0 "
            f"oll={len(c.out)} omem=0 events=r cmd={c.last_cmd} "
            f"lib-name={c.lib_name} lib-ver={c.lib_ver} resp={c.proto}")


def _client_kill(node: Node, client: Client, argv: list[bytes]) -> bytes:
    if len(argv) == 3:  # old form: CLIENT KILL addr
        addr = argv[2].decode(errors="replace")
        for c in list(node.clients.values()):
            if c.addr == addr:
                _kill(node, c)
                return resp.OK
        raise CommandError("ERR No such client")
    filters = argv[2:]
    if len(filters) % 2:
        raise CommandError(errors.SYNTAX)
    skipme = True
    matches = list(node.clients.values())
    for key, value in zip(filters[::2], filters[1::2]):
        key = key.upper()
        text = value.decode(errors="replace")
        if key == b"ID":
            wanted = to_int(value)
            matches = [c for c in matches if c.id == wanted]
        elif key == b"ADDR":
            matches = [c for c in matches if c.addr == text]
        elif key == b"LADDR":
            matches = [c for c in matches if c.laddr == text]
        elif key == b"SKIPME":
            if value.lower() not in (b"yes", b"no"):
                raise CommandError(errors.SYNTAX)
            skipme = value.lower() == b"yes"
        elif key == b"TYPE":
            if value.lower() not in (b"normal", b"master", b"slave", b"replica", b"pubsub"):
                raise CommandError(f"ERR Unknown client type '{text}'")
            # Redis's client types: subscribed clients are pubsub, not normal
            kind = value.lower()
            if kind == b"pubsub":
                matches = [c for c in matches if c.pubsub is not None]
            elif kind == b"normal":
                matches = [c for c in matches if c.pubsub is None]
            else:
                matches = []
        else:
            raise CommandError(errors.SYNTAX)
    killed = 0
    for c in matches:
        if skipme and c is client:
            continue
        _kill(node, c)
        killed += 1
    return resp.integer(killed)


def _kill(node: Node, c: Client) -> None:
    c.killed = True
    if node.on_wake is not None:
        node.on_wake.wake(c)


@command("CONFIG", -2, "admin readonly loading",
         "Get, set, reset or rewrite configuration",
         "GET pattern | SET parameter value | RESETSTAT | REWRITE")
def config_(node: Node, client: Client, argv: list[bytes]) -> bytes:
    sub = upper(argv[1])
    config = node.config
    if sub == "GET" and len(argv) >= 3:
        pairs: dict[str, str] = {}
        for pattern in argv[2:]:
            for name, value in config.get(pattern.decode(errors="replace")):
                pairs[name] = value
        if client.proto == 3:
            return resp.encode(pairs, 3)
        return resp.encode([x for kv in pairs.items() for x in kv])
    if sub == "SET" and len(argv) >= 4 and len(argv) % 2 == 0:
        for raw_name, raw_value in zip(argv[2::2], argv[3::2]):
            try:
                config.set(raw_name.decode(errors="replace"), raw_value.decode(errors="replace"))
            except ConfigError as exc:
                raise CommandError(f"ERR {exc}") from None
        return resp.OK
    if sub == "RESETSTAT" and len(argv) == 2:
        node.stats.reset()
        for entry in unique_commands(node.table):
            entry.calls = entry.ns = entry.rejected = entry.failed = 0
            entry.reset_histogram()
        return resp.OK
    if sub == "REWRITE" and len(argv) == 2:
        try:
            config.rewrite()
        except (ConfigError, OSError) as exc:
            raise CommandError(f"ERR Rewriting config file: {exc}") from None
        return resp.OK
    if sub in ("GET", "SET", "RESETSTAT", "REWRITE"):
        raise CommandError("ERR Wrong number of arguments for CONFIG "
                           + argv[1].decode(errors="replace"))
    raise CommandError("ERR CONFIG subcommand must be one of GET, SET, RESETSTAT, REWRITE")


@command("DEBUG", -2, "admin",
         "Debugging commands", "FLUSHALL | SLEEP seconds | ...")
def debug(node: Node, client: Client, argv: list[bytes]) -> bytes:
    sub = upper(argv[1])
    if sub == "FLUSHALL":  # Disque's: everything on this node, keys too
        flushall(node)
        node.keyspace.flush_all()
        node.keyspace.log(node.keyspace.dbs[0], b"FLUSHALL")
        return resp.OK
    if sub == "SLEEP" and len(argv) == 3:
        try:
            seconds = float(argv[2])
        except ValueError:
            raise CommandError("ERR value is not a valid float") from None
        time.sleep(max(0.0, seconds))  # blocks the node, on purpose
        return resp.OK
    if sub == "ERROR" and len(argv) == 3:
        return b"-" + argv[2].replace(b"\r", b" ").replace(b"\n", b" ") + b"\r\n"
    if sub == "SEGFAULT":
        os.abort()
    if sub == "ASSERT":
        node.check_invariants()
        raise AssertionError("DEBUG ASSERT")
    if sub == "CHECK":  # ours: assert the core's invariants
        node.check_invariants()
        return resp.OK
    if sub == "OOM":
        raise MemoryError("DEBUG OOM")
    if sub == "LOADAOF":
        node.log.reload()
        return resp.OK
    if sub == "GC":  # ours: a full collection of everything, frozen objects too
        return resp.encode(full_collection())
    if sub == "HELP":
        return resp.encode(["DEBUG FLUSHALL", "DEBUG SLEEP <seconds>",
                            "DEBUG ERROR <text>", "DEBUG SEGFAULT", "DEBUG CHECK",
                            "DEBUG LOADAOF", "DEBUG GC"])
    raise CommandError("ERR Unknown DEBUG subcommand or wrong number of "
                       f"arguments for '{argv[1].decode(errors='replace')}'")


def full_collection() -> str:
    """DEBUG GC: what the cyclic collector finds in the whole heap (its
    frozen part too, which stays unfrozen until the collector's next
    freeze): how a test or an operator sees whether garbage cycles build up."""
    gc.unfreeze()
    start = time.perf_counter()
    found = gc.collect()
    took_ms = (time.perf_counter() - start) * 1000
    collected = sum(generation["collected"] for generation in gc.get_stats())
    return (f"unreachable:{found} collected_since_start:{collected} "
            f"tracked:{len(gc.get_objects())} garbage:{len(gc.garbage)} ms:{took_ms:.1f}")


def flushall(node: Node) -> None:
    """Forget every job and queue (DEBUG FLUSHALL, CLUSTER RESET, DEBUG
    LOADAOF).  Clients blocked in GETJOB get a nil reply, as in Disque."""
    for c in list(node.clients.values()):
        if c.blocked is not None and c.blocked.__class__ is BlockedGet:
            node.blocked_timeout(c)
    for job in list(node.jobs.values()):
        node.unregister(job)
    node.forget_idempotency_keys()  # (the tombstones those just left too)
    for queue in list(node.queues.values()):
        if not queue.blocked:
            node.drop_queue(queue)


@command("SLOWLOG", -2, "readonly",
         "The slow commands log", "GET [count] | LEN | RESET")
def slowlog(node: Node, client: Client, argv: list[bytes]) -> bytes:
    sub = upper(argv[1])
    if sub == "GET":
        count = to_int(argv[2]) if len(argv) > 2 else 10
        entries = node.slowlog if count < 0 else node.slowlog[:count]
        # Disque's four fields: id, unix time, microseconds, arguments
        return resp.encode([[e[0], e[1], e[2], e[3]] for e in entries], client.proto)
    if sub == "LEN":
        return resp.integer(len(node.slowlog))
    if sub == "RESET":
        node.slowlog.clear()
        return resp.OK
    raise CommandError("ERR Unknown SLOWLOG subcommand or wrong # of args. Try GET, RESET, LEN.")


@command("LATENCY", -2, "admin readonly loading",
         "Latency monitor: what held the node up, by event",
         "LATEST | HISTORY event | GRAPH event | RESET [event ...] | DOCTOR | "
         "HISTOGRAM [command ...] | HELP")
def latency(node: Node, client: Client, argv: list[bytes]) -> bytes:
    sub = upper(argv[1])
    monitor = node.latency
    if sub == "LATEST" and len(argv) == 2:
        return resp.encode(monitor.latest(), client.proto)
    if sub == "HISTORY" and len(argv) == 3:
        return resp.encode(monitor.history(argv[2].decode("utf-8", "replace")), client.proto)
    if sub == "GRAPH" and len(argv) == 3:
        graph = monitor.graph(argv[2].decode("utf-8", "replace"))
        if graph is None:
            raise CommandError("ERR No samples available for event '"
                               + argv[2].decode("utf-8", "replace") + "'")
        return resp.encode(resp.Verbatim(graph), client.proto)
    if sub == "RESET":
        names = [a.decode("utf-8", "replace") for a in argv[2:]]
        return resp.integer(monitor.reset(names or None))
    if sub == "DOCTOR" and len(argv) == 2:
        return resp.encode(resp.Verbatim(monitor.doctor()), client.proto)
    if sub == "HISTOGRAM":
        return resp.encode(_latency_histograms(node, argv[2:]), client.proto)
    if sub == "HELP" and len(argv) == 2:
        return resp.encode(_LATENCY_HELP)
    if sub in ("LATEST", "HISTORY", "GRAPH", "DOCTOR", "HELP"):
        raise CommandError(errors.wrong_arity("latency|" + sub.lower()))
    raise CommandError(errors.unknown_subcommand(argv[1].decode("utf-8", "replace"), "LATENCY"))


_LATENCY_HELP = [
    "LATENCY <subcommand> [<arg> ...]. Subcommands are:",
    "LATEST", "    The latest sample and the worst of every event.",
    "HISTORY <event>", "    An event's samples: [unix time, ms], one a second at most.",
    "GRAPH <event>", "    An event's samples drawn as text.",
    "RESET [<event> ...]", "    Forget the events (all without names).",
    "DOCTOR", "    What the events say, in words.",
    "HISTOGRAM [<command> ...]",
    "    Each command's calls by time, cumulative (all commands without names).",
    "HELP", "    This help.",
]


def _latency_histograms(node: Node, names: list[bytes]) -> dict[str, object]:
    """LATENCY HISTOGRAM: the named commands' (all without names) calls by
    time, as Redis: {name: {calls, histogram_usec: {bound µs: calls up to it}}};
    a container's calls by subcommand ("client|list"); unknown names skipped."""
    if names:
        entries: list[Command] = []
        for raw in names:
            name, _, sub = raw.decode("utf-8", "replace").partition("|")
            entry = node.table.get(name.upper().encode())
            if entry is None:
                continue
            if entry.container:
                timed = entry.subcommands or {}
                if not sub:
                    entries.extend(timed.values())
                elif (one := timed.get(entry.lname + "|" + sub.lower())) is not None:
                    entries.append(one)
            elif not sub:
                entries.append(entry)
    else:
        entries = []
        for entry in unique_commands(node.table):
            if not entry.container:
                entries.append(entry)
            elif entry.subcommands:
                entries.extend(entry.subcommands.values())
    out: dict[str, object] = {}
    for entry in entries:
        if entry.calls:
            out[entry.lname] = {"calls": entry.calls,
                                "histogram_usec": _cumulative_usec(entry.histogram())}
    return out


def _cumulative_usec(hist: list[int]) -> dict[int, int]:
    """Power-of-two buckets of ns (hist[k]: calls under 2**k ns) as Redis
    reports them: from 1,024 ns (1 µs) up, each bound's calls so far, only
    the bounds that added some."""
    out: dict[int, int] = {}
    total = sum(hist[:11])  # (everything under 1,024 ns counts at the first bound)
    if total:
        out[1] = total
    for k in range(11, len(hist)):
        if hist[k]:
            total += hist[k]
            out[(1 << k) // 1000] = total
    return out


@command("MONITOR", 1, "admin readonly",
         "Stream every command the server receives")
def monitor(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    if client.monitor:
        return None  # a second MONITOR is ignored silently, as in Disque
    client.monitor = True
    node.monitors.append(client)
    return resp.OK


@command("SHUTDOWN", -1, "admin readonly loading",
         "Stop the server", "[NOSAVE|SAVE|REWRITE-AOF]")
def shutdown(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    mode = upper(argv[1]) if len(argv) > 1 else ""
    if mode not in ("", "SAVE", "NOSAVE", "REWRITE-AOF") or len(argv) > 2:
        raise CommandError(errors.SYNTAX)
    if node.on_shutdown is None:
        raise CommandError("ERR Errors trying to SHUTDOWN. Check logs.")
    node.on_shutdown(mode)
    client.close_after_reply = True
    return None


@command("SAVE", 1, "admin",
         "Answers why there is no snapshot to save: the AOF is the persistence")
def save(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """Redis's SAVE writes an RDB snapshot; a node has none to write (keys
    and jobs persist in the AOF, which BGREWRITEAOF compacts), so it says
    so rather than answer OK for a save that did not happen.  It exists
    so that MULTI refuses it as Redis does (transactions.NO_MULTI)."""
    raise CommandError("ERR SAVE writes no RDB snapshot here: keys and jobs persist in the "
                       "AOF (appendonly yes; BGREWRITEAOF compacts it)")


@command("BGREWRITEAOF", 1, "admin readonly",
         "Rewrite the append-only file in the background")
def bgrewriteaof(node: Node, client: Client, argv: list[bytes]) -> bytes:
    message = node.log.rewrite()
    return resp.status(message)
