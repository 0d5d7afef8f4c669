"""Fuzzing the RESP request parser (protocol/resp.py): whatever the bytes
and however they are split into reads, it returns requests or raises
ProtocolError, nothing else; valid requests round-trip, in any chunking."""

from hypothesis import given, strategies as st

from tests.fuzz_settings import FUZZ
from trisque.protocol.resp import ProtocolError, RequestParser

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
    parser = RequestParser(max_bulk_len=1024)
    assert feed_all(parser, data, cuts) == reqs
    assert parser.buffered() == 0


@FUZZ
@given(st.lists(st.lists(st.text("abcXYZ019-_:", min_size=1, max_size=8), min_size=1,
                         max_size=5), min_size=1, max_size=5),
       st.lists(st.integers(min_value=0), max_size=6))
def test_inline_requests_round_trip(lines, cuts):
    data = b"".join(" ".join(words).encode() + b"\r\n" for words in lines)
    assert feed_all(RequestParser(), data, cuts) == [
        [w.encode() for w in words] for words in lines]


@FUZZ
@given(st.binary(max_size=600), st.lists(st.integers(min_value=0), max_size=10))
def test_random_bytes_only_protocol_errors(data, cuts):
    parser = RequestParser(max_bulk_len=256)
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
    parser = RequestParser(max_bulk_len=1024)
    try:
        for request in feed_all(parser, bytes(data), cuts):
            assert request and all(isinstance(a, bytes) for a in request)
    except ProtocolError as exc:
        assert str(exc).startswith("Protocol error")
