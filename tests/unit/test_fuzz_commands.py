"""Every command's argument grammar, fuzzed (issue 17): hypothesis draws
sequences of commands from the whole command table with arguments from an
alphabet of real job IDs, queue and key names, edge numbers, option words
and small Lua scripts, and runs them on an in-process node core.

Whatever the arguments, a command must answer (or block) with a reply that
is well-formed RESP, never raise out of its handler (the core re-raises a
handler's exception when no shell hook is set: that is the internal error
a server would log), and leave the node's invariants whole.

Left out: SHUTDOWN, DEBUG, MONITOR, CONFIG and BGREWRITEAOF act on the
process, its files and its settings by design (the config parser has its
own fuzz test); CLUSTER is the cluster layer's, not in the core's table.
"""

from __future__ import annotations

from typing import Any

import hiredis
import pytest
from hypothesis import given, settings, strategies as st

from tests.fuzz_settings import EXAMPLES, FUZZ
from trisque.core.command import unique_commands
from trisque.core.table import COMMANDS

from .conftest import Core

LEFT_OUT = {"SHUTDOWN", "DEBUG", "MONITOR", "CONFIG", "BGREWRITEAOF"}
NAMES = sorted(c.name for c in unique_commands(COMMANDS) if c.name not in LEFT_OUT)
# Each command gets its own examples (a share of TRISQUE_FUZZ_EXAMPLES, at least 10):
# drawn from one list, hypothesis favours its first names.
PER_COMMAND = settings(FUZZ, max_examples=max(10, EXAMPLES // 8))

OPTIONS = [
    # jobs and queues
    "REPLICATE", "DELAY", "RETRY", "TTL", "MAXLEN", "ASYNC", "NOHANG", "TIMEOUT",
    "COUNT", "FROM", "WITHCOUNTERS", "BUSYLOOP", "QUEUE", "STATE", "REPLY", "all",
    "id", "MINLEN", "IMPORTRATE", "BLOCKING", "in", "out", "none", "state", "queued",
    "active", "acked", "wait-repl",
    # keys
    "NX", "XX", "GT", "LT", "CH", "INCR", "EX", "PX", "EXAT", "PXAT", "KEEPTTL",
    "GET", "PERSIST", "WITHSCORES", "LIMIT", "BYSCORE", "BYLEX", "REV", "MATCH",
    "TYPE", "RANK", "LEFT", "RIGHT", "BEFORE", "AFTER", "MIN", "MAX", "WITHVALUES",
    "STORE", "string", "list", "hash", "set", "zset",
    # server
    "ON", "OFF", "SKIP", "SETNAME", "GETNAME", "ID", "LIST", "KILL", "INFO", "DOCS",
    "GETKEYS", "RESETSTAT", "LEN", "RESET", "FLUSH", "EXISTS", "LOAD", "DISQUE-RESP3",
    "ENCODING", "REFCOUNT", "IDLETIME", "FREQ", "default", "everything", "3", "2",
]
NUMBERS = ["0", "1", "-1", "2", "3", "10", "100", "-100", "1.5", "-0.5", "inf", "-inf",
           "+inf", "nan", "65535", "65536", "2147483648", "9223372036854775807",
           "-9223372036854775808", "9223372036854775808", "1e309", "0x10", "", " 1"]
NAMES_OF_THINGS = ["q", "q2", "k", "k2", "l", "h", "s", "z", "(", "[a", "-", "+", "*",
                   "x" * 300, "\x00\r\n", "é"]
SCRIPTS = ["return 1", "return redis.call('SET', KEYS[1], ARGV[1])",
           "return redis.call('GET', KEYS[1])", "return {1, 'two', {3}, false}",
           "return redis.pcall('INCR', 'k')", "error(", "return redis.call('NOPE')",
           "return redis.error_reply('E x')", "return redis.status_reply('fine')"]


def argument(job_ids: list[bytes]) -> st.SearchStrategy[bytes]:
    words = st.sampled_from(OPTIONS + NUMBERS + NAMES_OF_THINGS + SCRIPTS).map(str.encode)
    choices = [words, st.binary(max_size=12)]
    if job_ids:
        choices.append(st.sampled_from(job_ids))
    return st.one_of(*choices)


@st.composite
def request(draw: Any, name: str, job_ids: list[bytes]) -> list[bytes]:
    arity = COMMANDS[name.encode()].arity  # mostly a count the table accepts
    if draw(st.integers(0, 9)) == 0:
        size = draw(st.integers(0, 8))
    elif arity > 0:
        size = arity - 1
    else:
        size = draw(st.integers(-arity - 1, -arity + 6))
    args = draw(st.lists(argument(job_ids), min_size=size, max_size=size))
    return [name.encode()] + args


def seeded_core() -> tuple[Core, list[bytes]]:
    """A node with a little of everything: jobs in each state, keys of each type."""
    core = Core()
    ids = [core.run("ADDJOB", "q", f"body{i}", 0) for i in range(4)]
    core.run("ADDJOB", "q2", "later", 0, "DELAY", 30)
    core.run("GETJOB", "NOHANG", "FROM", "q")  # one active
    core.run("ACKJOB", ids[3])
    for cmd in (("SET", "k", "1"), ("RPUSH", "l", "a", "b"), ("HSET", "h", "f", "v"),
                ("SADD", "s", "m"), ("ZADD", "z", "1", "m")):
        core.run(*cmd)
    return core, [i for i in ids if isinstance(i, bytes)]


_ONE_PUSH_PER_NAME = frozenset((b"SUBSCRIBE", b"PSUBSCRIBE", b"SSUBSCRIBE", b"UNSUBSCRIBE",
                                b"PUNSUBSCRIBE", b"SUNSUBSCRIBE"))


@pytest.mark.parametrize("name", NAMES)
@PER_COMMAND
@given(data=st.data())
def test_any_arguments(name: str, data: Any) -> None:
    """``name`` with random arguments, now and then after another command."""
    core, job_ids = seeded_core()
    for _ in range(data.draw(st.integers(1, 4))):
        other = data.draw(st.sampled_from(NAMES)) if data.draw(st.integers(0, 3)) == 0 else name
        argv = data.draw(request(other, job_ids))
        client = core.client(proto=data.draw(st.sampled_from([2, 3])))
        core.node.execute(client, argv)  # a handler's exception propagates: a bug
        out = b"".join(client.out)
        client.out.clear()
        reader = hiredis.Reader()
        reader.feed(out)
        replies = []
        try:
            while (reply := reader.gets()) is not False:
                replies.append(reply)
        except hiredis.ProtocolError as exc:
            raise AssertionError(f"{argv!r} answered malformed RESP {out[:200]!r}") from exc
        assert not reader.has_data(), f"{argv!r} left a partial reply {out[-200:]!r}"
        if argv[0].upper() in _ONE_PUSH_PER_NAME and len(replies) > 1:
            # (P|S)(UN)SUBSCRIBE: one confirmation per name, as Redis
            assert len(replies) == len(argv) - 1, (argv, replies)
        else:
            assert len(replies) <= 1 or argv[0] in (b"HELLO",), (argv, replies)
        if data.draw(st.booleans()):
            core.advance(data.draw(st.sampled_from([0.001, 1, 31])))
    core.node.check_invariants()
