"""A job as an AOF record, built in one step (the hot path of every ADDJOB
with the AOF on, and of rewrites)."""

from ...protocol import jobcodec
from ..core.job import DUMMY_ACK

_FIXED = jobcodec._FIXED  # the codec's layout (a test checks we agree with it)
_pack = _FIXED.pack
_FIXED_SIZE = _FIXED.size
_RECORD = b"*2\r\n$7\r\nLOADJOB\r\n$%d\r\n%s%s%s%s\r\n"
_NOT_DUMMY = ~DUMMY_ACK
_ids_cache = {}  # tuple of node IDs -> their bytes (few distinct tuples)


def loadjob_record(job):
    """``aof.loadjob(serialize(job, job.etime_ms))`` in one step."""
    queue = job.queue
    body = job.body
    nodes = job.nodes_delivered
    ids = _ids_cache.get(nodes)
    if ids is None:
        try:
            ids = "".join(nodes).encode()
        except TypeError:
            ids = b"".join(n.encode() if n.__class__ is str else n for n in nodes)
        if len(_ids_cache) >= 4096:
            _ids_cache.clear()
        _ids_cache[nodes] = ids
    return _RECORD % (
        _FIXED_SIZE + len(queue) + len(body) + len(ids),
        _pack(job.id, job.state, job.flags & _NOT_DUMMY, job.repl, job.ctime,
              job.etime_ms, job.delay_s, job.retry_s, job.nacks, job.deliveries,
              len(queue), len(body), len(nodes)),
        queue, body, ids)
