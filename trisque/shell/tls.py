"""TLS for the client port and the cluster bus, with the stdlib ``ssl``.

- ``ClientTls`` (tls-port) and ``BusTls`` (tls-cluster) build their
  ``ssl.SSLContext`` from the config at start (a missing or unreadable
  file stops start-up with an error naming it), wrap accepted or connected
  sockets, and keep their handshake deadlines and failure logs.
- ``TlsStream`` is TLS without I/O: an ``ssl.SSLObject`` between two
  memory BIOs, fed the bytes received and asked for the bytes to send.
- ``TlsSocket`` puts a stream inside a plain non-blocking socket with the
  socket's own ``recv``/``send`` contract, so the event loop's clients
  (connection.py) and bus links (cluster/tcp/transport.py) are served TLS in
  the same epoll set, with the same code, as plain ones.  Every byte the
  kernel gave is decrypted in the same ``recv``, so no plaintext waits
  inside the SSL object where epoll would not signal it (the ``pending()``
  trap of a non-blocking SSLSocket).

The handshake runs inside those ``recv`` and ``send`` calls, in the loops'
turns, as bytes arrive; nothing blocks.  A peer that has not finished it
``tls-handshake-timeout-ms`` after connecting is dropped
(``HandshakeDeadlines``), so a client that stalls mid-handshake holds
nothing but its socket meanwhile.  A failed handshake is logged with the
peer's address and OpenSSL's reason and closes that connection only.
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import trio

from ..core.admin.config_values import ConfigError
from . import log

RECORD_MAX = 16 * 1024  # the largest TLS record's plaintext: one read's worth
ENCRYPT_CHUNK = 64 * 1024  # plaintext encrypted per step of a send
DEADLINE_CHECK_S = 0.1  # how often stalled handshakes are looked for
BUS_FAILURE_LOG_PERIOD_MS = 10_000  # a failing peer's handshakes: logged this often

_PROTOCOLS = {"tlsv1.2": ssl.TLSVersion.TLSv1_2, "tlsv1.3": ssl.TLSVersion.TLSv1_3}
_AUTH_CLIENTS = {"yes": ssl.CERT_REQUIRED, "optional": ssl.CERT_OPTIONAL,
                 "no": ssl.CERT_NONE}


class TlsError(Exception):
    """The handshake or a record failed: this connection must go."""


class TlsStream:
    """One TLS connection's state, fed and drained by the caller.

    ``receive(ciphertext) -> plaintext`` and ``encrypt(plaintext) ->
    ciphertext``; ``take()`` gives what the stream has to send on its own
    (handshake messages, session tickets, alerts).  Ciphertext comes out in
    order: whatever ``encrypt`` and ``take`` return goes to the socket in
    the order they returned it.
    """

    __slots__ = ("_obj", "_in", "_out", "established", "_held", "peer_closed")

    def __init__(self, context: ssl.SSLContext, server_side: bool) -> None:
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self._obj = context.wrap_bio(self._in, self._out, server_side=server_side)
        self.established = False
        self._held: list[bytes] = []  # plaintext to send once established
        self.peer_closed = False  # close_notify received: read nothing more
        if not server_side:
            self._handshake()  # the ClientHello, ready for take()

    def receive(self, data: bytes) -> bytes:
        """Decrypt what arrived: b"" while the handshake runs or a record
        is incomplete.  Raises TlsError on a failed handshake or a bad
        record."""
        if self.peer_closed:
            return b""  # the TCP close follows; nothing counts after it
        self._in.write(data)
        if not self.established and not self._handshake():
            return b""
        obj = self._obj
        chunks = []
        try:
            while True:
                chunk = obj.read(RECORD_MAX)
                if not chunk:  # (how SSLObject says close_notify came)
                    self.peer_closed = True
                    break
                chunks.append(chunk)
                if not self._in.pending and not obj.pending():
                    break
        except ssl.SSLWantReadError:
            pass  # the rest of a record is still on its way
        except ssl.SSLZeroReturnError:
            self.peer_closed = True
        except ssl.SSLError as exc:
            raise TlsError(describe(exc)) from None
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def encrypt(self, data: bytes | memoryview) -> bytes:
        """The ciphertext to send for ``data``, after anything the stream
        had to send already; before the handshake ends, ``data`` waits."""
        if self.established:
            self._obj.write(data)
        else:
            self._held.append(bytes(data))
        return self._out.read()

    def take(self) -> bytes:
        """The ciphertext the stream produced on its own (b"": none)."""
        return self._out.read() if self._out.pending else b""

    @property
    def has_output(self) -> bool:
        return self._out.pending > 0

    def goodbye(self) -> bytes:
        """A close_notify alert to send before closing (b"" if none is due)."""
        if not self.established:
            return b""
        try:
            self._obj.unwrap()
        except (ssl.SSLError, ValueError):
            pass  # (want-read: the peer's own close_notify is not awaited)
        return self.take()

    def _handshake(self) -> bool:
        try:
            self._obj.do_handshake()
        except ssl.SSLWantReadError:
            return False
        except ssl.SSLError as exc:
            raise TlsError(describe(exc)) from None
        self.established = True
        held, self._held = self._held, []
        for data in held:
            self._obj.write(data)
        return True


def describe(exc: ssl.SSLError) -> str:
    """Why a handshake failed, in OpenSSL's words (e.g. 'certificate verify
    failed: unable to get local issuer certificate')."""
    verify = getattr(exc, "verify_message", None)
    reason = exc.reason or exc.__class__.__name__
    text = reason.replace("_", " ").lower() if reason.isupper() else reason
    return f"{text}: {verify}" if verify else text


# ------------------------------------------------------------ the socket

class TlsSocket:
    """A plain non-blocking socket with TLS inside, for the loops that
    already serve plain ones: ``recv`` gives plaintext (BlockingIOError
    while there is none yet: the handshake runs, a record is incomplete),
    ``send`` takes plaintext, and every other attribute is the socket's
    (``fileno``, ``setsockopt``...), so epoll watches the same descriptor.

    ``send`` keeps the contract of OpenSSL's non-blocking SSL_write: when
    it returns less than it was given, the caller sends the rest again
    later (with more after it, if it likes), as the loops do with their
    unsent buffers anyway.  Ciphertext the kernel did not take waits here;
    the plaintext it carries is reported sent only once it has all left,
    so the caller keeps watching for EPOLLOUT meanwhile.

    A failed handshake is reported to the owner (peer and reason) and
    raised as ConnectionAbortedError, an OSError: the loops close the
    connection, as for any socket error.
    """

    __slots__ = ("_raw", "_stream", "_owner", "peer", "_pending", "_owed",
                 "on_timeout")

    def __init__(self, raw: socket.socket, stream: TlsStream, owner: _TlsUse,
                 peer: str, on_timeout: Callable[[], None]) -> None:
        self._raw = raw
        self._stream = stream
        self._owner = owner
        self.peer = peer
        self._pending = b""  # ciphertext the kernel has not taken yet
        self._owed = 0  # plaintext bytes in _pending not yet reported sent
        self.on_timeout = on_timeout  # closes the connection in its loop
        if stream.has_output:  # a client's ClientHello: the socket is new
            self._pending = stream.take()
            self._push()  # (an OSError here: nothing registered yet)
        owner.deadlines.start(self, _now_ms())

    def __getattr__(self, name: str) -> object:
        return getattr(self._raw, name)

    @property
    def established(self) -> bool:
        return self._stream.established

    def recv(self, size: int) -> bytes:
        stream = self._stream
        if stream.peer_closed:
            return b""  # (its TCP close may never come: the end is now)
        raw = self._raw.recv(size)
        if not raw:
            if not stream.established:
                self._failed("the connection was closed during the handshake "
                             "(a peer without TLS?)")
            return b""
        handshaking = not stream.established
        try:
            data = stream.receive(raw)
        except TlsError as exc:
            self._pending += stream.take()  # the alert that tells the peer why
            try:
                self._push()
            except OSError:
                pass
            self._failed(str(exc))
            raise ConnectionAbortedError(str(exc)) from None
        if handshaking and stream.established:
            self._owner.deadlines.done(self)
        if stream.has_output or self._pending:
            # handshake messages, session tickets: sent now (what the
            # kernel does not take leaves with the next send)
            self._pending += stream.take()
            self._push()
        if not data:
            if stream.peer_closed:
                return b""  # close_notify: the end, as a TCP close
            raise BlockingIOError
        return data

    def send(self, data: bytes | memoryview) -> int:
        sent = 0
        if self._pending:
            if not self._push():
                return 0
            sent, self._owed = min(self._owed, len(data)), 0
        total = len(data)
        while sent < total:
            # a chunk at a time: at most one chunk's ciphertext waits here
            # beside the caller's own unsent plaintext
            chunk = data[sent:sent + ENCRYPT_CHUNK]
            self._pending = self._stream.encrypt(chunk)
            if not self._push():
                self._owed = len(chunk)
                return sent
            sent += len(chunk)
        return total

    def close(self) -> None:
        """Close, with a close_notify first if the kernel takes it now."""
        self._owner.deadlines.done(self)
        if self._stream.established and not self._pending:
            try:
                self._raw.send(self._stream.goodbye())
            except OSError:
                pass
        self._raw.close()

    def expire(self) -> None:
        """The handshake deadline passed."""
        self._failed(f"not finished within {self._owner.deadlines.timeout_ms} ms")
        self.on_timeout()

    def _push(self) -> bool:
        """Send pending ciphertext; True once none is left."""
        pending = self._pending
        while pending:
            try:
                n = self._raw.send(pending)
            except BlockingIOError:
                break
            pending = pending[n:]
        self._pending = pending
        return not pending

    def _failed(self, reason: str) -> None:
        self._owner.deadlines.done(self)
        self._owner.failed(self.peer, reason)


def _nothing() -> None:
    pass


def _now_ms() -> float:
    return time.monotonic() * 1000


# ------------------------------------------------------------ deadlines

class HandshakeDeadlines:
    """Connections whose handshake must end by a deadline.  All share one
    timeout, so they expire in the order they started (a dict keeps it):
    finding the expired ones costs only those."""

    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        self._due_ms: dict[TlsSocket, float] = {}

    def __len__(self) -> int:
        return len(self._due_ms)

    def start(self, item: TlsSocket, now_ms: float) -> None:
        self._due_ms[item] = now_ms + self.timeout_ms

    def done(self, item: TlsSocket) -> None:
        self._due_ms.pop(item, None)

    def expired(self, now_ms: float) -> list[TlsSocket]:
        gone = []
        for item, due_ms in self._due_ms.items():
            if due_ms > now_ms:
                break
            gone.append(item)
        for item in gone:
            del self._due_ms[item]
        return gone


async def enforce_deadlines(deadlines: HandshakeDeadlines) -> None:
    """Drop every connection whose handshake outlived its deadline."""
    while True:
        await trio.sleep(DEADLINE_CHECK_S)
        if len(deadlines):
            for item in deadlines.expired(_now_ms()):
                item.expire()


# -------------------------------------------------------------- contexts

@dataclass(frozen=True)
class TlsSettings:
    """The tls-* directives (Config's attributes come from the directive
    table, unknown to a type checker: read here once, typed)."""

    port: int
    cert_file: str
    key_file: str
    key_file_pass: str
    ca_cert_file: str
    cluster_ca_cert_file: str
    auth_clients: str  # yes | no | optional
    cluster: bool
    protocols: str
    ciphers: str
    handshake_timeout_ms: int

    @classmethod
    def from_config(cls, config: object) -> TlsSettings:
        def get(name: str) -> Any:
            return getattr(config, "tls_" + name)
        return cls(port=int(get("port")), cert_file=str(get("cert_file")),
                   key_file=str(get("key_file")), key_file_pass=str(get("key_file_pass")),
                   ca_cert_file=str(get("ca_cert_file")),
                   cluster_ca_cert_file=str(get("cluster_ca_cert_file")),
                   auth_clients=str(get("auth_clients")), cluster=bool(get("cluster")),
                   protocols=str(get("protocols")), ciphers=str(get("ciphers")),
                   handshake_timeout_ms=int(get("handshake_timeout_ms")))


def _readable(directive: str, path: str) -> None:
    """ConfigError naming the directive and the file unless it can be read."""
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as exc:
        raise ConfigError(f"{directive} {path}: {exc.strerror or exc}") from None


def _load_identity(context: ssl.SSLContext, config: TlsSettings) -> None:
    """This node's certificate and key (tls-cert-file, tls-key-file)."""
    cert, key = config.cert_file, config.key_file
    if not cert:
        raise ConfigError("TLS needs tls-cert-file (this node's certificate)")
    if not key:
        raise ConfigError("TLS needs tls-key-file (this node's private key)")
    _readable("tls-cert-file", cert)
    _readable("tls-key-file", key)
    try:
        # (a password, even empty, so that an encrypted key never prompts
        # on a terminal)
        context.load_cert_chain(cert, key, password=config.key_file_pass)
    except ssl.SSLError as exc:
        probe = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        try:
            probe.load_verify_locations(cafile=cert)
        except ssl.SSLError:
            raise ConfigError(f"tls-cert-file {cert}: no PEM certificate could be "
                              f"read from it ({describe(exc)})") from None
        raise ConfigError(f"tls-key-file {key}: the private key could not be loaded, "
                          f"is encrypted (tls-key-file-pass) or does not match "
                          f"tls-cert-file {cert} ({describe(exc)})") from None


def _load_ca(context: ssl.SSLContext, config: TlsSettings, why: str,
             bus: bool = False) -> None:
    """The CA that signs the certificates peers must show: for the bus,
    tls-cluster-ca-cert-file if set (nodes' CA apart from clients', so a
    client's certificate opens no bus link), else tls-ca-cert-file."""
    directive, ca = "tls-ca-cert-file", config.ca_cert_file
    if bus and config.cluster_ca_cert_file:
        directive, ca = "tls-cluster-ca-cert-file", config.cluster_ca_cert_file
    if not ca:
        raise ConfigError(f"{why} needs tls-ca-cert-file (the CA that signs the "
                          f"certificates peers show)")
    _readable(directive, ca)
    try:
        context.load_verify_locations(cafile=ca)
    except ssl.SSLError as exc:
        raise ConfigError(f"{directive} {ca}: no PEM certificate could be read "
                          f"from it ({describe(exc)})") from None


def _settings(context: ssl.SSLContext, config: TlsSettings) -> None:
    """tls-protocols and tls-ciphers, shared by every context."""
    words = config.protocols.lower().split()
    unknown = [w for w in words if w not in _PROTOCOLS]
    if unknown or not words:
        raise ConfigError(f"tls-protocols: '{config.protocols}' must list "
                          f"TLSv1.2 and/or TLSv1.3")
    versions = sorted(_PROTOCOLS[w] for w in words)
    context.minimum_version = versions[0]
    context.maximum_version = versions[-1]
    if config.ciphers:
        try:
            context.set_ciphers(config.ciphers)
        except ssl.SSLError:
            raise ConfigError(f"tls-ciphers: no cipher matches "
                              f"'{config.ciphers}'") from None
    context.options |= ssl.OP_NO_RENEGOTIATION | ssl.OP_NO_COMPRESSION


def server_context(config: TlsSettings, verify_mode: ssl.VerifyMode, why: str,
                   bus: bool = False) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _settings(context, config)
    _load_identity(context, config)
    context.verify_mode = verify_mode
    if verify_mode != ssl.CERT_NONE:
        _load_ca(context, config, why, bus)
    elif config.ca_cert_file:
        _load_ca(context, config, why, bus)  # still checked: a typo shows now
    return context


def bus_client_context(config: TlsSettings) -> ssl.SSLContext:
    """For links we open: the peer's certificate must come from our CA.
    Its name is not checked (peers are reached by the IP gossip gives,
    as Redis's cluster bus does); the CA is what vouches for a node."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _settings(context, config)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_REQUIRED
    _load_identity(context, config)
    _load_ca(context, config, "tls-cluster yes", bus=True)
    return context


# ------------------------------------------------------------- the two uses

class _TlsUse(Protocol):
    """What a TlsSocket needs from its owner (ClientTls or BusTls)."""

    deadlines: HandshakeDeadlines

    def failed(self, peer: str, reason: str) -> None: ...


class ClientTls:
    """The TLS client port (tls-port): its context, its handshakes in
    progress and their failures."""

    def __init__(self, config: TlsSettings) -> None:
        self.context = self.prepare(config)()
        self.deadlines = HandshakeDeadlines(config.handshake_timeout_ms)
        self.count_failure: Callable[[], None] = _nothing  # INFO's tls_handshake_failures

    def prepare(self, config: TlsSettings) -> Callable[[], ssl.SSLContext]:
        """Read the files now (ConfigError if refused); the returned call
        puts the new context in place for the connections accepted next."""
        context = server_context(config, _AUTH_CLIENTS[config.auth_clients],
                                 f"tls-auth-clients {config.auth_clients}")

        def adopt() -> ssl.SSLContext:
            self.context = context
            return context
        return adopt

    def wrap(self, sock: socket.socket, peer: str,
             on_timeout: Callable[[], None]) -> TlsSocket:
        """``sock``, just accepted, as a TLS server socket."""
        return TlsSocket(sock, TlsStream(self.context, server_side=True), self,
                         peer, on_timeout)

    def failed(self, peer: str, reason: str) -> None:
        """A client's handshake failed: logged at verbose level, as Redis
        does (anyone may connect and send anything)."""
        self.count_failure()
        log.verbose(f"TLS handshake with client {peer} failed: {reason}")


class BusTls:
    """tls-cluster yes: both ends of every bus link speak TLS, each node
    showing its certificate and checking the other's against the CA."""

    def __init__(self, config: TlsSettings) -> None:
        self.prepare(config)()
        self.deadlines = HandshakeDeadlines(config.handshake_timeout_ms)
        self.count_failure: Callable[[], None] = _nothing  # INFO's tls_handshake_failures
        self._logged_ms: dict[str, float] = {}  # host and reason -> when last logged
        self._unlogged: dict[str, int] = {}  # host and reason -> failures since

    def prepare(self, config: TlsSettings) -> Callable[[], None]:
        """As ClientTls.prepare, for the links opened or accepted next."""
        accept = server_context(config, ssl.CERT_REQUIRED, "tls-cluster yes", bus=True)
        connect = bus_client_context(config)

        def adopt() -> None:
            self.accept_context, self.connect_context = accept, connect
        return adopt

    def wrap(self, sock: socket.socket, peer: str, server_side: bool,
             on_timeout: Callable[[], None]) -> TlsSocket:
        """``sock``, just accepted (server_side) or connected, as TLS."""
        context = self.accept_context if server_side else self.connect_context
        return TlsSocket(sock, TlsStream(context, server_side), self, peer, on_timeout)

    def failed(self, peer: str, reason: str) -> None:
        """A bus handshake failed: a node without TLS, with a certificate
        from another CA, or a stranger.  Logged as a warning, once every
        BUS_FAILURE_LOG_PERIOD_MS per host and reason (a misconfigured node
        retries all the time), with the count of the failures not logged."""
        self.count_failure()
        host = peer.rsplit(":", 1)[0]  # (an inbound peer's port changes each time)
        key = f"{host} {reason}"
        now_ms = _now_ms()
        last_ms = self._logged_ms.get(key)
        if last_ms is not None and now_ms - last_ms < BUS_FAILURE_LOG_PERIOD_MS:
            self._unlogged[key] = self._unlogged.get(key, 0) + 1
            return
        if len(self._logged_ms) > 1000:
            self._logged_ms.clear()  # bounded: many peers, rare logs anyway
            self._unlogged.clear()
        self._logged_ms[key] = now_ms
        more = self._unlogged.pop(key, 0)
        also = f" ({more} more like it since the last report)" if more else ""
        log.warning(f"Cluster bus TLS handshake with {peer} failed: {reason}; "
                    f"link closed{also}")


def client_tls(config: object) -> ClientTls | None:
    """The client port's TLS from the node's Config, or None when tls-port
    is 0 (ConfigError: refused config)."""
    settings = TlsSettings.from_config(config)
    return ClientTls(settings) if settings.port else None


def bus_tls(config: object) -> BusTls | None:
    """The bus's TLS from the node's Config, or None unless tls-cluster yes."""
    settings = TlsSettings.from_config(config)
    return BusTls(settings) if settings.cluster else None


# Directives CONFIG SET may change while the node runs: each change reads
# every file again (a certificate rotated in place is taken by naming its
# file again), for the connections that come next.
RELOADABLE = ("tls-cert-file", "tls-key-file", "tls-key-file-pass", "tls-ca-cert-file",
              "tls-cluster-ca-cert-file", "tls-auth-clients", "tls-protocols",
              "tls-ciphers")


def reload_on_change(config: Any, uses: list[ClientTls | BusTls]) -> None:
    """Register the CONFIG SET hooks of RELOADABLE: all the new contexts
    are built before any is put in place, so a refused file (ConfigError:
    the value goes back, the client is told why) changes nothing."""
    def reload(_value: object) -> None:
        settings = TlsSettings.from_config(config)
        adopt = [use.prepare(settings) for use in uses]
        for step in adopt:
            step()
        log.notice(f"TLS certificates and settings reloaded ({settings.cert_file})")
    if uses:
        for name in RELOADABLE:
            config.on_change[name] = reload
