"""WAITJOB: wait until a job is acknowledged anywhere in the cluster
(docs/lifecycle.md, "WAITJOB"; the waits: waits.py)."""

from typing import Any

from ...protocol import errors, jobid
from ...protocol.errors import CommandError

from ..client import Client
from ..command import Commands
from ..node import Node
from .commands_jobs import parse_timeout_ms

COMMANDS = Commands("jobs")
command = COMMANDS.command


@command("WAITJOB", -2, "readonly fast",
         "Wait until a job is acknowledged on any node, or its state at the timeout",
         "jobid [TIMEOUT ms-timeout]")
def waitjob(node: Node, client: Client, argv: list[bytes]) -> Any:
    """WAITJOB id [TIMEOUT ms]: +acked; at the timeout +queued, +active or
    +wait-repl (its state here, or as a holder last said); a null when no
    node knows the job.  TIMEOUT 0 (the default) waits for ever."""
    job_id = argv[1]
    if not jobid.is_valid(job_id):
        raise CommandError(errors.BADID)
    timeout_ms = 0
    i = 2
    while i < len(argv):
        if argv[i].upper() == b"TIMEOUT" and i + 1 < len(argv):
            timeout_ms = parse_timeout_ms(argv[i + 1])
            i += 2
        else:
            raise CommandError(errors.SYNTAX)
    return node.waits.wait(client, job_id, timeout_ms)
