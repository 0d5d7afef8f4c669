"""SCHEDULE: periodic jobs (docs/schedules.md).

A schedule is the cluster's: set on any node, it reaches every other node
over the bus and is kept in the AOF (``SCHEDULE name STORE ...`` and
``SCHEDULE name FIRED ...`` records, which only the loader reads).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol import errors, resp
from ...protocol.errors import CommandError

from .schedule import Schedule, check_name, parse_expr, parse_options
from ..command import Commands

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands("queues")
command = COMMANDS.command


@command("SCHEDULE", -2, "write denyoom",
         "Add, delete, list or show periodic jobs (cluster-wide, cron in UTC)",
         "ADD name cron-expr queue body [REPLICATE count] [RETRY sec] [TTL sec] "
         "[DELAY sec] [MAXDELIVERIES count] [DEADLETTER queue] "
         "[BACKOFF linear|exponential|none base-sec max-sec] [PRIORITY level] "
         "| DEL name | LIST | SHOW name")
def schedule(node: Node, client: Client, argv: list[bytes]) -> bytes:
    sub = argv[1].upper()
    schedules = node.schedules
    proto = client.disque_proto()
    if sub == b"LIST" and len(argv) == 2:
        return resp.encode(sorted(s.name for s in schedules.live()), proto)
    if sub == b"SHOW" and len(argv) == 3:
        return schedules.show(argv[2], proto)
    if sub == b"DEL" and len(argv) == 3:
        # A tombstone even for a name unknown here (a node restarted empty,
        # or not reached yet by the ADD): the newer version wins everywhere.
        name = argv[2]
        check_name(name)
        old = schedules.by_name.get(name)
        _store(node, Schedule(name, b"", b"", b"", [], 0, 0, node.id, deleted=True))
        return resp.integer(0 if old is None or old.deleted else 1)
    if sub == b"ADD" and len(argv) >= 6:
        name, expr, queue, body = argv[2], argv[3], argv[4], argv[5]
        check_name(name)
        parse_expr(expr)
        if not queue:
            raise CommandError("ERR SCHEDULE needs a queue name")
        if len(body) > node.config.max_job_size:
            raise CommandError(f"ERR job body too big: {len(body)} bytes, "
                               f"max-job-size is {node.config.max_job_size}")
        options = parse_options(argv, 6)
        _store(node, Schedule(name, expr, queue, body, options, node.now_ms(), 0, node.id))
        return resp.OK
    raise CommandError(errors.SYNTAX)


def _store(node: Node, entry: Schedule) -> None:
    # A version above any seen for the name, so this write wins even over
    # one from a node whose clock runs ahead.
    old = node.schedules.by_name.get(entry.name)
    version_ms = node.now_ms()
    if old is not None and version_ms <= old.version_ms:
        version_ms = old.version_ms + 1
    entry.version_ms = version_ms
    node.schedules.apply(entry)
    node.cluster.schedule_changed(entry.name)
