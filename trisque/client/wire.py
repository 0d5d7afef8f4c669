"""RESP for the client, with no I/O: commands to bytes, bytes to replies.

The sync and the asyncio connections share this module and differ only in
how they move bytes.  Replies are parsed by hiredis (a dependency of
trisque already), which reads RESP2 and RESP3 alike: an error reply comes
back as the typed exception of errors.py, raised by the caller.
"""

from typing import Union

import hiredis

from trisque.client.errors import ProtocolError, TrisqueError, reply_error

Arg = Union[bytes, str, int, float]


def encode_command(args: tuple[Arg, ...]) -> bytes:
    """One command as a RESP array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, bytes):
            data = arg
        elif isinstance(arg, str):
            data = arg.encode()
        elif isinstance(arg, bool):  # bool is an int: refuse the ambiguity
            raise TypeError("a command argument cannot be a bool")
        elif isinstance(arg, int):
            data = b"%d" % arg
        else:
            data = repr(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def handshake_commands(protocol: int, password: str | None,
                       username: str | None) -> list[tuple[Arg, ...]]:
    """What a new connection sends before its first command: ``HELLO 3``
    (with AUTH) for RESP3; ``AUTH`` alone for RESP2 with a password."""
    if protocol == 3:
        if password is None:
            return [("HELLO", 3)]
        return [("HELLO", 3, "AUTH", username or "default", password)]
    if password is None:
        return []
    if username is None:
        return [("AUTH", password)]
    return [("AUTH", username, password)]


class ReplyReader:
    """Feeds received bytes to hiredis and hands out complete replies."""

    _reader: hiredis.Reader

    def __init__(self) -> None:
        self._reader = hiredis.Reader()

    def feed(self, data: bytes) -> None:
        self._reader.feed(data)

    def next_reply(self) -> tuple[bool, object]:
        """``(True, reply)`` for a complete reply, ``(False, None)`` when
        more bytes are needed.  An error reply is returned as its
        exception (not raised: the connection stays usable)."""
        try:
            reply = self._reader.gets()
        except hiredis.ProtocolError as e:
            raise ProtocolError(str(e)) from None
        if reply is False:
            return False, None
        if isinstance(reply, hiredis.ReplyError):
            return True, reply_error(str(reply))
        return True, reply


def raise_if_error(reply: object) -> object:
    if isinstance(reply, TrisqueError):
        raise reply
    return reply
