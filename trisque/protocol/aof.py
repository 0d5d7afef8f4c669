"""The append-only file's records: RESP commands, bytes in and out, no I/O.

The file is a plain sequence of RESP multibulk commands, the form a client
sends, so ``redis-cli``-style tools and a text editor can read it::

    *2\\r\\n$7\\r\\nLOADJOB\\r\\n$<n>\\r\\n<serialized job>\\r\\n   a job was stored
    *2\\r\\n$6\\r\\nDELJOB\\r\\n$40\\r\\n<job id>\\r\\n            it was acked or evicted

Any other command (the keyspace's writes, later) uses the same framing
through ``command()``.  ``parse()`` reads records back and tells a file that
merely stops in the middle of a record (``Truncated``: a crash during a
write) from one with bytes that cannot be a record (``FormatError``), each
with the offset where the problem starts.
"""

from typing import Protocol

LOADJOB = b"LOADJOB"
DELJOB = b"DELJOB"
LOADJOB_HEAD = _LOADJOB_HEAD = b"*2\r\n$7\r\nLOADJOB\r\n$"
_DELJOB_HEAD = b"*2\r\n$6\r\nDELJOB\r\n$40\r\n"
MAX_ARGS = 1024 * 1024
MAX_HEADER = 32  # bytes in a "*<n>" or "$<n>" line, CRLF included

# A parsed record's arguments; a LOADJOB's payload is a (start, stop) span.
Record = list[bytes | tuple[int, int]]


class RecordBuffer(Protocol):
    """What ``parse`` reads: bytes, bytearray or an mmap of the file."""

    def __getitem__(self, index: slice, /) -> bytes | bytearray: ...

    def find(self, sub: bytes, start: int, end: int, /) -> int: ...


class FormatError(ValueError):
    """Bytes at ``offset`` are not a well-formed record."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"{reason} at offset {offset}")
        self.offset = offset
        self.reason = reason


class Truncated(Exception):
    """The record starting at ``offset`` is cut short by the end of data."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"incomplete record at offset {offset}")
        self.offset = offset


def command(*args: bytes | str) -> bytes:
    """One command as a RESP multibulk record.  Arguments are bytes or str."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        raw = arg.encode() if isinstance(arg, str) else arg
        parts.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(parts)


def loadjob(serialized: bytes) -> bytes:
    """``LOADJOB <serialized job>``: the job as it was stored."""
    return b"%s%d\r\n%s\r\n" % (_LOADJOB_HEAD, len(serialized), serialized)


def deljob(job_id: bytes) -> bytes:
    """``DELJOB <id>``: the job is gone (acked, evicted or freed)."""
    if len(job_id) == 40:
        return b"%s%s\r\n" % (_DELJOB_HEAD, job_id)
    return command(DELJOB, job_id)


def parse(buf: RecordBuffer, pos: int, end: int) -> tuple[Record, int]:
    """Read the record at ``buf[pos:end]``.

    ``buf`` is anything sliceable with ``find`` (bytes, bytearray, mmap).
    Returns ``(argv, next_pos)``; LOADJOB records come back as
    ``[b"LOADJOB", (start, stop)]``, the payload as a span of ``buf`` so a
    large file is not copied twice.  Raises ``Truncated`` if the record does
    not end before ``end`` and ``FormatError`` if it cannot be a record.
    """
    if buf[pos:pos + 18] == _LOADJOB_HEAD:
        start = _line_end(buf, pos, pos + 18, end, "bulk length")
        length = _number(buf, pos + 18, start - 2, pos, "bulk length")
        stop = start + length
        if stop + 2 > end:
            raise Truncated(pos)
        if buf[stop:stop + 2] != b"\r\n":
            raise FormatError(stop, "missing CRLF after the LOADJOB payload")
        return [LOADJOB, (start, stop)], stop + 2
    if buf[pos:pos + 1] != b"*":
        raise FormatError(pos, "expected '*' (start of a command)")
    i = _line_end(buf, pos, pos + 1, end, "argument count")
    argc = _number(buf, pos + 1, i - 2, pos, "argument count")
    if not 1 <= argc <= MAX_ARGS:
        raise FormatError(pos, f"bad argument count {argc}")
    argv: Record = []
    for _ in range(argc):
        if i >= end:
            raise Truncated(pos)
        if buf[i:i + 1] != b"$":
            raise FormatError(i, "expected '$' (an argument)")
        start = _line_end(buf, pos, i + 1, end, "bulk length")
        length = _number(buf, i + 1, start - 2, i, "bulk length")
        stop = start + length
        if stop + 2 > end:
            raise Truncated(pos)
        if buf[stop:stop + 2] != b"\r\n":
            raise FormatError(stop, "missing CRLF after an argument")
        argv.append(bytes(buf[start:stop]))
        i = stop + 2
    return argv, i


def _line_end(buf: RecordBuffer, record: int, start: int, end: int, what: str) -> int:
    """Offset just past the CRLF ending the header line that starts at
    ``start``; Truncated if the data ends first."""
    limit = min(end, start + MAX_HEADER)
    nl = buf.find(b"\r\n", start, limit)
    if nl < 0:
        if limit == end:
            raise Truncated(record)
        raise FormatError(start, f"{what} line too long")
    return nl + 2


def _number(buf: RecordBuffer, start: int, stop: int, offset: int, what: str) -> int:
    text = bytes(buf[start:stop])
    if not text.isdigit():
        raise FormatError(offset, f"bad {what} {text[:20]!r}")
    return int(text)
