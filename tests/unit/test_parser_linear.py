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


def test_one_huge_request_headers_read_about_once(monkeypatch):
    calls = []
    real = resp._header_int

    def counting(buf, start, end, what):
        calls.append(start)
        return real(buf, start, end, what)
    monkeypatch.setattr(resp, "_header_int", counting)
    for name in ("_COUNT_HEADER", "_BULK_HEADER"):
        monkeypatch.setattr(resp, name, _Counting(getattr(resp, name), calls))
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
