"""RESP request parsing and reply encoding: bytes in, bytes out, no I/O.

Requests arrive as RESP multibulk (``*2\\r\\n$4\\r\\nPING...``, parsed by
hiredis) or as inline text (``PING\\r\\n`` typed by hand, split here).
Replies are encoded straight to bytes; the hot commands use the small
helpers (``bulk``, ``integer``) and rare ones the generic ``encode``.
"""

import re
from typing import Any, Callable, Final

import hiredis
from mypy_extensions import i64, mypyc_attr

from .native import COMPILED

MAX_MULTIBULK: Final = 1024 * 1024  # elements in one request, as Redis
MAX_INLINE: Final = 64 * 1024  # bytes in one inline request line
_LARGE_COUNT: Final = re.compile(rb"\*[0-9]{7}")  # may exceed MAX_MULTIBULK
# A well-formed header, matched in C (cheap in _scan's walk of a split
# request); anything else takes _header_int's way (for Redis's exact errors).
_COUNT_HEADER: Final = re.compile(rb"\*(0|[1-9][0-9]{0,17})\r\n")
_BULK_HEADER: Final = re.compile(rb"\$(0|[1-9][0-9]{0,17})\r\n")
# Whether RequestParser reads plain complete requests itself (_plain_requests)
# before hiredis: compiled, that costs a third of hiredis's parse and the
# large-count search; interpreted, five times hiredis's (bench/README.md).
PLAIN_WALK: Final = COMPILED


class ProtocolError(Exception):
    """Malformed input: reply with the message, then close the client."""

    requests: "list[list[bytes]]"  # the complete requests before the bad bytes


@mypyc_attr(native_class=False)  # (mypyc: no native subclass of str)
class Status(str):
    """A simple-string reply (``+OK``)."""


@mypyc_attr(native_class=False)
class Verbatim(str):
    """A long text reply: a verbatim string in RESP3, a bulk in RESP2 (INFO)."""


# ---------------------------------------------------------------- encoding

# The protocol the encoders below answer in: 2 and 3 are RESP2 and RESP3;
# RESP3_FLAT is RESP2's shapes (flat arrays, bulk text, integer booleans)
# with RESP3's null, what Disque's commands answer a RESP3 connection
# (core/client.py, disque_proto): a RESP3 parser may read no RESP2 null
# (redis-py's own reads ``$-1`` as a length of -1 and waits).
RESP3_FLAT: Final = 23

OK: Final = b"+OK\r\n"
PONG: Final = b"+PONG\r\n"
NULL2: Final = b"$-1\r\n"
NULL_ARRAY2: Final = b"*-1\r\n"
NULL3: Final = b"_\r\n"
EMPTY_ARRAY: Final = b"*0\r\n"
ZERO: Final = b":0\r\n"
ONE: Final = b":1\r\n"


def error(message: str) -> bytes:
    """``message`` starts with its code: ``ERR syntax error``, ``NOJOB ...``.
    CR and LF (from user text quoted in the message) become spaces, so the
    reply stays one line."""
    if "\r" in message or "\n" in message:
        message = message.replace("\r", " ").replace("\n", " ")
    return b"-" + message.encode() + b"\r\n"


def status(text: str) -> bytes:
    return b"+" + text.encode() + b"\r\n"


def integer(n: int) -> bytes:
    if n == 1:
        return ONE  # (ACKJOB's usual answer: no formatting)
    if n == 0:
        return ZERO
    return b":%d\r\n" % n


def bulk(data: bytes | str) -> bytes:
    if isinstance(data, str):
        data = data.encode()
    return b"$%d\r\n%s\r\n" % (len(data), data)


def null(proto: int) -> bytes:
    return NULL2 if proto == 2 else NULL3


def null_array(proto: int) -> bytes:
    return NULL_ARRAY2 if proto == 2 else NULL3


def array_header(n: int) -> bytes:
    return b"*%d\r\n" % n


def encode(value: Any, proto: int = 2) -> bytes:
    """Encode a Python value as a reply.

    str/bytes -> bulk, Status -> simple string, int -> integer, None -> null,
    list/tuple -> array, dict -> map (a flat array in RESP2), float -> double
    (a bulk in RESP2), bool -> boolean (an integer in RESP2).  RESP3_FLAT:
    RESP2's types, RESP3's null.
    """
    out: list[bytes] = []
    _encode(value, proto, out)
    return b"".join(out)


def _encode(value: Any, proto: int, out: list[bytes]) -> None:
    kind = type(value)
    if kind is bytes:
        out.append(b"$%d\r\n%s\r\n" % (len(value), value))
    elif kind is str:
        data = value.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    elif kind is int:
        out.append(b":%d\r\n" % value)
    elif kind is list or kind is tuple:
        out.append(b"*%d\r\n" % len(value))
        for item in value:
            _encode(item, proto, out)
    elif value is None:
        out.append(NULL2 if proto == 2 else NULL3)
    elif kind is Status:
        out.append(b"+%s\r\n" % value.encode())
    elif kind is dict:
        out.append((b"%%%d\r\n" if proto == 3 else b"*%d\r\n")
                   % (len(value) * (1 if proto == 3 else 2)))
        for key, item in value.items():
            _encode(key, proto, out)
            _encode(item, proto, out)
    elif kind is bool:
        if proto == 3:
            out.append(b"#t\r\n" if value else b"#f\r\n")
        else:
            out.append(b":1\r\n" if value else b":0\r\n")
    elif kind is float:
        text = repr(value).encode()
        if proto == 3:
            out.append(b",%s\r\n" % text)
        else:
            out.append(b"$%d\r\n%s\r\n" % (len(text), text))
    elif kind is Verbatim:
        data = value.encode()
        if proto == 3:
            out.append(b"=%d\r\ntxt:%s\r\n" % (len(data) + 4, data))
        else:
            out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    else:
        raise TypeError(f"cannot encode {kind.__name__} as a reply")


# ----------------------------------------------------------------- parsing

def _may_hold_large_count(data: bytes) -> bool:
    """Whether a multibulk count of 7 digits or more may be in ``data``.
    An unpipelined request has one '*', its own header at the start: its
    digits are looked at in place.  A chunk with another '*' is searched.
    (Compiled, ``42 in data[1:]`` is a slice and a memchr, several times
    cheaper than data.find, ``b"*" in`` (it tries the bytes as an int first
    and formats a TypeError) or the regex: bench/README.md, "What the ninth
    session took out".)"""
    if 42 in data[1:]:
        return _LARGE_COUNT.search(data) is not None
    if len(data) < 8 or data[0] != 42:
        return False
    for i in range(1, 8):
        if not 48 <= data[i] <= 57:
            return False
    return True


def _plain_requests(data: bytes, out: list[list[bytes]], max_bulk_len: int) -> i64:
    """Append the requests at the start of ``data`` that are complete and
    plain (every header canonical and within bounds, every bulk followed
    by CRLF) to ``out``; return where the first other one starts, where
    hiredis and the checks around it take over (an incomplete request, an
    error, an empty or inline one).  Those bounds make the large-count
    search before hiredis needless for these requests.  (Positions are
    i64: compiled, arithmetic on them is then plain C, not tagged ints.)"""
    size: i64 = len(data)
    start: i64 = 0
    while start < size and data[start] == 42:  # '*'
        # A header of one digit (most are) is read here, as _plain_header
        # would: a call and its loop less, ~50 instructions a header.
        pos = start + 1
        if pos + 2 < size and data[pos + 1] == 13 and data[pos + 2] == 10:
            count: i64 = data[pos] - 48
            if count < 0 or count > 9:
                break
            pos += 3
        else:
            count, pos = _plain_header(data, pos, size)
        if count <= 0 or count > MAX_MULTIBULK:
            break
        args: list[bytes] = []
        while count:
            if pos >= size or data[pos] != 36:  # '$'
                return start
            pos += 1
            if pos + 2 < size and data[pos + 1] == 13 and data[pos + 2] == 10:
                length: i64 = data[pos] - 48
                if length < 0 or length > 9:
                    return start
                pos += 3
            else:
                length, pos = _plain_header(data, pos, size)
            end = pos + length
            if length < 0 or length > max_bulk_len or end + 2 > size:
                return start
            if data[end] != 13 or data[end + 1] != 10:  # (Redis skips them unchecked)
                return start
            args.append(data[pos:end])
            pos = end + 2
            count -= 1
        out.append(args)
        start = pos
    return start


def _plain_header(data: bytes, pos: i64, size: i64) -> tuple[i64, i64]:
    """The number in the canonical header at ``pos`` (the digits after '*'
    or '$', as _COUNT_HEADER reads them, up to 9 of them) and where the
    line after it starts; -1 if ``data`` has no such header there."""
    value: i64 = 0
    i = pos
    while i < size and i - pos < 10:
        c: i64 = data[i]
        if 48 <= c <= 57:  # a digit
            value = value * 10 + c - 48
            i += 1
        elif c == 13 and i > pos and i + 1 < size and data[i + 1] == 10:
            if data[pos] == 48 and i - pos > 1:
                return -1, 0  # a leading zero: not canonical
            return value, i + 2
        else:
            return -1, 0
    return -1, 0


def _ends_with(data: bytes, arg: bytes) -> bool:
    """Whether ``data`` ends with ``arg`` as a request's last bulk: its
    ``$<len>`` header, the bytes and CRLF.  (Comparing the bytes alone said
    yes for an empty ``arg`` whatever the chunk ended with, so a chunk that
    ended inside the next request's header was taken as ending between
    requests, and a nested array there was not refused.)"""
    return data.endswith(b"$%d\r\n%s\r\n" % (len(arg), arg))


class RequestParser:
    """Turns a byte stream from one client into argument lists.

    ``feed(data)`` then ``requests()`` returns every complete request; partial
    input waits for more.  Raises ProtocolError on input no client would send
    (Redis's texts), after which the connection must be closed.
    """

    max_bulk_len: int
    plain_walk: bool  # (PLAIN_WALK; tests set it to read both ways interpreted)
    # hiredis.Reader's feed, gets and has_data, bound once per reader: a
    # method call looks the name up on the type each time (four a request)
    _give: Callable[[bytes], None]
    _gets: Callable[[], Any]
    _has_data: Callable[[], bool]
    _inline_text: bytes
    _partial: bytearray
    _in_multibulk: bool
    _maybe_chunk: bytes | None
    _maybe_last: list[bytes] | None
    _resume: tuple[int, int] | None

    def __init__(self, max_bulk_len: int = 512 * 1024 * 1024,
                 plain_walk: bool = PLAIN_WALK) -> None:
        self.max_bulk_len = max_bulk_len
        self.plain_walk = plain_walk
        self._new_reader()
        self._inline_text = b""  # unparsed inline text (never shared with hiredis)
        self._partial = bytearray()  # bytes of the multibulk hiredis holds
        # Where _scan stopped in the incomplete request at the start of
        # _partial: (offset of its next element's header, elements left).
        # Without it each read rescanned the request from its start:
        # quadratic in a large request's reads (bench/README.md, "Hostile clients").
        self._resume = None
        self._in_multibulk = False
        # The last chunk, if it ended after a complete request *or* between
        # two elements of the next one: hiredis consumed every byte either
        # way, and we only find out which (see _resolve) if what comes next
        # does not start with '*'.
        self._maybe_chunk = None
        self._maybe_last = None

    def _new_reader(self) -> None:
        reader = hiredis.Reader()
        self._give = reader.feed
        self._gets = reader.gets
        self._has_data = reader.has_data

    def buffered(self) -> int:
        """Bytes held of requests not complete yet (the query buffer).  The
        last chunk kept by _resolve's lazy check is not counted: one read at
        most, and most often a complete request."""
        return len(self._partial) + len(self._inline_text)

    def feed(self, data: bytes) -> list[list[bytes]]:
        """Parse ``data`` and return the list of complete requests."""
        out: list[list[bytes]] = []
        try:
            # (compiled, a bytes' length is read natively where its truth is
            # a generic call)
            while len(data):
                if self._in_multibulk:
                    data = self._feed_multibulk(data, out)
                elif data[0] == 42 and not len(self._inline_text):  # '*'
                    if self._maybe_chunk is not None:
                        # A new request, or (a protocol error hiredis reports)
                        # a nested array inside the pending one.
                        self._maybe_chunk = None
                        self._partial.clear()
                        self._resume = None
                    elif self.plain_walk:
                        # hiredis holds nothing: the plain complete requests
                        # at the chunk's start are read here (_plain_requests).
                        done = _plain_requests(data, out, self.max_bulk_len)
                        if done:
                            data = data[done:]
                            if not len(data) or data[0] != 42:
                                continue  # (a '*' left: a request refused above)
                    self._in_multibulk = True
                elif self._maybe_chunk is not None:
                    self._resolve()
                else:
                    data = self._feed_inline(data, out)
        except ProtocolError as exc:
            exc.requests = out  # the complete requests before the bad bytes
            raise
        return out

    def _resolve(self) -> None:
        """Did the last chunk end between requests, or inside one?"""
        data, last = self._maybe_chunk, self._maybe_last
        assert data is not None and last is not None  # (feed calls us only then)
        self._maybe_chunk = self._maybe_last = None
        encoded = b"*%d\r\n%s" % (len(last), b"".join(
            [b"$%d\r\n%s\r\n" % (len(arg), arg) for arg in last]))
        seen = bytes(self._partial) + data if self._partial else data
        self._resume = None
        if seen.endswith(encoded):
            self._partial.clear()
        else:
            self._partial = bytearray(seen)
            self._in_multibulk = True
            self._check_partial()

    def _feed_multibulk(self, data: bytes, out: list[list[bytes]]) -> bytes:
        if self._partial:
            return self._finish_begun(data, out)
        gets = self._gets
        partial = self._partial  # (empty: the chunk starts a request)
        first = len(out)
        # hiredis must never see a multibulk count we refuse: it would
        # reserve room for that many elements (2e9 costs 13 s of CPU when
        # freed).  So the headers are checked before hiredis gets the bytes
        # when the chunk may hold a large count (one regex search; real
        # clients almost never match).
        checked = _may_hold_large_count(data)
        if checked:
            partial += data  # = every byte hiredis has of what it has not returned
            try:
                complete = self._scan(partial)  # where an incomplete tail starts
            except ProtocolError:  # after the requests before the bad header
                return self._reparse(bytes(partial), first, out)
        self._give(data)
        last: list[bytes] | None = None  # the last complete request of this chunk

        try:
            request = gets()
            while request is not False:
                if type(request) is not list:
                    # Not an array: inline text after the arrays (Redis
                    # decides inline or multibulk per request), or garbage.
                    return self._reparse(bytes(partial) if checked else data, first, out)
                for arg in request:
                    if type(arg) is not bytes:
                        return self._reparse(bytes(partial) if checked else data, first, out)
                if request:  # ("*0\r\n": ignored, as Redis)
                    out.append(request)
                last = request
                request = gets()
        except hiredis.ProtocolError:
            return self._reparse(bytes(partial) if checked else data, first, out)
        if len(data) > self.max_bulk_len and _bulk_too_long(out, first, self.max_bulk_len):
            return self._reparse(bytes(partial) if checked else data, first, out)
        if checked:
            del partial[:complete]  # _scan knew exactly where the chunk ended
            if not partial:
                self._in_multibulk = False  # every request in it was complete
        elif not (last and _ends_with(data, last[-1])) or self._has_data():
            # hiredis holds part of a request (the chunk has no complete
            # one, or does not end with it): check its headers now, so a
            # client cannot make us buffer a bulk we would refuse anyway,
            # and a bad one is answered at once, as Redis does.  Where it
            # starts follows from the requests hiredis returned.  If they
            # do not add up (a '+' line among the elements) or inline text
            # follows them, the chunk is parsed again our way.
            tail = _after_requests(data, out, first)
            if tail == len(data):  # (it ended with an empty request)
                self._in_multibulk = False
            elif tail < 0 or data[tail] != 42:  # '*'
                return self._reparse(data, first, out)
            else:
                self._partial += data[tail:]
                self._check_partial()
        else:
            # Most often the chunk ended right after a request (it ends
            # with that request's last argument), but it may also have
            # ended between two elements of the next one that happen to
            # end alike (hiredis consumed every byte either way).  Resolved
            # lazily, because checking costs more than parsing: see feed()
            # and _resolve().
            self._maybe_chunk = data
            self._maybe_last = last
            self._in_multibulk = False
        return b""

    def _finish_begun(self, data: bytes, out: list[list[bytes]]) -> bytes:
        """A request begun in an earlier read goes on in ``data``: its
        headers are checked (from where the last read stopped) before
        hiredis gets its bytes; the rest of ``data`` goes back to feed(),
        a chunk starting a request.  (Walking every header of a pipeline
        split across reads made a client pipelining small requests hold up
        the others: bench/README.md, "Hostile clients".)"""
        partial = self._partial
        begun = len(partial)
        partial += data
        if partial[0] != 42:  # '*': inline text after arrays, not a request begun
            return self._reparse(bytes(partial), len(out), out)
        try:
            end = self._scan(partial, one=True)
        except ProtocolError:
            return self._reparse(bytes(partial), len(out), out)
        if not end:  # not complete yet: hiredis holds it, we its bytes
            self._give(data)
            return b""
        self._give(data[:end - begun])
        try:
            request = self._gets()
        except hiredis.ProtocolError:
            request = None
        if type(request) is not list or not all(type(arg) is bytes for arg in request):
            return self._reparse(bytes(partial), len(out), out)  # (not a request array)
        if request:
            out.append(request)
        partial.clear()
        self._in_multibulk = False
        return data[end - begun:]

    def _reparse(self, stream: bytes, first: int, out: list[list[bytes]]) -> bytes:
        """hiredis met something that is not a request array in ``stream``
        (the bytes it was given since its last complete request): parse
        the arrays at its start here instead, as Redis does, and hand what
        follows them back to feed() as inline text, or raise Redis's error.
        Rare, so plain Python; hiredis starts afresh after it."""
        del out[first:]
        start = self._scan(stream, out)
        self._new_reader()
        self._partial.clear()
        self._resume = None
        rest = stream[start:]
        if rest[:1] == b"*":  # an incomplete request at the end
            self._partial += rest
            self._give(rest)
            return b""
        self._in_multibulk = False
        return rest

    def _check_partial(self) -> None:
        """Validate the headers of the buffered, incomplete request (and
        drop the complete requests before it from our copy)."""
        buf = self._partial
        del buf[:self._scan(buf)]
        if not buf:
            self._in_multibulk = False  # every request in it was complete

    def _scan(self, buf: bytes | bytearray, requests: list[list[bytes]] | None = None,
              one: bool = False) -> int:
        """Walk the request arrays at the start of ``buf`` by their headers
        and return where the first incomplete one, or the first byte that
        is not '*' (inline text), starts.  Raises ProtocolError at a header
        Redis refuses.  With ``requests``, appends each complete request's
        arguments to it.  With ``one``, stops after the first request."""
        size = len(buf)
        start = 0
        resume = None
        if buf is self._partial and requests is None:
            resume, self._resume = self._resume, None
        while start < size and buf[start] == 42:  # '*'
            if resume is not None:  # the request begun in an earlier read
                pos, left = resume
                resume = None
            else:
                pos = start
                header = _COUNT_HEADER.match(buf, pos)
                if header is not None:
                    count = int(header.group(1))
                    end = header.end() - 2
                else:
                    end = buf.find(b"\r\n", pos)
                    if end < 0:
                        if size - pos > MAX_INLINE:
                            raise ProtocolError("Protocol error: too big mbulk count string")
                        break
                    count = _header_int(buf, pos + 1, end, "invalid multibulk length")
                if count > MAX_MULTIBULK:
                    raise ProtocolError("Protocol error: invalid multibulk length")
                pos = end + 2
                left = count  # none for a count <= 0: skipped, as Redis
            args: list[bytes] | None = [] if requests is not None else None
            while left > 0:
                if pos >= size:
                    return self._stopped(buf, requests, start, pos, left)
                header = _BULK_HEADER.match(buf, pos)
                if header is not None:
                    length = int(header.group(1))
                    end = header.end() - 2
                else:
                    end = buf.find(b"\r\n", pos)
                    if end < 0:  # (Redis looks at a header once its line is whole)
                        if size - pos > MAX_INLINE:
                            raise ProtocolError("Protocol error: too big bulk count string")
                        return self._stopped(buf, requests, start, pos, left)
                    if buf[pos] != 36:  # '$'
                        raise ProtocolError(
                            "Protocol error: expected '$', got '%c'" % buf[pos])
                    length = _header_int(buf, pos + 1, end, "invalid bulk length")
                if length > self.max_bulk_len or length < 0:
                    raise ProtocolError("Protocol error: invalid bulk length")
                element = pos
                pos = end + 2 + length + 2  # (the CRLF after it unchecked, as Redis)
                if pos > size:
                    return self._stopped(buf, requests, start, element, left)
                if args is not None:
                    args.append(bytes(buf[end + 2:pos - 2]))
                left -= 1
            if args and requests is not None:
                requests.append(args)
            start = pos
            if one:
                break
        return start

    def _stopped(self, buf: bytes | bytearray, requests: list[list[bytes]] | None,
                 start: int, pos: int, left: int) -> int:
        """_scan met the end of ``buf`` inside the request at ``start``:
        remember where, for the next read (the caller drops the bytes
        before ``start`` from _partial)."""
        if buf is self._partial and requests is None:
            self._resume = (pos - start, left)
        return start

    def _feed_inline(self, data: bytes, out: list[list[bytes]]) -> bytes:
        buf = self._inline_text + data if self._inline_text else data
        pos = 0
        size = len(buf)
        while pos < size:
            if buf[pos] == 42:  # a multibulk request follows
                self._inline_text = b""
                return buf[pos:]
            end = buf.find(b"\n", pos)
            if end < 0:
                if size - pos > MAX_INLINE:
                    raise ProtocolError("Protocol error: too big inline request")
                self._inline_text = buf[pos:]
                return b""
            line = buf[pos:end]
            pos = end + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            args = split_inline(line)
            if args:
                out.append(args)
        self._inline_text = b""
        return b""


def _after_requests(data: bytes, out: list[list[bytes]], first: int) -> int:
    """Where the requests ``out[first:]``, which hiredis read from the start
    of ``data``, end there (empty ones, ``*0``, between them), or -1 if
    they do not add up: hiredis reads only canonical lengths, but returns a
    '+' line inside an array as bytes too, so each header's first byte is
    looked at."""
    size = len(data)
    pos = _after_empty(data, 0)
    for i in range(first, len(out)):
        request = out[i]
        if pos >= size or data[pos] != 42:  # '*'
            return -1
        pos += _header_length(len(request))
        for arg in request:
            if pos >= size or data[pos] != 36:  # '$'
                return -1
            n = len(arg)
            pos += _header_length(n) + n + 2
        pos = _after_empty(data, pos)
    return pos if pos <= size else -1


def _after_empty(data: bytes, pos: int) -> int:
    """Past the empty requests (``*0\\r\\n``, which hiredis returns as []
    and feed() drops) at ``pos``."""
    while data[pos:pos + 4] == EMPTY_ARRAY:
        pos += 4
    return pos


def _header_length(n: int) -> int:
    """Bytes of a ``*n\\r\\n`` or ``$n\\r\\n`` header."""
    length = 4
    while n >= 10:
        n //= 10
        length += 1
    return length


def _bulk_too_long(out: list[list[bytes]], first: int, limit: int) -> bool:
    """Whether a request of ``out[first:]`` has an argument over ``limit``
    (proto-max-bulk-len): possible only in a chunk longer than it, since
    an argument begun in an earlier read had its header checked then."""
    for i in range(first, len(out)):
        for arg in out[i]:
            if len(arg) > limit:
                return True
    return False


def _header_int(buf: bytes | bytearray, start: int, end: int, what: str) -> int:
    """A header's number, as strictly as Redis (and hiredis) read it: an
    optional '-', then digits without a leading zero."""
    text = bytes(buf[start:end])
    digits = text[1:] if text[:1] == b"-" else text
    if (not digits.isdigit() or len(digits) > 18
            or (digits[0] == 48 and (len(digits) > 1 or text[:1] == b"-"))):  # '0'
        raise ProtocolError(f"Protocol error: {what}")
    return int(text)


def split_inline(line: bytes) -> list[bytes]:
    """Split an inline request like Redis does: spaces, "quotes" with
    escapes, 'single quotes'."""
    if b'"' not in line and b"'" not in line:
        return line.split()
    args: list[bytes] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in b" \t":
            i += 1
        if i >= n:
            return args
        arg = bytearray()
        quote: int | None = None
        while i < n:
            c = line[i]
            if quote == 34:  # inside "..."
                if c == 92 and i + 1 < n:  # backslash
                    i += 1
                    esc = line[i]
                    if esc == 120 and i + 2 < n:  # \xHH
                        try:
                            arg.append(int(line[i + 1:i + 3], 16))
                            i += 2
                        except ValueError:
                            arg.append(esc)
                    else:
                        arg += {110: b"\n", 114: b"\r", 116: b"\t", 98: b"\b",
                                97: b"\a"}.get(esc, bytes([esc]))
                elif c == 34:
                    quote = None
                    if i + 1 < n and line[i + 1] not in b" \t":
                        raise ProtocolError("Protocol error: unbalanced quotes in request")
                else:
                    arg.append(c)
            elif quote == 39:  # inside '...'
                if c == 92 and i + 1 < n and line[i + 1] == 39:
                    i += 1
                    arg.append(39)
                elif c == 39:
                    quote = None
                    if i + 1 < n and line[i + 1] not in b" \t":
                        raise ProtocolError("Protocol error: unbalanced quotes in request")
                else:
                    arg.append(c)
            elif c in b" \t":
                break
            elif c == 34 or c == 39:
                quote = c
            else:
                arg.append(c)
            i += 1
        if quote is not None:
            raise ProtocolError("Protocol error: unbalanced quotes in request")
        args.append(bytes(arg))
