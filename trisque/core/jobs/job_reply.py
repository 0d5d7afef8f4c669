"""A job as GETJOB and QPEEK return it: the one reply shape the node (a
blocked GETJOB served later) and the job commands share."""

from typing import Final

from .job import Job

# The body's bulk header (after the ID's CRLF) for the usual lengths, made
# once: formatting the number is a str made and encoded each time.
_BODY_HEADS: Final = tuple(b"\r\n$%d\r\n" % size for size in range(1024))


def job_reply(job: Job, withcounters: bool = False, first: bytes = b"") -> bytes:
    """One job as GETJOB returns it: [queue, id, body (, counters)], after
    ``first`` (``*1\r\n`` for a reply of this job alone: one build)."""
    if withcounters:
        queue, body = job.queue, job.body
        return first + b"*7\r\n$%d\r\n%s\r\n$40\r\n%s\r\n$%d\r\n%s\r\n$5\r\nnacks\r\n:%d\r\n$21\r\nadditional-deliveries\r\n:%d\r\n" % (
            len(queue), queue, job.id, len(body), body, job.nacks, job.deliveries)
    # What jobs of one Common share, up to the ID, is made once (its queue's name)
    shared = job._common
    head = shared.reply_head
    if head is None:
        queue = shared.queue
        head = shared.reply_head = b"*3\r\n$%d\r\n%s\r\n$40\r\n" % (len(queue), queue)
    body = job.body
    size = len(body)
    middle = _BODY_HEADS[size] if size < 1024 else b"\r\n$%d\r\n" % size
    return b"%s%s%s%s%s\r\n" % (first, head, job.id, middle, body)
