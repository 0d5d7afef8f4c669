"""Fuzzing the RESP request parser (protocol/resp.py): whatever the bytes
and however they are split into reads, it returns requests or raises
ProtocolError, nothing else; valid requests round-trip, in any chunking."""

from hypothesis import example, given, strategies as st

from tests.fuzz_settings import FUZZ
from tests.unit.resp_parsers import both_ways, new_parser  # noqa: F401 (autouse)
from trisque.protocol.resp import ProtocolError



args = st.lists(st.binary(max_size=40), min_size=1, max_size=6)
requests = st.lists(args, min_size=1, max_size=8)


def encode(argv):
    return b"*%d\r\n%s" % (len(argv), b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv))


def chunked(data, cuts):
    points = sorted({c % (len(data) + 1) for c in cuts})
    start = 0
    for point in points + [len(data)]:
        yield data[start:point]
        start = point


def feed_all(parser, data, cuts):
    out = []
    for chunk in chunked(data, cuts):
        if chunk:
            out.extend(parser.feed(chunk))
    return out


@FUZZ
@given(requests, st.lists(st.integers(min_value=0), max_size=10))
def test_valid_requests_round_trip_in_any_chunking(reqs, cuts):
    data = b"".join(encode(r) for r in reqs)
    parser = new_parser(max_bulk_len=1024)
    assert feed_all(parser, data, cuts) == reqs
    assert parser.buffered() == 0


@FUZZ
@given(st.lists(st.lists(st.text("abcXYZ019-_:", min_size=1, max_size=8), min_size=1,
                         max_size=5), min_size=1, max_size=5),
       st.lists(st.integers(min_value=0), max_size=6))
def test_inline_requests_round_trip(lines, cuts):
    data = b"".join(" ".join(words).encode() + b"\r\n" for words in lines)
    assert feed_all(new_parser(), data, cuts) == [
        [w.encode() for w in words] for words in lines]


@FUZZ
@given(st.binary(max_size=600), st.lists(st.integers(min_value=0), max_size=10))
def test_random_bytes_only_protocol_errors(data, cuts):
    parser = new_parser(max_bulk_len=256)
    try:
        for request in feed_all(parser, data, cuts):
            assert request and all(isinstance(a, bytes) for a in request)
    except ProtocolError as exc:
        assert str(exc).startswith("Protocol error")


_TOKENS = [b"*", b"$", b"\r\n", b"\n", b"-1", b"0", b"1", b"3", b"99999999999",
           b"1048577", b"-", b"\"", b"'", b"\\x4", b" ", b"PING", b"\x00", b"*2\r\n"]


@FUZZ
@given(requests, st.lists(st.tuples(st.integers(min_value=0),
                                    st.sampled_from(["flip", "insert", "delete"]),
                                    st.sampled_from(_TOKENS)), min_size=1, max_size=6),
       st.lists(st.integers(min_value=0), max_size=8))
def test_mutated_requests_only_protocol_errors(reqs, mutations, cuts):
    data = bytearray(b"".join(encode(r) for r in reqs))
    for where, how, token in mutations:
        pos = where % (len(data) + 1)
        if how == "flip" and pos < len(data):
            data[pos] ^= 1 << (where % 8)
        elif how == "insert":
            data[pos:pos] = token
        else:
            del data[pos:pos + len(token)]
    parser = new_parser(max_bulk_len=1024)
    try:
        for request in feed_all(parser, bytes(data), cuts):
            assert request and all(isinstance(a, bytes) for a in request)
    except ProtocolError as exc:
        assert str(exc).startswith("Protocol error")


def _one_request_at_a_time(data, max_bulk_len):
    """The requests in ``data`` read the slow, exact way (what the parser
    falls back to): each array by its headers, each inline line by itself;
    (requests, Redis's error or None)."""
    from trisque.protocol.resp import split_inline
    scanner = new_parser(max_bulk_len=max_bulk_len)
    out = []
    pos = 0
    try:
        while pos < len(data):
            if data[pos] == 42:  # '*'
                start = scanner._scan(data[pos:], out)
                if start == 0:
                    break  # incomplete
                pos += start
            else:
                end = data.find(b"\n", pos)
                if end < 0:
                    break
                line = data[pos:end].removesuffix(b"\r")
                pos = end + 1
                if split_inline(line):
                    out.append(split_inline(line))
    except ProtocolError as exc:
        return out, str(exc)
    return out, None


# Whole pieces of a stream: requests, empty and null arrays, inline lines,
# bodies that look like large counts, and what Redis refuses (a nested
# array, an integer element, a non-canonical length, a large count).
_PIECES = [encode([b"PING"]), encode([b"SET", b"k", b"v" * 30]), encode([b"ECHO", b"x" * 300]),
           encode([b"ECHO", b"*1234567\r\n$1\r\n"]), encode([b"A", b""]), b"*0\r\n", b"*-1\r\n",
           b"PING\r\n", b"\r\n", b"*2\r\n$4\r\nECHO\r\n:5\r\n", b"*1234567\r\n",
           b"*1\r\n$04\r\nPING\r\n", b"*2\r\n*1\r\n$1\r\na\r\n$1\r\nb\r\n", b"*1\r\n$x\r\n",
           # (the parser's own walk of plain requests must leave these to hiredis)
           b"*01\r\n$4\r\nPING\r\n", b"*1\r\n$-1\r\n", b"*1\r\n$4\r\nPINGxy",
           b"*1\r\n$11\r\n$4\r\nPING\r\n\r\n", encode([b"ECHO", b"y" * 12])]


@FUZZ
@example(pieces=[b"PING\r\n", b"*2\r\n$1\r\nA\r\n$0\r\n\r\n",
                 b"*2\r\n*1\r\n$1\r\na\r\n$1\r\nb\r\n"], cuts=[27], max_bulk_len=10)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=12),
       st.lists(st.integers(min_value=0), max_size=8), st.sampled_from([10, 100, 1 << 29]))
def test_any_chunking_reads_as_one_request_at_a_time(pieces, cuts, max_bulk_len):
    """However a stream is split into reads, the parser returns the same
    requests, and refuses at the same place with the same error, as
    reading it one request at a time."""
    data = b"".join(pieces)
    parser = new_parser(max_bulk_len=max_bulk_len)
    out = []
    error = None
    try:
        for chunk in chunked(data, cuts):
            if chunk:
                out.extend(parser.feed(chunk))
    except ProtocolError as exc:
        out.extend(exc.requests)
        error = str(exc)
    assert (out, error) == _one_request_at_a_time(data, max_bulk_len)
