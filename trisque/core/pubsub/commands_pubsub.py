"""The Pub/Sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH,
SPUBLISH, PUBSUB (the rules are channels.py's).

The confirmations are the command's reply, so EXEC collects them as Redis
does; under CLIENT REPLY OFF or SKIP they are pushed all the same (Redis
7.0 sends pushes whatever the reply mode).  PUBLISH tells the cluster too
(``node.cluster.publish``: the other nodes' subscribers hear it) and
answers with this node's receivers, as Redis Cluster does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol import errors, resp
from ...protocol.errors import CommandError
from ..client import REPLY_ON, REPLY_SKIP
from ..command import Commands
from ..keyspace.patterns import compile_pattern
from .channels import CHANNEL, PATTERN, SHARD

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands("pubsub")
command = COMMANDS.command

_HELP = (
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
)
# PUBSUB's subcommands and their arity (Redis's, counting PUBSUB itself)
_ARITY = {b"CHANNELS": -2, b"NUMSUB": -2, b"NUMPAT": 2, b"SHARDCHANNELS": -2,
          b"SHARDNUMSUB": -2, b"HELP": 2}


def _confirm(node: Node, client: Client, frames: bytes) -> bytes | None:
    """The confirmations as the reply, or pushed past CLIENT REPLY OFF/SKIP."""
    mode = client.reply_mode
    if mode == REPLY_ON:
        return frames
    node.push(client, frames)
    if mode == REPLY_SKIP:
        client.reply_mode = REPLY_ON  # (the skipped command was this one)
    return None


def _subscribe(node: Node, client: Client, argv: list[bytes], kind: int) -> bytes | None:
    pubsub = node.pubsub
    return _confirm(node, client, b"".join(
        [pubsub.subscribe(client, kind, name) for name in argv[1:]]))


def _unsubscribe(node: Node, client: Client, argv: list[bytes], kind: int) -> bytes | None:
    pubsub = node.pubsub
    if len(argv) == 1:
        return _confirm(node, client, pubsub.unsubscribe_all(client, kind))
    return _confirm(node, client, b"".join(
        [pubsub.unsubscribe(client, kind, name) for name in argv[1:]]))


@command("SUBSCRIBE", -2, "pubsub noscript loading stale",
         "Listen for messages published to the given channels", "channel [channel ...]")
def subscribe(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    return _subscribe(node, client, argv, CHANNEL)


@command("UNSUBSCRIBE", -1, "pubsub noscript loading stale",
         "Stop listening for messages posted to the given channels", "[channel [channel ...]]")
def unsubscribe(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    return _unsubscribe(node, client, argv, CHANNEL)


@command("PSUBSCRIBE", -2, "pubsub noscript loading stale",
         "Listen for messages published to channels matching the given patterns",
         "pattern [pattern ...]")
def psubscribe(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    return _subscribe(node, client, argv, PATTERN)


@command("PUNSUBSCRIBE", -1, "pubsub noscript loading stale",
         "Stop listening for messages posted to channels matching the given patterns",
         "[pattern [pattern ...]]")
def punsubscribe(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    return _unsubscribe(node, client, argv, PATTERN)


@command("SSUBSCRIBE", -2, "pubsub noscript loading stale",
         "Listen for messages published to the given shard channels",
         "shardchannel [shardchannel ...]")
def ssubscribe(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    return _subscribe(node, client, argv, SHARD)


@command("SUNSUBSCRIBE", -1, "pubsub noscript loading stale",
         "Stop listening for messages posted to the given shard channels",
         "[shardchannel [shardchannel ...]]")
def sunsubscribe(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    return _unsubscribe(node, client, argv, SHARD)


@command("PUBLISH", 3, "pubsub loading stale fast may_replicate",
         "Post a message to a channel (its subscribers on every node hear it; "
         "the reply counts this node's)", "channel message")
def publish(node: Node, client: Client, argv: list[bytes]) -> bytes:
    receivers = node.pubsub.publish(argv[1], argv[2])
    if node.cluster_size > 1:  # (a node alone: no call)
        node.cluster.publish(argv[1], argv[2], False)
    return resp.integer(receivers)


@command("SPUBLISH", 3, "pubsub loading stale fast may_replicate",
         "Post a message to a shard channel", "shardchannel message")
def spublish(node: Node, client: Client, argv: list[bytes]) -> bytes:
    receivers = node.pubsub.publish(argv[1], argv[2], True)
    if node.cluster_size > 1:  # (a node alone: no call)
        node.cluster.publish(argv[1], argv[2], True)
    return resp.integer(receivers)


@command("PUBSUB", -2, "pubsub loading stale",
         "Pub/Sub introspection",
         "CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT | SHARDCHANNELS [pattern] "
         "| SHARDNUMSUB [shardchannel ...] | HELP")
def pubsub_(node: Node, client: Client, argv: list[bytes]) -> bytes:
    sub = argv[1].upper()
    arity = _ARITY.get(sub)
    if arity is None:
        raise CommandError(errors.unknown_subcommand(
            argv[1].decode("utf-8", "replace")[:128], "PUBSUB"))
    if (arity > 0 and len(argv) != arity) or len(argv) < -arity:
        raise CommandError(errors.wrong_arity("pubsub|" + sub.decode().lower()))
    pubsub = node.pubsub
    if sub == b"HELP":
        return (b"*%d\r\n" % (len(_HELP) + 1)
                + resp.status("PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
                + b"".join([resp.status(line) for line in _HELP]))
    if sub == b"NUMPAT":
        return resp.integer(len(pubsub.patterns))
    if sub in (b"CHANNELS", b"SHARDCHANNELS") and len(argv) <= 3:
        names = list(pubsub.channels if sub == b"CHANNELS" else pubsub.shard)
        if len(argv) == 3:
            matches = compile_pattern(argv[2])
            names = [name for name in names if matches(name)]
        return resp.encode(names, client.proto)
    if sub in (b"NUMSUB", b"SHARDNUMSUB"):
        shard = sub == b"SHARDNUMSUB"
        out = [b"*%d\r\n" % (2 * (len(argv) - 2))]
        for name in argv[2:]:
            out.append(resp.bulk(name))
            out.append(resp.integer(pubsub.subscribers(name, shard)))
        return b"".join(out)
    raise CommandError(
        f"ERR unknown subcommand or wrong number of arguments for "
        f"'{argv[1].decode('utf-8', 'replace')[:128]}'. Try PUBSUB HELP.")
