"""QCONFIG: a queue's delivery policy defaults (docs/lifecycle.md).

The defaults apply to the jobs ADDJOB creates in the queue afterwards,
where ADDJOB does not say otherwise; a job keeps the policy it was given.
They are the cluster's: set on any node, they reach every other node over
the bus and are kept in the AOF (``QCONFIG name STORE ...`` records, which
only the loader reads).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol import errors, resp
from ...protocol.errors import CommandError

from .policy import Policy, QueuePolicy, parse_option
from ..command import Commands

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands("queues")
command = COMMANDS.command


@command("QCONFIG", -3, "write denyoom fast",
         "Set, show or reset a queue's delivery policy defaults (cluster-wide)",
         "queue SET [MAXDELIVERIES count] [DEADLETTER queue] "
         "[BACKOFF linear|exponential|none base-sec max-sec] [PRIORITY level] "
         "| queue GET | queue RESET")
def qconfig(node: Node, client: Client, argv: list[bytes]) -> bytes:
    name = argv[1]
    sub = argv[2].upper()
    entry = node.queue_policies.get(name)
    if sub == b"GET" and len(argv) == 3:
        if entry is None or entry.policy.is_default():
            return resp.null_array(client.disque_proto())
        return resp.encode(entry.policy.fields(), client.disque_proto())
    if sub == b"SET" and len(argv) > 3:
        policy = entry.policy.copy() if entry is not None else Policy()
        i = 3
        while i < len(argv):
            after = parse_option(policy, argv, i)
            if after == i:
                raise CommandError(errors.SYNTAX)
            i = after
    elif sub == b"RESET" and len(argv) == 3:
        policy = Policy()
    else:
        raise CommandError(errors.SYNTAX)
    # A version above any seen for the queue, so this setting wins even
    # over one from a node whose clock runs ahead.
    version_ms = node.now_ms()
    if entry is not None and version_ms <= entry.version_ms:
        version_ms = entry.version_ms + 1
    node.apply_queue_policy(name, QueuePolicy(policy, version_ms, node.id))
    node.cluster.queue_policy_changed(name)
    return resp.OK
