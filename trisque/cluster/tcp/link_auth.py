"""One bus link's side of cluster-secret authentication.

Each end of a link sends a hello with a fresh random nonce as soon as the
link is up, and sends nothing else until the other's hello has come: its
frames wait in the link's queue.  From then on what it sends leaves in
envelopes tagged for the peer's nonce and numbered from 0; what it
receives must be envelopes tagged for its own nonce, numbered from 0 in
order (protocol/bus.py, "Authenticated links").  Anything else raises
bus.AuthError and the link is closed (cluster/bus_guard.py counts and logs
it).
"""

from collections.abc import Callable
from typing import Any

from ...protocol import bus


class LinkAuth:
    __slots__ = ("secret", "nonce", "verify_mac", "alt_mac", "sign_mac", "seq_out", "seq_in",
                 "opened_ms")

    def __init__(self, secret: bytes, nonce: bytes, also_accepted: bytes | None = None,
                 opened_ms: int = 0) -> None:
        self.opened_ms = opened_ms  # the peer must prove the secret soon after
        self.secret = secret
        self.nonce = nonce  # ours: the peer tags what it sends us with it
        self.verify_mac = bus.link_mac(secret, nonce)
        # cluster-secret-accept: tags by this secret pass too (rotation)
        self.alt_mac = bus.link_mac(also_accepted, nonce) if also_accepted else None
        self.sign_mac: Any = None  # once the peer's hello has come
        self.seq_out = 0  # the number of our next envelope
        self.seq_in = 0  # the number the peer's next envelope must carry

    def hello(self) -> bytes:
        return bus.hello(self.nonce)

    def ready(self) -> bool:
        """The peer's hello came: frames may leave."""
        return self.sign_mac is not None

    def proven(self) -> bool:
        """The peer sent an envelope with a good tag: it knows the secret."""
        return self.seq_in > 0

    def seal(self, frames: list[bytes]) -> bytes:
        """``frames`` as the envelope(s) to send."""
        data, self.seq_out = bus.seal_frames(self.sign_mac, self.seq_out, frames)
        return data

    def read(self, link: Any, buf: bytes | bytearray, max_frame: int,
             receive: Callable[[bytes, Any], None]) -> int:
        """Hand every frame of the whole envelopes at the start of ``buf``
        to ``receive(frame, link)`` (until the link closes); returns how
        many bytes were used.  Raises bus.AuthError or bus.BusError."""
        pos = 0
        if self.sign_mac is None:
            peer_nonce = bus.read_hello(buf)
            if peer_nonce is None:
                return 0
            if peer_nonce == self.nonce:
                raise bus.AuthError("our own hello sent back")
            self.sign_mac = bus.link_mac(self.secret, peer_nonce)
            pos = bus.HELLO.size
        size = len(buf)
        while not link.closed:
            length = bus.sealed_length(buf, pos, max_frame)
            if length is None or size - pos < length:
                break
            if pos == 0 and length == size and isinstance(buf, bytes):
                envelope = buf
            else:
                envelope = bytes(buf[pos:pos + length])
            frames = bus.unseal(self.verify_mac, envelope, self.seq_in, max_frame,
                                self.alt_mac)
            self.seq_in += 1
            pos += length
            for frame in frames:
                receive(frame, link)
                if link.closed:
                    break
        return pos
