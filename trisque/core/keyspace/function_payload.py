"""FUNCTION DUMP's payload, in Redis 7.0's format, so a dump moves between
redis-server and trisque either way (functions.c functionDumpCommand,
rdb.c rdbFunctionLoad):

    per library: 0xF5 (RDB_OPCODE_FUNCTION2), the library's code as an
                 RDB string (length-prefixed; LZF-compressed when read)
    footer:      the RDB version (2 bytes, little-endian: 10)
                 CRC-64/Jones of everything before it (8 bytes, little-endian)

We write the strings uncompressed (valid RDB); reading takes the LZF form
redis-server writes for longer code, and 7.0's release candidates' 0xF6
form (name, engine, description, code).
"""

from __future__ import annotations

RDB_VERSION = 10
OPCODE_FUNCTION2 = 245
OPCODE_FUNCTION_RC = 246  # 7.0 rc1/rc2: name, engine, [description], code
BAD_PAYLOAD = "ERR DUMP payload version or checksum are wrong"


def _crc64_table() -> list[int]:
    # Jones polynomial 0xad93d23594c935a9, reflected (Redis's crc64.c)
    poly = 0x95AC9329AC4BC9B5
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC64 = _crc64_table()


def crc64(data: bytes, crc: int = 0) -> int:
    table = _CRC64
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


def _length(n: int) -> bytes:
    if n < 1 << 6:
        return bytes((n,))
    if n < 1 << 14:
        return bytes((0x40 | (n >> 8), n & 0xFF))
    if n < 1 << 32:
        return b"\x80" + n.to_bytes(4, "big")
    return b"\x81" + n.to_bytes(8, "big")


def dump(codes: list[bytes]) -> bytes:
    """The payload of these libraries' code, in order."""
    parts = [bytes((OPCODE_FUNCTION2,)) + _length(len(code)) + code for code in codes]
    body = b"".join(parts) + RDB_VERSION.to_bytes(2, "little")
    return body + crc64(body).to_bytes(8, "little")


class PayloadError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def verify(payload: bytes) -> None:
    """Redis's verifyDumpPayload: the footer's version and checksum."""
    if len(payload) < 10:
        raise PayloadError(BAD_PAYLOAD)
    version = int.from_bytes(payload[-10:-8], "little")
    if version > RDB_VERSION or crc64(payload[:-8]) != int.from_bytes(payload[-8:], "little"):
        raise PayloadError(BAD_PAYLOAD)


class _Reader:
    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.end = len(data) - 10  # the footer

    def take(self, n: int) -> bytes:
        if self.pos + n > self.end:
            raise EOFError
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def length(self) -> tuple[int, bool]:
        """An RDB length; True with it if it is a special encoding."""
        first = self.take(1)[0]
        kind = first >> 6
        if kind == 0:
            return first & 0x3F, False
        if kind == 1:
            return ((first & 0x3F) << 8) | self.take(1)[0], False
        if kind == 3:
            return first & 0x3F, True
        if first == 0x80:
            return int.from_bytes(self.take(4), "big"), False
        if first == 0x81:
            return int.from_bytes(self.take(8), "big"), False
        raise EOFError

    def string(self) -> bytes:
        n, special = self.length()
        if not special:
            return self.take(n)
        if n in (0, 1, 2):  # an integer, 1, 2 or 4 bytes
            return b"%d" % int.from_bytes(self.take(1 << n), "little", signed=True)
        if n == 3:  # LZF
            compressed, _ = self.length()
            size, _ = self.length()
            return lzf_decompress(self.take(compressed), size)
        raise EOFError


def load(payload: bytes) -> list[bytes]:
    """The libraries' code in a verified payload; PayloadError with
    Redis's text if it is not a functions payload."""
    reader = _Reader(payload)
    codes = []
    while reader.pos < reader.end:
        try:
            opcode = reader.take(1)[0]
        except EOFError:
            raise PayloadError("ERR can not read data type") from None
        if opcode == OPCODE_FUNCTION2:
            try:
                codes.append(reader.string())
            except (EOFError, ValueError):
                raise PayloadError("ERR Failed loading library payload") from None
        elif opcode == OPCODE_FUNCTION_RC:
            codes.append(_load_rc(reader))
        else:
            raise PayloadError("ERR given type is not a function")
    return codes


def _load_rc(reader: _Reader) -> bytes:
    step = "library name"
    try:
        name = reader.string()
        step = "engine name"
        engine = reader.string()
        step = "library description indicator"
        has_desc, _ = reader.length()
        step = "library description"
        if has_desc:
            reader.string()
        step = "library blob"
        blob = reader.string()
    except (EOFError, ValueError):
        raise PayloadError(f"ERR Failed loading {step}") from None
    return b"#!%s name=%s\n%s" % (engine, name, blob)


def lzf_decompress(data: bytes, size: int) -> bytes:
    """liblzf's format: literal runs and back references."""
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        ctrl = data[i]
        i += 1
        if ctrl < 32:  # a literal run of ctrl + 1 bytes
            run = ctrl + 1
            if i + run > n:
                raise ValueError("lzf: literal past the end")
            out += data[i:i + run]
            i += run
            continue
        length = ctrl >> 5
        if length == 7:
            length += data[i]
            i += 1
        back = len(out) - ((ctrl & 0x1F) << 8) - data[i] - 1
        i += 1
        if back < 0:
            raise ValueError("lzf: reference before the start")
        for _ in range(length + 2):  # may overlap what it writes
            out.append(out[back])
            back += 1
    if len(out) != size:
        raise ValueError("lzf: wrong size")
    return bytes(out)
