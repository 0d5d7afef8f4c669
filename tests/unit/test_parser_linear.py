"""A request that arrives over many reads is checked once, not once per
read (issue 17): RequestParser._scan resumes where the last read ended.
Before, each 16 KB read rescanned the request from its start, and a
1,048,575-key DEL (7 MB) held a node for 190 s."""

from trisque.protocol import resp
from trisque.protocol.resp import RequestParser


def _fed_in_reads(parser, data, size=16 * 1024):
    out = []
    for i in range(0, len(data), size):
        out.extend(parser.feed(data[i:i + size]))
    return out


class _Counting:
    """Stands for a header pattern; counts the headers read."""

    def __init__(self, pattern, calls):
        self.pattern = pattern
        self.calls = calls

    def match(self, buf, pos):
        self.calls.append(pos)
        return self.pattern.match(buf, pos)


def _count_header_reads(monkeypatch):
    """The positions of the headers the parser reads from now on (in the
    interpreted form: the compiled one does not see these patches)."""
    calls = []
    real = resp._header_int

    def counting(buf, start, end, what):
        calls.append(start)
        return real(buf, start, end, what)
    monkeypatch.setattr(resp, "_header_int", counting)
    for name in ("_COUNT_HEADER", "_BULK_HEADER"):
        monkeypatch.setattr(resp, name, _Counting(getattr(resp, name), calls))
    return calls


def test_one_huge_request_headers_read_about_once(monkeypatch):
    calls = _count_header_reads(monkeypatch)
    keys = 100_000
    data = b"*%d\r\n$3\r\nDEL\r\n" % (keys + 1) + b"$1\r\nk\r\n" * keys
    reads = len(data) // (16 * 1024) + 1
    requests = _fed_in_reads(RequestParser(), data)
    assert len(requests) == 1 and len(requests[0]) == keys + 1
    # each header once (a failed match and _header_int count twice), plus
    # at most one re-read at each read's end
    assert len(calls) <= 2 * (keys + 2 + reads)


def test_resume_across_a_large_bulk_and_after_it():
    parser = RequestParser()
    big = b"x" * 100_000
    data = (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n%s\r\n" % (len(big), big)
            + b"*1\r\n$4\r\nPING\r\n" * 3000)
    requests = _fed_in_reads(parser, data, size=1000)
    assert requests[0] == [b"SET", b"k", big]
    assert requests[1:] == [[b"PING"]] * 3000
    assert parser.buffered() == 0


def test_a_bad_header_late_in_a_long_request_is_still_refused():
    parser = RequestParser(max_bulk_len=10)
    data = b"*5001\r\n$3\r\nDEL\r\n" + b"$1\r\nk\r\n" * 4000 + b"$11\r\n"
    try:
        _fed_in_reads(parser, data, size=700)
    except resp.ProtocolError as exc:
        assert "invalid bulk length" in str(exc)
    else:
        raise AssertionError("a bulk over proto-max-bulk-len was accepted")


def test_a_pipeline_split_across_reads_is_not_walked_header_by_header(monkeypatch):
    """A client pipelining small requests faster than the node reads them
    splits one in every read.  Only that request's headers are walked (the
    requests after it come from hiredis and add up to where the next split
    one starts): walking all of them cost ~0.7 us a request, in 16 KB runs
    nobody could interrupt, and a producer/consumer pair beside 1 MB of
    PINGs waited ~900 us at one round trip in ten
    (tests/server/test_hostile_clients.py)."""
    calls = _count_header_reads(monkeypatch)
    pings = 70_000
    data = b"*1\r\n$4\r\nPING\r\n" * pings  # 16 KB reads end inside a request
    reads = len(data) // (16 * 1024) + 1
    assert _fed_in_reads(RequestParser(), data) == [[b"PING"]] * pings
    assert len(calls) <= 4 * reads  # (was 2 a request: 140,000)


def test_a_bulk_over_the_limit_in_one_read_is_refused():
    """Complete in one read, a bulk over proto-max-bulk-len is refused as
    Redis refuses it (at its header), after the requests before it."""
    parser = RequestParser(max_bulk_len=100)
    data = b"*1\r\n$4\r\nPING\r\n" + b"*2\r\n$4\r\nECHO\r\n$101\r\n" + b"x" * 101 + b"\r\n"
    try:
        parser.feed(data)
    except resp.ProtocolError as exc:
        assert "invalid bulk length" in str(exc)
        assert exc.requests == [[b"PING"]]
    else:
        raise AssertionError("a bulk over proto-max-bulk-len was accepted")
