"""Job IDs in Disque's format.

``D-`` + the first 8 hex digits of the creating node's ID + ``-`` + 24
characters from the base64 alphabet + ``-`` + 4 hex digits: the TTL in
minutes (at most 65535), odd when the job has a RETRY, even for at-most-once
jobs.  Any node can tell from the ID alone whether a job it never saw may
still need an ack, and until when.
"""

import os
from typing import Callable, Final

ID_LEN: Final = 40
_RANDOM_POOL_BYTES: Final = 24 * 4096
# Each random byte becomes one character of the base64 alphabet, its low 6
# bits (uniform, as 64 divides 256): one translate() of the pool, ~3x
# fewer instructions than base64-encoding 18 bytes per ID (binascii's
# b2a_base64, ~300 instructions an ID).
_ALPHABET: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_CHAR_OF_BYTE: Final = bytes([_ALPHABET[byte & 63] for byte in range(256)])


_NO_KEY: Final = -(1 << 62)


class IdGenerator:
    """Makes unique IDs for one node; random bytes are fetched in bulk
    because one os.urandom call per job is a syscall we need not pay."""

    prefix: bytes
    random_bytes: Callable[[int], bytes]
    _pool: bytes
    _at: int
    _suffixes: dict[int, bytes]
    _last_key: int
    _last_suffix: bytes
    _reply_prefix: bytes
    _last_reply_suffix: bytes

    def __init__(self, node_id: str, random_bytes: Callable[[int], bytes] = os.urandom) -> None:
        self.prefix = b"D-" + node_id[:8].encode() + b"-"
        self._reply_prefix = b"+" + self.prefix  # (see new_reply)
        self.random_bytes = random_bytes
        # The random middles of 4096 IDs as one text of the base64
        # alphabet (144 random bits an ID): new() cuts the next 24
        # characters and joins prefix, middle and TTL suffix in one
        # allocation.
        self._pool = b""
        self._at = 0
        self._suffixes = {}  # ttl_s, or -ttl_s without retry -> b"-hhhh"
        # The last one used (most jobs have the TTL of the job before): a
        # key no TTL makes until then.
        self._last_key = _NO_KEY
        self._last_suffix = b""
        self._last_reply_suffix = b""

    def new(self, ttl_s: int, retry_s: int) -> bytes:
        middle = self._middle()
        if (ttl_s if retry_s > 0 else -ttl_s) != self._last_key:
            self._use_suffix(ttl_s, retry_s)
        return b"%s%s%s" % (self.prefix, middle, self._last_suffix)

    def new_reply(self, ttl_s: int, retry_s: int) -> bytes:
        """A new ID as ADDJOB's reply, ``+<ID>\r\n``: its ``[1:-2]`` is the
        ID (one build and a slice, where new() and the reply's own format
        were two builds)."""
        middle = self._middle()
        if (ttl_s if retry_s > 0 else -ttl_s) != self._last_key:
            self._use_suffix(ttl_s, retry_s)
        return b"%s%s%s" % (self._reply_prefix, middle, self._last_reply_suffix)

    def _middle(self) -> bytes:
        at = self._at
        if at >= len(self._pool):
            self._pool = self.random_bytes(_RANDOM_POOL_BYTES).translate(_CHAR_OF_BYTE)
            at = 0
        self._at = at + 24
        return self._pool[at:at + 24]

    def _use_suffix(self, ttl_s: int, retry_s: int) -> None:
        key = ttl_s if retry_s > 0 else -ttl_s
        found = self._suffixes.get(key)
        if found is None:
            if len(self._suffixes) >= 1024:
                self._suffixes.clear()
            found = self._suffixes[key] = b"-%04x" % ttl_digits(ttl_s, retry_s)
        self._last_suffix = found
        self._last_reply_suffix = found + b"\r\n"
        self._last_key = key


def ttl_digits(ttl_s: int, retry_s: int) -> int:
    minutes = min(ttl_s // 60, 0xFFFF)
    return (minutes | 1) if retry_s > 0 else (minutes & 0xFFFE)


def is_valid(job_id: bytes) -> bool:
    return (len(job_id) == ID_LEN and job_id[0] == 68 and job_id[1] == 45
            and job_id[10] == 45 and job_id[35] == 45)


def _ttl_field(job_id: bytes) -> int:
    """The 4 TTL digits as a number.  IDs are only shape-checked, so a
    client may send any bytes here: a non-hex digit counts as 0 (as in
    Disque), never an exception."""
    value = 0
    for c in job_id[36:40]:
        value = value * 16 + _HEX_VALUE.get(c, 0)
    return value


_HEX_VALUE: Final[dict[int, int]] = {ord(c): int(c, 16) for c in "0123456789abcdefABCDEF"}


def ttl_s_from_id(job_id: bytes) -> int:
    """The TTL, in seconds, the ID was created with (rounded down to minutes)."""
    return _ttl_field(job_id) * 60


def has_retry(job_id: bytes) -> bool:
    """Odd TTL digits: the job may be requeued, so acks matter."""
    return _ttl_field(job_id) & 1 == 1


def node_prefix(job_id: bytes) -> bytes:
    return job_id[2:10]
