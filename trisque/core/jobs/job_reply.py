"""A job as GETJOB and QPEEK return it: the one reply shape the node (a
blocked GETJOB served later) and the job commands share."""

from .job import Job


def job_reply(job: Job, withcounters: bool = False) -> bytes:
    """One job as GETJOB returns it: [queue, id, body (, counters)]."""
    queue, body = job.queue, job.body
    if withcounters:
        return b"*7\r\n$%d\r\n%s\r\n$40\r\n%s\r\n$%d\r\n%s\r\n$5\r\nnacks\r\n:%d\r\n$21\r\nadditional-deliveries\r\n:%d\r\n" % (
            len(queue), queue, job.id, len(body), body, job.nacks, job.deliveries)
    return b"*3\r\n$%d\r\n%s\r\n$40\r\n%s\r\n$%d\r\n%s\r\n" % (
        len(queue), queue, job.id, len(body), body)
