"""A job as an AOF record (the hot path of every ADDJOB with the AOF on,
and of rewrites)."""

from ...protocol.aof import loadjob
from ...core.jobs.job import serialize


def loadjob_record(job):
    """``LOADJOB <the job serialized with its absolute expiry>``."""
    return loadjob(serialize(job, job.etime_ms))
