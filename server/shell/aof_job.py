"""A job as an AOF record, built in one step (the hot path of every ADDJOB
with the AOF on, and of rewrites)."""

from ...protocol import jobcodec
from ..core.job import DUMMY_ACK

_FIXED = jobcodec._FIXED  # the codec's layout (a test checks we agree with it)
_LOADJOB_HEAD = b"*2\r\n$7\r\nLOADJOB\r\n$%d\r\n"


def loadjob_record(job):
    """``aof.loadjob(serialize(job, job.etime_ms))`` in one step: the hot
    path of every ADDJOB with the AOF on."""
    queue = job.queue
    body = job.body
    nodes = job.nodes_delivered
    try:
        ids = "".join(nodes).encode()
    except TypeError:
        ids = b"".join(n.encode() if n.__class__ is str else n for n in nodes)
    return b"".join((
        _LOADJOB_HEAD % (_FIXED.size + len(queue) + len(body) + len(ids)),
        _FIXED.pack(job.id, job.state, job.flags & ~DUMMY_ACK, job.repl, job.ctime,
                    job.etime_ms, job.delay_s, job.retry_s, job.nacks,
                    job.deliveries, len(queue), len(body), len(nodes)),
        queue, body, ids, b"\r\n"))
