"""Who listens to what, and the delivery of a published message.

Redis 7.0's pubsub.c rules:

- A client's subscription count is its channels plus its patterns (shard
  channels count apart); the client is in subscribed mode while it has any
  subscription of the three kinds (``client.pubsub`` is not None), and a
  RESP2 client then may only run (P|S)(UN)SUBSCRIBE, PING, QUIT and RESET
  (node.py's dispatch).
- A message goes first to the channel's subscribers, in the order they
  subscribed, then to the subscribers of every matching pattern, pattern
  by pattern in the order patterns were first subscribed by anyone.  A
  client subscribed both ways receives it once per way.  Shard channels
  ignore patterns.
- The frames (subscribe/unsubscribe confirmations and messages) are
  pushes: RESP3's ``>`` type, RESP2's arrays; CLIENT REPLY OFF/SKIP does
  not silence them.
- A channel or pattern nobody listens to any more is forgotten.

Delivery appends to the subscriber's output; the shell sends it at the end
of the turn (``node.push``).  Nothing a delivery does changes the tables
(a subscriber over its output limit is closed by the shell afterwards), so
they are walked without copies.  The bytes of one message are built once per
protocol per publish, whatever the number of subscribers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Final

from ...protocol.resp import bulk
from ..keyspace.patterns import compile_pattern

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

# The kinds of subscription, as a frame names them.
CHANNEL: Final = 0
PATTERN: Final = 1
SHARD: Final = 2
_SUBSCRIBE = (b"$9\r\nsubscribe\r\n", b"$10\r\npsubscribe\r\n", b"$10\r\nssubscribe\r\n")
_UNSUBSCRIBE = (b"$11\r\nunsubscribe\r\n", b"$12\r\npunsubscribe\r\n",
                b"$12\r\nsunsubscribe\r\n")
_HEADER3 = (b"*3\r\n", b">3\r\n")  # by RESP3 (0: RESP2, 1: RESP3)
_HEADER4 = (b"*4\r\n", b">4\r\n")
_MESSAGE = b"$7\r\nmessage\r\n"
_SMESSAGE = b"$8\r\nsmessage\r\n"
_PMESSAGE = b"$8\r\npmessage\r\n"
_NULL = (b"$-1\r\n", b"_\r\n")


class Subscriptions:
    """``client.pubsub`` while a client has subscriptions: what it listens
    to, each kind in the order subscribed."""

    __slots__ = ("channels", "patterns", "shard")
    channels: dict[bytes, None]
    patterns: dict[bytes, None]
    shard: dict[bytes, None]

    def __init__(self) -> None:
        self.channels = {}
        self.patterns = {}
        self.shard = {}

    def of(self, kind: int) -> dict[bytes, None]:
        return self.channels if kind == CHANNEL else self.patterns if kind == PATTERN else self.shard

    def count(self, kind: int) -> int:
        """The number a (un)subscribe confirmation carries: channels plus
        patterns, or shard channels."""
        if kind == SHARD:
            return len(self.shard)
        return len(self.channels) + len(self.patterns)

    def total(self) -> int:
        return len(self.channels) + len(self.patterns) + len(self.shard)


class PatternListeners:
    """The clients subscribed to one pattern, and its compiled matcher."""

    __slots__ = ("matches", "clients")
    matches: Callable[[bytes], bool]
    clients: dict[Client, None]

    def __init__(self, pattern: bytes) -> None:
        self.matches = compile_pattern(pattern)
        self.clients = {}


class PubSub:
    """The node's listeners: channel -> clients, pattern -> clients, shard
    channel -> clients (dicts as ordered sets: subscription order, O(1)
    removal)."""

    __slots__ = ("node", "channels", "patterns", "shard")
    node: Node
    channels: dict[bytes, dict[Client, None]]
    patterns: dict[bytes, PatternListeners]
    shard: dict[bytes, dict[Client, None]]

    def __init__(self, node: Node) -> None:
        self.node = node
        self.channels = {}
        self.patterns = {}
        self.shard = {}

    # ------------------------------------------------------ subscriptions

    def subscribe(self, client: Client, kind: int, name: bytes) -> bytes:
        """Subscribe ``client`` (no-op if it already is); the confirmation."""
        subs = client.pubsub
        if subs is None:
            subs = client.pubsub = Subscriptions()
        mine = subs.of(kind)
        if name not in mine:
            mine[name] = None
            if kind == PATTERN:
                listeners = self.patterns.get(name)
                if listeners is None:
                    listeners = self.patterns[name] = PatternListeners(name)
                listeners.clients[client] = None
            else:
                table = self.channels if kind == CHANNEL else self.shard
                clients = table.get(name)
                if clients is None:
                    clients = table[name] = {}
                clients[client] = None
        return self._frame(client, _SUBSCRIBE[kind], bulk(name), subs.count(kind))

    def unsubscribe(self, client: Client, kind: int, name: bytes) -> bytes:
        """Unsubscribe ``client`` (no-op if it is not); the confirmation."""
        subs = client.pubsub
        count = 0
        if subs is not None:
            self._forget(client, subs, kind, name)
            count = subs.count(kind)
            self._maybe_leave(client, subs)
        return self._frame(client, _UNSUBSCRIBE[kind], bulk(name), count)

    def unsubscribe_all(self, client: Client, kind: int) -> bytes:
        """UNSUBSCRIBE (PUNSUBSCRIBE, SUNSUBSCRIBE) without arguments: one
        confirmation per subscription dropped, or one with a null name."""
        subs = client.pubsub
        if subs is None or not subs.of(kind):
            count = 0 if subs is None else subs.count(kind)
            return self._frame(client, _UNSUBSCRIBE[kind], _NULL[client.proto == 3], count)
        frames = []
        for name in list(subs.of(kind)):
            self._forget(client, subs, kind, name)
            frames.append(self._frame(client, _UNSUBSCRIBE[kind], bulk(name), subs.count(kind)))
        self._maybe_leave(client, subs)
        return b"".join(frames)

    def drop(self, client: Client) -> None:
        """Forget every subscription of ``client`` silently (it went
        away, or RESET)."""
        subs = client.pubsub
        if subs is None:
            return
        for kind in (CHANNEL, PATTERN, SHARD):
            for name in list(subs.of(kind)):
                self._forget(client, subs, kind, name)
        client.pubsub = None

    def _forget(self, client: Client, subs: Subscriptions, kind: int, name: bytes) -> None:
        mine = subs.of(kind)
        if name not in mine:
            return
        del mine[name]
        if kind == PATTERN:
            listeners = self.patterns[name]
            del listeners.clients[client]
            if not listeners.clients:
                del self.patterns[name]
        else:
            table = self.channels if kind == CHANNEL else self.shard
            clients = table[name]
            del clients[client]
            if not clients:
                del table[name]

    def _maybe_leave(self, client: Client, subs: Subscriptions) -> None:
        if not subs.total():
            client.pubsub = None  # out of subscribed mode

    def _frame(self, client: Client, what: bytes, name: bytes, count: int) -> bytes:
        return b"%s%s%s:%d\r\n" % (_HEADER3[client.proto == 3], what, name, count)

    # ---------------------------------------------------------- delivery

    def publish(self, channel: bytes, message: bytes, shard: bool = False) -> int:
        """Deliver to this node's subscribers; how many received it."""
        table = self.shard if shard else self.channels
        clients = table.get(channel)
        receivers = 0
        node = self.node
        if clients:
            tail = b"%s$%d\r\n%s\r\n$%d\r\n%s\r\n" % (
                _SMESSAGE if shard else _MESSAGE, len(channel), channel, len(message), message)
            resp2 = resp3 = b""  # built on first use
            for client in clients:
                if client.proto == 3:
                    if not resp3:
                        resp3 = b">3\r\n" + tail
                    node.push(client, resp3)
                else:
                    if not resp2:
                        resp2 = b"*3\r\n" + tail
                    node.push(client, resp2)
                receivers += 1
        if shard or not self.patterns:
            return receivers
        tail = b""
        for pattern, listeners in self.patterns.items():
            if not listeners.matches(channel):
                continue
            if not tail:
                tail = bulk(channel) + bulk(message)
            ptail = _PMESSAGE + bulk(pattern) + tail
            for client in listeners.clients:
                node.push(client, _HEADER4[client.proto == 3] + ptail)
                receivers += 1
        return receivers

    def subscribers(self, channel: bytes, shard: bool = False) -> int:
        clients = (self.shard if shard else self.channels).get(channel)
        return len(clients) if clients else 0
