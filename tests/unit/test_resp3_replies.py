"""Disque's commands answer a RESP3 connection in RESP2's shapes (flat
field/value arrays, INFO as a bulk): Disque never spoke RESP3 and its
clients parse RESP2 shapes.  Their nulls are RESP3's ``_`` all the same:
``$-1``/``*-1`` are not RESP3, and redis-py's own RESP3 parser reads
``$-1`` as a length and waits for -1 bytes.  A connection that sends
``CLIENT DISQUE-RESP3 ON`` gets RESP3 types from them instead.  Redis's
generic commands answer in RESP3 types either way.

The same requests run on two cores with the same seed and clock, one
through a RESP2 client and one through a RESP3 client, and their replies
are compared byte for byte.
"""

import random
from collections.abc import Sequence
from typing import Any, Union

from tests.harness import decode_all
from tests.unit.conftest import Core, is_error

UNKNOWN = "D-12345678-aaaaaaaaaaaaaaaaaaaaaaaa-0001"

# Every Disque command; "$n" is the ID the n-th ADDJOB answered.
SCRIPT: list[tuple[Union[str, int], ...]] = [
    ("ADDJOB", "q", "one", 0, "RETRY", 10),
    ("ADDJOB", "q", "two", 0, "TTL", 100),
    ("ADDJOB", "later", "three", 0, "DELAY", 5),
    ("HELLO",),
    ("QLEN", "q"), ("QPEEK", "q", 5), ("QPEEK", "q", -1),
    ("QSTAT", "q"), ("QSTAT", "nope"),
    ("QSCAN",), ("QSCAN", 0, "COUNT", 10, "MINLEN", 1),
    ("JSCAN",), ("JSCAN", 0, "REPLY", "all"), ("JSCAN", "STATE", "queued", "REPLY", "id"),
    ("SHOW", "$0"), ("SHOW", "$2"), ("SHOW", UNKNOWN),
    ("GETJOB", "WITHCOUNTERS", "FROM", "q"), ("GETJOBS", "COUNT", 5, "FROM", "q"),
    ("GETJOB", "NOHANG", "FROM", "q"), ("GETJOBS", "NOHANG", "FROM", "q"),
    ("WORKING", "$0"), ("SHOW", "$0"), ("NACK", "$0"), ("ENQUEUE", "$1"),
    ("DEQUEUE", "$1"), ("SHOW", "$1"),
    ("PAUSE", "q", "out"), ("PAUSE", "q", "state"), ("QSTAT", "q"), ("PAUSE", "q", "none"),
    ("INFO", "jobs"), ("INFO", "queues"), ("INFO", "nosuchsection"),
    ("ACKJOB", "$0"), ("SHOW", "$0"), ("FASTACK", "$1"), ("DELJOB", "$2", UNKNOWN),
    ("LOADJOB", "x"), ("SHOW", "nonsense"), ("GETJOB", "FROM"),
    # no RETRY: SHOW's next-requeue-within is a null inside the array
    ("ADDJOB", "once", "four", 0, "RETRY", 0), ("SHOW", "$3"),
    ("JSCAN", 0, "QUEUE", "once", "REPLY", "all"),
]

# Where a RESP3 connection's reply differs from a RESP2 one's: its nulls.
RESP3_NULLS = [
    ("QSTAT", "nope"), ("SHOW", UNKNOWN),
    ("GETJOB", "NOHANG", "FROM", "q"), ("GETJOBS", "NOHANG", "FROM", "q"),
    ("SHOW", "$0"), ("SHOW", "$3"), ("JSCAN", 0, "QUEUE", "once", "REPLY", "all"),
]

# What CLIENT DISQUE-RESP3 ON changes: maps, RESP3 nulls, INFO as verbatim.
RESP3_TYPED = [
    ("QSTAT", "q"), ("QSTAT", "nope"), ("JSCAN", 0, "REPLY", "all"),
    ("SHOW", "$0"), ("SHOW", "$2"), ("SHOW", UNKNOWN),
    ("GETJOB", "NOHANG", "FROM", "q"), ("GETJOBS", "NOHANG", "FROM", "q"),
    ("SHOW", "$0"), ("SHOW", "$1"), ("QSTAT", "q"),
    ("INFO", "jobs"), ("INFO", "queues"), ("INFO", "nosuchsection"), ("SHOW", "$0"),
    ("SHOW", "$3"), ("JSCAN", 0, "QUEUE", "once", "REPLY", "all"),
]


def replay(proto: int, disque_resp3: bool = False) -> list[bytes]:
    """SCRIPT's raw replies on a fresh core, through one client."""
    core = Core(random_bytes=random.Random(1).randbytes)  # the same job IDs
    client = core.client(proto=proto, disque_resp3=disque_resp3)
    ids: list[bytes] = []
    replies = []
    for request in SCRIPT:
        argv = [ids[int(arg[1:])] if isinstance(arg, str) and arg.startswith("$")
                else str(arg).encode() for arg in request]
        core.node.execute(client, argv)
        data = b"".join(client.out)
        client.out.clear()
        if request[0] == "ADDJOB":
            ids.append(data[1:-2])
        replies.append(data)
    return replies


def flat(value: Any) -> Any:
    """A decoded RESP3 reply in RESP2's terms: maps as field/value lists."""
    if isinstance(value, dict):
        return [flat(x) for pair in value.items() for x in pair]
    if isinstance(value, list):
        return [flat(x) for x in value]
    return value


def differing(a: Sequence[bytes], b: Sequence[bytes]) -> list[tuple[Union[str, int], ...]]:
    return [request for request, x, y in zip(SCRIPT, a, b) if x != y]


def test_disque_commands_answer_resp3_in_resp2_shapes_with_resp3_nulls() -> None:
    resp2, resp3 = replay(2), replay(3)
    assert all(resp2), "every request answered"
    assert not is_error(decode_all(resp2[0])[0])
    assert differing(resp2, resp3) == RESP3_NULLS
    for request, plain, flat3 in zip(SCRIPT, resp2, resp3):
        assert b"$-1\r\n" not in flat3 and b"*-1\r\n" not in flat3, request
        assert flat3 == plain.replace(b"$-1\r\n", b"_\r\n").replace(b"*-1\r\n", b"_\r\n")
    assert resp3[SCRIPT.index(("SHOW", UNKNOWN))] == b"_\r\n"
    show = resp3[SCRIPT.index(("SHOW", "$3"))]
    assert show.startswith(b"*30\r\n") and b"$19\r\nnext-requeue-within\r\n_\r\n" in show


def test_opt_in_gives_resp3_types_with_the_same_content() -> None:
    resp2, maps = replay(2), replay(3, disque_resp3=True)
    assert differing(resp2, maps) == RESP3_TYPED
    for request, plain, typed in zip(SCRIPT, resp2, maps):
        if plain != typed:  # the same values, in other types
            assert decode_all(plain) == [flat(x) for x in decode_all(typed)], request
    assert maps[SCRIPT.index(("SHOW", "$0"))].startswith(b"%15\r\n")
    assert maps[SCRIPT.index(("SHOW", UNKNOWN))] == b"_\r\n"
    assert maps[SCRIPT.index(("INFO", "jobs"))].startswith(b"=")


def test_opt_in_changes_nothing_on_resp2() -> None:
    assert differing(replay(2), replay(2, disque_resp3=True)) == []


def test_client_disque_resp3_on_off_and_errors(core: Core) -> None:
    c3 = core.client(proto=3)
    add = core("ADDJOB", "q", "x", 0, client=c3)
    assert isinstance(core("SHOW", add, client=c3), list)
    assert core("CLIENT", "DISQUE-RESP3", "on", client=c3) == b"OK"
    assert isinstance(core("SHOW", add, client=c3), dict)
    assert core("CLIENT", "DISQUE-RESP3", "OFF", client=c3) == b"OK"
    assert isinstance(core("SHOW", add, client=c3), list)
    assert is_error(core("CLIENT", "DISQUE-RESP3", "yes", client=c3), "ERR syntax error")
    assert is_error(core("CLIENT", "DISQUE-RESP3", client=c3), "ERR Syntax error, try CLIENT")
    assert isinstance(core("SHOW", add, client=c3), list)


def test_generic_commands_keep_redis_resp3_types(core: Core) -> None:
    for disque_resp3 in (False, True):
        c3 = core.client(proto=3, disque_resp3=disque_resp3)
        core.node.execute(c3, [b"CONFIG", b"GET", b"hz"])
        core.node.execute(c3, [b"CLIENT", b"GETNAME"])
        core.node.execute(c3, [b"COMMAND", b"DOCS", b"show"])
        core.node.execute(c3, [b"HELLO", b"3"])
        config, name, docs, hello = c3.out
        c3.out.clear()
        assert config == b"%1\r\n$2\r\nhz\r\n$2\r\n10\r\n"
        assert name == b"_\r\n"
        assert docs.startswith(b"%1\r\n") and hello.startswith(b"%7\r\n")
