"""RESP request parsing (multibulk and inline) and reply encoding."""

import re
import tracemalloc

import pytest

from tests.unit.resp_parsers import both_ways, new_parser  # noqa: F401 (autouse)
from trisque.protocol import resp
from trisque.protocol.resp import ProtocolError, split_inline




def mb(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def test_multibulk_and_pipelining():
    p = new_parser()
    data = mb("PING") + mb("ADDJOB", "q", b"a\r\nb", 0) + mb("GETJOB", "FROM", "q")
    assert p.feed(data) == [[b"PING"], [b"ADDJOB", b"q", b"a\r\nb", b"0"],
                            [b"GETJOB", b"FROM", b"q"]]


def test_byte_by_byte():
    p = new_parser()
    data = mb("ADDJOB", "q", "x" * 100, 0) + b"PING\r\n" + mb("QLEN", "q")
    out = []
    for i in range(len(data)):
        out += p.feed(data[i:i + 1])
    assert out == [[b"ADDJOB", b"q", b"x" * 100, b"0"], [b"PING"], [b"QLEN", b"q"]]


def test_split_at_every_element_boundary():
    """hiredis consumes every byte of a chunk that ends between two
    elements of a request; the parser must still know it is inside one."""
    data = mb("ADDJOB", "q", "body", 0) + mb("ECHO", "hi")
    cuts = [i for i in range(1, len(data)) if data[i - 2:i] == b"\r\n"]
    for cut in cuts:
        p = new_parser()
        out = p.feed(data[:cut]) + p.feed(data[cut:])
        assert out == [[b"ADDJOB", b"q", b"body", b"0"], [b"ECHO", b"hi"]], cut
    # and then inline again
    p = new_parser()
    assert p.feed(b"*2\r\n$4\r\nECHO\r\n") == []
    assert p.feed(b"$2\r\nhi\r\n") == [[b"ECHO", b"hi"]]
    assert p.feed(b"PING\r\n") == [[b"PING"]]


def test_every_split_of_a_pipeline():
    data = (b"PING\r\n" + mb("PING") + b"ECHO x\r\n\r\n" + mb("ADDJOB", "q", b"*1\r\n$1\r\n", 0)
            + mb("") + b"*0\r\n" + mb("X", "y" * 20) + b"+OK\r\n")
    expected = [[b"PING"], [b"PING"], [b"ECHO", b"x"], [b"ADDJOB", b"q", b"*1\r\n$1\r\n", b"0"],
                [b""], [b"X", b"y" * 20], [b"+OK"]]
    for i in range(len(data)):
        for j in range(i, len(data)):
            p = new_parser()
            out = p.feed(data[:i]) + p.feed(data[i:j]) + p.feed(data[j:])
            assert out == expected, (i, j)


def test_inline_after_arrays_in_one_read():
    """Redis decides per request: what follows a request array without a
    '*' is inline text, whatever RESP type its first byte would be."""
    p = new_parser()
    assert p.feed(mb("PING") + b"PING\r\n" + mb("ECHO", "a")) == \
        [[b"PING"], [b"PING"], [b"ECHO", b"a"]]
    assert p.feed(mb("PING") + b"\r\n\r\n" + mb("PING")) == [[b"PING"], [b"PING"]]
    assert p.feed(mb("PING") + b"+OK\r\n:5\r\n$3\r\nfoo\r\n_\r\n") == \
        [[b"PING"], [b"+OK"], [b":5"], [b"$3"], [b"foo"], [b"_"]]
    assert p.feed(mb("PING") + b"*-1\r\n*-7\r\n" + mb("QLEN", "q")) == [[b"PING"], [b"QLEN", b"q"]]
    # and back to arrays after the inline text, hiredis again
    assert p.feed(mb("PING") + b"PING\r\n" + mb("ECHO", "b")[:9]) == [[b"PING"], [b"PING"]]
    assert p.feed(mb("ECHO", "b")[9:] + mb("PING")) == [[b"ECHO", b"b"], [b"PING"]]


@pytest.mark.parametrize("data,message", [
    (mb("PING") + b"*1\r\n:5\r\n", "expected '$', got ':'"),
    (mb("PING") + b"*2\r\n$4\r\nECHO\r\n*1\r\n", "expected '$', got '*'"),
    (mb("PING") + b"*1\r\n$04\r\nPING\r\n", "invalid bulk length"),
    (mb("PING") + b"*01\r\n$4\r\nPING\r\n", "invalid multibulk length"),
    (mb("PING") + b"*1\r\n$-0\r\n", "invalid bulk length"),
    (mb("PING") + b"*1\r\n$4\r\nPING\r\n*x\r\n", "invalid multibulk length"),
])
def test_errors_after_complete_requests(data, message):
    p = new_parser()
    with pytest.raises(ProtocolError, match=re.escape(message)) as info:
        kept = p.feed(data)  # (some only with the next read: see test_malformed_multibulk)
        assert kept == [[b"PING"]]
        p.feed(b"$1\r\nx\r\n")
    assert all(request == [b"PING"] for request in info.value.requests)


def test_inline_forms():
    p = new_parser()
    assert p.feed(b"PING\r\n") == [[b"PING"]]
    assert p.feed(b"PING\r\n\n") == [[b"PING"]]  # Disque's harness probe
    assert p.feed(b"\r\n\r\n  \r\n") == []
    assert p.feed(b"ping\n") == [[b"ping"]]
    assert p.feed(b"ADDJOB q \"hello world\" 0\r\n") == [[b"ADDJOB", b"q", b"hello world", b"0"]]


def test_split_inline_quotes_and_escapes():
    assert split_inline(b'a "b c" \'d e\'') == [b"a", b"b c", b"d e"]
    assert split_inline(b'"\\x41\\n\\t\\"q\\""') == [b'A\n\t"q"']
    assert split_inline(b"'it\\'s'") == [b"it's"]
    assert split_inline(b'""') == [b""]
    assert split_inline(b"  a\t b  ") == [b"a", b"b"]


@pytest.mark.parametrize("line", [b'"abc', b"'abc", b'"a"b', b"'a'b"])
def test_unbalanced_quotes(line):
    with pytest.raises(ProtocolError, match="unbalanced quotes"):
        split_inline(line)
    with pytest.raises(ProtocolError):
        new_parser().feed(line + b"\r\n")


def test_requests_before_a_protocol_error_are_kept():
    p = new_parser()
    with pytest.raises(ProtocolError) as info:
        p.feed(b"PING\r\n" + mb("QLEN", "q") + b"*1\r\n$x\r\n")
    assert info.value.requests == [[b"PING"], [b"QLEN", b"q"]]


@pytest.mark.parametrize("data,message", [
    (b"*1\r\n$abc\r\n", "Protocol error"),
    (b"*abc\r\n", "Protocol error"),
    (b"*1\r\n:5\r\n", "Protocol error"),
    (b"*2000000\r\n", "invalid multibulk length"),
    (b"*1\r\n$1\r\nx\r\n*2000000\r\n", "invalid multibulk length"),
    (b"*2000000\r\n$1\r\nx\r\n", "invalid multibulk length"),
    (b"*1\r\n$-5\r\n", "Protocol error"),
])
def test_malformed_multibulk(data, message):
    p = new_parser()
    with pytest.raises(ProtocolError, match=message):
        # (a chunk ending right after a header may only be judged with
        # the next one: hiredis has consumed it all)
        p.feed(data)
        p.feed(b"$1\r\nx\r\n")


@pytest.mark.parametrize("chunks", [
    [b"*2000000000\r\n"],
    [mb("PING") + b"*2000000000\r\n"],
    [mb("PING") + b"*20000", b"00000\r\n"],
    [b"*2\r\n$1\r\na\r\n", b"*2000000000\r\n"],  # nested, and huge
    [b"*1048577\r\n"],
])
def test_huge_count_refused_before_hiredis_sees_it(chunks):
    """hiredis reserves room for the announced elements: 2e9 costs 13 s of
    CPU when the reader is freed, so such a header must never reach it."""
    p = new_parser()
    with pytest.raises(ProtocolError):
        for chunk in chunks:
            p.feed(chunk)
    assert p._gets() is False  # (the reader's gets, bound)


def test_large_count_text_inside_a_body_is_fine():
    p = new_parser()
    body = b"*1234567\r\n*9999999999\r\n"
    assert p.feed(mb("ADDJOB", "q", body, 0)) == [[b"ADDJOB", b"q", body, b"0"]]
    assert p.feed(mb("ADDJOB", "q", body)[:20]) == []
    assert p.feed(mb("ADDJOB", "q", body)[20:]) == [[b"ADDJOB", b"q", body]]
    assert p.feed(b"*1000000\r\n" + mb("x") * 0) == []  # allowed: 1M elements


def test_bulk_longer_than_limit_refused_from_header():
    p = new_parser(max_bulk_len=100)
    assert p.feed(mb("x" * 100)) == [[b"x" * 100]]
    with pytest.raises(ProtocolError, match="invalid bulk length"):
        p.feed(b"*1\r\n$101\r\n")  # refused before the body arrives


def test_inline_too_long():
    p = new_parser()
    with pytest.raises(ProtocolError, match="too big inline request"):
        p.feed(b"A" * (resp.MAX_INLINE + 10))


def test_empty_multibulk_ignored():
    assert new_parser().feed(b"*0\r\n*-1\r\n" + mb("PING")) == [[b"PING"]]


def test_encode():
    assert resp.encode([1, b"a", "b", None, [resp.Status("OK")]]) == \
        b"*5\r\n:1\r\n$1\r\na\r\n$1\r\nb\r\n$-1\r\n*1\r\n+OK\r\n"
    assert resp.encode({"a": 1}, 2) == b"*2\r\n$1\r\na\r\n:1\r\n"
    assert resp.encode({"a": 1}, 3) == b"%1\r\n$1\r\na\r\n:1\r\n"
    assert resp.encode(None, 3) == b"_\r\n"
    assert resp.encode(1.5, 3) == b",1.5\r\n"
    assert resp.encode(1.5, 2) == b"$3\r\n1.5\r\n"
    assert resp.encode(True, 3) == b"#t\r\n"
    assert resp.encode(resp.Verbatim("hi"), 3) == b"=6\r\ntxt:hi\r\n"
    assert resp.encode(resp.Verbatim("hi"), 2) == b"$2\r\nhi\r\n"
    assert resp.null_array(2) == b"*-1\r\n" and resp.null_array(3) == b"_\r\n"


def test_resp3_flat_is_resp2_shapes_with_resp3_null():
    """Disque's commands on a RESP3 connection: nothing RESP2-only."""
    flat = resp.RESP3_FLAT
    assert resp.encode({"a": None, "b": [None, 1.5, True]}, flat) == \
        b"*4\r\n$1\r\na\r\n_\r\n$1\r\nb\r\n*3\r\n_\r\n$3\r\n1.5\r\n:1\r\n"
    assert resp.encode(resp.Verbatim("hi"), flat) == b"$2\r\nhi\r\n"
    assert resp.null(flat) == resp.null_array(flat) == b"_\r\n"
    assert resp.null(2) == b"$-1\r\n" and resp.null(3) == b"_\r\n"


def test_a_large_request_over_many_reads_is_not_copied_per_read():
    """The buffered part of a request is checked where it lies: a copy per
    read would make a 20 MB body in 16 KB reads quadratic (seconds)."""
    body = b"x" * (20 * 1024 * 1024)
    data = mb("ECHO", body)
    chunks = [data[i:i + 16384] for i in range(0, len(data), 16384)]
    del data
    p = new_parser()
    out = []
    tracemalloc.start()
    try:
        for chunk in chunks:
            out += p.feed(chunk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out == [[b"ECHO", body]]
    # our buffer of the request and the argument hiredis made: 2 bodies
    # (with a copy of the buffer per read it was 4)
    assert peak < 2.5 * len(body), peak / len(body)
