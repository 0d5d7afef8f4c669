"""Queue commands: QLEN, QPEEK, QSTAT, QSCAN, PAUSE."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol import errors, resp
from ...protocol.args import to_int
from ...protocol.errors import CommandError

from .job_reply import job_reply
from .queue import PAUSED_ALL, PAUSED_IN, PAUSED_OUT, PAUSE_NAMES, Queue
from .scan import parse_scan_args, scan
from ..command import Commands

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands("queues")
command = COMMANDS.command

@command("QLEN", 2, "readonly fast",
         "Number of jobs queued in a queue", "queue")
def qlen(node: Node, client: Client, argv: list[bytes]) -> bytes:
    queue = node.queues.get(argv[1])
    return resp.integer(len(queue.jobs) if queue is not None else 0)


@command("QPEEK", 3, "readonly",
         "Show jobs of a queue without taking them, newest first if count is negative",
         "queue count")
def qpeek(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """QPEEK queue count: oldest first, or newest first if count < 0."""
    count = to_int(argv[2])
    queue = node.queues.get(argv[1])
    if queue is None or not queue.jobs or count == 0:
        return resp.EMPTY_ARRAY
    jobs = queue.jobs
    if count > 0:
        picked = jobs[:count]
    else:
        picked = jobs[count:][::-1] if -count < len(jobs) else list(reversed(jobs))
    return b"*%d\r\n%s" % (len(picked), b"".join(job_reply(j) for j in picked))


@command("QSTAT", 2, "readonly fast",
         "Describe a queue", "queue")
def qstat(node: Node, client: Client, argv: list[bytes]) -> bytes:
    queue = node.queues.get(argv[1])
    if queue is None:
        return resp.null_array(client.disque_proto())
    now_s = node.now_ms() // 1000
    fields = {
        "name": queue.name,
        "len": len(queue.jobs),
        "age": max(0, now_s - queue.ctime_s),
        "idle": max(0, now_s - queue.atime_s),
        "blocked": len(queue.blocked),
        "import-from": list(queue.import_from or ()),
        "import-rate": node.federation.import_rate(queue),
        "jobs-in": queue.jobs_in,
        "jobs-out": queue.jobs_out,
        "pause": queue.pause_name(),
    }
    # A queue with delivery policy defaults, or whose jobs died here, says
    # so after Disque's fields (docs/lifecycle.md).
    entry = node.queue_policies.get(queue.name)
    if queue.dead_letters or (entry is not None and not entry.policy.is_default()):
        if entry is not None:
            fields.update(entry.policy.fields())
        fields["dead-lettered"] = queue.dead_letters
    levels = queue.levels()
    if levels is not None:
        # jobs of several priority levels: how many at each, highest first
        fields["priority-levels"] = [n for pair in levels for n in pair]
    return resp.encode(fields, client.disque_proto())


@command("QSCAN", -1, "readonly",
         "Iterate the queues of this node",
         "[cursor] [COUNT count] [BUSYLOOP] [MINLEN len] [MAXLEN len] [IMPORTRATE rate]")
def qscan(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """QSCAN [cursor] [COUNT n] [BUSYLOOP] [MINLEN n] [MAXLEN n] [IMPORTRATE r]"""
    filters = {b"MINLEN": -1, b"MAXLEN": -1, b"IMPORTRATE": -1}  # -1: none (Disque's, given or not)

    def filter_option(name: bytes, value: bytes) -> bool:
        if name not in filters:
            return False
        filters[name] = to_int(value)
        return True

    cursor, count, busyloop = parse_scan_args(argv, filter_option)
    minlen, maxlen, importrate = filters[b"MINLEN"], filters[b"MAXLEN"], filters[b"IMPORTRATE"]

    rate = node.federation.import_rate

    def wanted(queue: Queue) -> bool:
        size = len(queue.jobs)
        if minlen != -1 and size < minlen:
            return False
        if maxlen != -1 and size > maxlen:
            return False
        return importrate == -1 or rate(queue) >= importrate

    next_cursor, queues = scan(node.queues, cursor, count, busyloop, wanted,
                               node.queue_deletions)
    return resp.encode([str(next_cursor), [q.name for q in queues]], client.disque_proto())


_PAUSE_OPTIONS = {b"NONE": 0, b"IN": PAUSED_IN, b"OUT": PAUSED_OUT, b"ALL": PAUSED_ALL}


@command("PAUSE", -3, "readonly fast",
         "Pause a queue for input, output, both or none",
         "queue option1 [option2 ... optionN] (in|out|all|none|state|bcast)")
def pause(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """PAUSE queue none|in|out|all|state [bcast]..."""
    name = argv[1]
    queue = node.queues.get(name)
    flags = 0
    update = False
    bcast = False
    for arg in argv[2:]:
        opt = arg.upper()
        if opt in _PAUSE_OPTIONS:
            flags = 0 if opt == b"NONE" else flags | _PAUSE_OPTIONS[opt]
            update = True
        elif opt == b"STATE":
            pass
        elif opt == b"BCAST":
            bcast = True
        else:
            raise CommandError(errors.SYNTAX)
    old = queue.paused if queue is not None else 0
    if update and queue is None and flags != old:
        queue = node.get_queue(name)
    if update and queue is not None:
        set_paused(node, queue, flags)
    state = queue.paused if queue is not None else 0
    if bcast:
        node.cluster.pause_broadcast(name, state)
    return b"+%s\r\n" % PAUSE_NAMES[state].encode()


def set_paused(node: Node, queue: Queue, flags: int) -> None:
    """Change a queue's pause state; un-pausing output serves waiting clients."""
    was_paused_out = queue.paused & PAUSED_OUT
    queue.paused = flags
    queue.atime_s = node.now_ms() // 1000
    if was_paused_out and not flags & PAUSED_OUT and queue.blocked:
        node.serve_blocked(queue)
