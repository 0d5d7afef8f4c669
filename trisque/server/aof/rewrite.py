"""Rewriting the append-only file: a compact file with one record per live
job, built while the node keeps serving, switched in with one rename.

How a rewrite stays correct without stopping the node: at its start (one
synchronous step) it takes the list of live jobs and starts buffering every
record the node logs from then on.  It then serializes the listed jobs a
chunk at a time in the event loop (each job as it is *at that moment*,
skipped if it is gone) and writes each chunk to a temporary file from a
worker thread.  Finally it appends the buffered records, and in one step
without awaiting writes the last of them and renames the file over the old
one.  For every job the replay gives the state of the last record logged
about it, and the snapshot of a job already reflects every record before
it, so replaying the buffered records after the snapshot yields the live
state.  Records keep going to the old file during the rewrite, so a crash
at any point loses nothing: the old file stays complete until the rename.

Other sources (the keyspace, later) add a function to ``SNAPSHOT_SOURCES``:
``source(node)`` is called at the start of the rewrite and returns an
iterator of byte chunks, each made of whole records.  A source whose
records are not idempotent must capture its data when it is called.
"""

import os
import time

import trio

from ...core.jobs.job import ACTIVE, QUEUED
from ...core.jobs import policy as policy_codec
from ...core.jobs import schedule as schedule_codec
from ...protocol import aof

from ...shell import log
from .job_record import loadjob_record

CHUNK_JOBS = 2000  # jobs serialized per step of the event loop
CATCH_UP_BYTES = 256 * 1024  # buffered records left for the final, atomic step
AUTOSYNC_BYTES = 4 * 1024 * 1024  # aof-rewrite-incremental-fsync: fsync this often


def job_snapshot(node):
    """LOADJOB records for every active or queued job, produced lazily."""
    jobs = list(node.jobs.values())  # who is live now

    def chunks():
        live = node.jobs
        for i in range(0, len(jobs), CHUNK_JOBS):
            parts = []
            for job in jobs[i:i + CHUNK_JOBS]:
                state = job.state
                if (state == ACTIVE or state == QUEUED) and live.get(job.id) is job:
                    parts.append(loadjob_record(job))
            yield b"".join(parts)
    return chunks()


def queue_policy_snapshot(node):
    """QCONFIG STORE records for every queue's defaults (policy.py)."""
    records = [aof.command(b"QCONFIG", name, b"STORE", b"%d" % entry.version_ms,
                           entry.origin.encode(), policy_codec.encode(entry.policy))
               for name, entry in list(node.queue_policies.items())]
    return iter([b"".join(records)] if records else [])


def tombstone_snapshot(node):
    """IDEMKEY records: the tombstones of gone jobs' idempotency keys, and
    of acked jobs not yet freed (their LOADJOB is not written)."""
    records = [aof.command(b"IDEMKEY", queue, key, job_id, b"%d" % until_ms)
               for queue, key, job_id, until_ms in node.idempotency.tombstones()]
    for job in list(node.idempotency_holders()):
        policy = job.policy
        records.append(aof.command(b"IDEMKEY", policy.dead_from or job.queue,
                                   policy.idempotency_key, job.id, b"%d" % job.etime_ms))
    return iter([b"".join(records)] if records else [])


def schedule_snapshot(node):
    """SCHEDULE STORE and FIRED records for every schedule (deleted ones
    too: their tombstone keeps an older ADD from coming back)."""
    records = []
    for name, entry in list(node.schedules.by_name.items()):
        records.append(aof.command(b"SCHEDULE", name, b"STORE", b"%d" % entry.version_ms,
                                   entry.origin.encode(), schedule_codec.encode(entry)))
        if entry.fired_tick_ms:
            records.append(aof.command(b"SCHEDULE", name, b"FIRED", b"%d" % entry.fired_tick_ms,
                                       entry.fired_by.encode(), entry.fired_job))
    return iter([b"".join(records)] if records else [])


SNAPSHOT_SOURCES = [job_snapshot, queue_policy_snapshot, tombstone_snapshot,
                    schedule_snapshot]


def write_all(fd, data):
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _write_and_sync(fd, data):
    write_all(fd, data)
    os.fdatasync(fd)


def fsync_dir(path):
    """Make a rename in the directory of ``path`` durable."""
    try:
        fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def temp_name(path, background):
    kind = "temp-rewriteaof-bg" if background else "temp-rewriteaof"
    return os.path.join(os.path.dirname(path), f"{kind}-{os.getpid()}.aof")


def rewrite_now(node, path):
    """The whole file at once, blocking (SHUTDOWN REWRITE-AOF, when no
    command may run in between).  Raises OSError."""
    tmp = temp_name(path, background=False)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for source in SNAPSHOT_SOURCES:
            for chunk in source(node):
                write_all(fd, chunk)
        os.fsync(fd)
    except OSError:
        os.close(fd)
        _unlink(tmp)
        raise
    os.close(fd)
    try:
        os.rename(tmp, path)
    except OSError:
        _unlink(tmp)
        raise
    fsync_dir(path)


class Rewrite:
    """One background rewrite; the log feeds ``buffer`` while it runs."""

    def __init__(self, aof_log, path):
        node = aof_log.node
        self.log = aof_log
        self.path = path
        self.tmp = temp_name(path, background=True)
        self.buffer = []  # records logged since the start
        self.buffered = 0
        self.started = time.time()
        self.sources = [source(node) for source in SNAPSHOT_SOURCES]
        self.scope = trio.CancelScope()
        self.fd = -1

    def take(self):
        data = b"".join(self.buffer)
        self.buffer = []
        self.buffered = 0
        return data

    def abort(self):
        """Stop it (appendonly no, shutdown); the task cleans up."""
        self.scope.cancel()

    async def run(self):
        to_thread = trio.to_thread.run_sync
        try:
            with self.scope:
                self.fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                fd = self.fd
                incremental = self.log.config.aof_rewrite_incremental_fsync
                unsynced = 0
                for chunks in self.sources:
                    for chunk in chunks:  # serialized here, in the event loop
                        if not chunk:
                            await trio.lowlevel.checkpoint()
                            continue
                        unsynced += len(chunk)
                        if incremental and unsynced >= AUTOSYNC_BYTES:
                            # Keep the kernel's dirty pages few: a burst of
                            # them throttles every writer, the AOF's too.
                            unsynced = 0
                            await to_thread(_write_and_sync, fd, chunk)
                        else:
                            await to_thread(write_all, fd, chunk)
                await to_thread(os.fsync, fd)
                # Catch up with what was logged meanwhile, still serving.
                for _ in range(50):
                    if self.buffered < CATCH_UP_BYTES:
                        break
                    await to_thread(write_all, fd, self.take())
                if self.buffered >= CATCH_UP_BYTES // 4:
                    await to_thread(os.fsync, fd)
                # The switch: no await from here on.
                write_all(fd, self.take())
                self.log.rewrite_done(self)
                self.fd = -1  # the log owns it now
                return
        except OSError as exc:
            log.warning(f"Background AOF rewrite terminated with error: {exc.strerror}")
            self.log.rewrite_failed(self)
        finally:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
                _unlink(self.tmp)
        if self.scope.cancelled_caught:
            log.notice("Background AOF rewrite stopped")


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass
