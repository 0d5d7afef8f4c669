"""A job as bytes, for the cluster bus and the append-only file.

Layout (little endian): a fixed part, then the queue name, the body and the
IDs of the nodes that may hold a copy.  Every length is checked on decode:
a short or inconsistent record raises ValueError, never a partial job.

``etime_ms`` is whatever the caller puts there: the bus sends the time to
live left (clocks differ between nodes), the AOF the absolute expiry.
"""

import struct

_FIXED = struct.Struct("<40sBBHQqIIIIIIH")
NODE_ID_LEN = 40
FIELDS = ("id", "state", "flags", "repl", "ctime", "etime_ms", "delay_s",
          "retry_s", "nacks", "deliveries", "queue", "body", "nodes")


def encode(job_id, state, flags, repl, ctime, etime_ms, delay_s, retry_s,
           nacks, deliveries, queue, body, nodes):
    return b"".join((
        _FIXED.pack(job_id, state, flags, repl, ctime, etime_ms, delay_s,
                    retry_s, nacks, deliveries, len(queue), len(body), len(nodes)),
        queue, body, *(n.encode() if n.__class__ is str else n for n in nodes)))


_NODE_TUPLES = {}  # raw node-ID block -> tuple of str, shared between jobs
_NODE_TUPLES_MAX = 4096


def _node_ids(raw):
    """The node IDs of a record.  Most jobs are held by the same few sets
    of nodes: one shared tuple per set saves the decoding and, for a
    million replicas, a few hundred MB of identical strings."""
    nodes = _NODE_TUPLES.get(raw)
    if nodes is None:
        text = raw.decode("ascii")
        nodes = tuple(text[i:i + NODE_ID_LEN] for i in range(0, len(text), NODE_ID_LEN))
        if len(_NODE_TUPLES) >= _NODE_TUPLES_MAX:
            _NODE_TUPLES.clear()
        _NODE_TUPLES[raw] = nodes
    return nodes


def decode(data, offset=0):
    """Return (fields tuple in FIELDS order, offset after the record)."""
    end = offset + _FIXED.size
    if end > len(data):
        raise ValueError("truncated job record")
    (job_id, state, flags, repl, ctime, etime_ms, delay_s, retry_s, nacks,
     deliveries, qlen, blen, nnodes) = _FIXED.unpack_from(data, offset)
    if state > 3:
        raise ValueError("bad job state")
    qend = end + qlen
    bend = qend + blen
    nend = bend + nnodes * NODE_ID_LEN
    if nend > len(data):
        raise ValueError("truncated job record")
    queue = bytes(data[end:qend])
    body = bytes(data[qend:bend])
    nodes = _node_ids(bytes(data[bend:nend]))
    return ((job_id, state, flags, repl, ctime, etime_ms, delay_s, retry_s,
             nacks, deliveries, queue, body, nodes), nend)
