"""Loading the append-only file at start (and for DEBUG LOADAOF).

Every record is replayed in order.  A job comes back ``active`` with its
requeue timer armed (now + DELAY + RETRY, with the usual jitter), so
unacknowledged jobs are delivered again once their retry time passes; a job
that was ``queued`` goes straight back into its queue only when
``aof-enqueue-jobs-once`` is set (the controlled-restart path).  Jobs whose
TTL has passed are dropped.  ``DELJOB`` forgets a job loaded earlier.

Other commands (the keyspace's writes, later) are replayed by handlers
registered in ``REPLAY``: name -> ``handler(node, argv, options)``.

A file that stops in the middle of a record (a crash during a write) is
either truncated back to its last complete record (``aof-load-truncated
yes``, the default) or refused; a file with bytes that cannot be a record is
refused with their offset.  Refusals raise ``LoadError``.
"""

import mmap
import os
import time

from ...protocol import aof
from ..core.job import ACKED, ACTIVE, BCAST_WILLQUEUE, QUEUED, deserialize

from . import log

PROGRESS_EVERY_S = 1.0
YIELD_EVERY = 2000  # records between the loader's chances to let others run


class LoadError(Exception):
    """The file cannot be loaded; the node must not start with it."""


class Options:
    """What a replay handler may need to know."""

    def __init__(self, now_ms, enqueue_once):
        self.now_ms = now_ms
        self.enqueue_once = enqueue_once
        self.jobs = 0  # jobs registered
        self.expired = 0  # dropped: TTL already passed
        self.enqueued = 0
        self.deleted = 0


def replay_loadjob(node, payload, options):
    """LOADJOB <serialized job>: register it, active, requeue timer armed.
    ``payload`` is (buffer, start, stop)."""
    buf, start, stop = payload
    try:
        job, end = deserialize(buf, start)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"corrupted LOADJOB data ({exc})") from None
    if end != stop:
        raise ValueError("corrupted LOADJOB data (length mismatch)")
    if job.etime_ms <= options.now_ms:
        options.expired += 1
        return
    if job.state == ACKED:
        return  # acks are never reloaded, as in Disque
    enqueue = job.state == QUEUED and options.enqueue_once
    job.state = ACTIVE
    if job.retry_s:
        job.flags |= BCAST_WILLQUEUE
        job.qtime_ms = (options.now_ms + (job.delay_s + job.retry_s) * 1000
                        + node.jitter_ms())
    else:
        job.qtime_ms = 0
    if not node.register(job):
        return  # a later copy of a job we already have: the first one wins
    options.jobs += 1
    if enqueue:
        # Back into its queue as it was at the controlled shutdown: not a
        # redelivery, so no counters move (and RETRY 0 jobs too, which have
        # no requeue time).
        deliveries, nacks, flags = job.deliveries, job.nacks, job.flags
        if not job.qtime_ms:
            job.qtime_ms = 1
        if node.enqueue(job):
            options.enqueued += 1
        job.deliveries, job.nacks = deliveries, nacks
        job.flags = flags | (job.flags & BCAST_WILLQUEUE)
        if not job.retry_s:
            job.qtime_ms = 0
    else:
        node.schedule(job)


def replay_deljob(node, argv, options):
    for job_id in argv[1:]:
        job = node.jobs.get(job_id)
        if job is not None:
            node.unregister(job)
            options.deleted += 1


def _replay_loadjob_argv(node, argv, options):
    """LOADJOB framed other than the way we write it (still valid RESP)."""
    if len(argv) != 2:
        raise ValueError("LOADJOB takes exactly one argument")
    replay_loadjob(node, (argv[1], 0, len(argv[1])), options)


REPLAY = {aof.LOADJOB: _replay_loadjob_argv, aof.DELJOB: replay_deljob}


def load(node, path, truncate_ok, enqueue_once):
    """Replay the file into ``node``; a generator that yields every few
    thousand records so the caller can let other tasks run.  Its value
    (StopIteration) is the Options with the counts.  Raises LoadError."""
    options = Options(node.now_ms(), enqueue_once)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return options
    except OSError as exc:
        raise LoadError(f"Fatal error: can't open the append log file for "
                        f"reading: {exc.strerror}") from None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return options
        buf = mmap.mmap(fd, size, prot=mmap.PROT_READ)
    finally:
        os.close(fd)
    started = time.monotonic()
    try:
        yield from _replay(node, buf, size, path, truncate_ok, options, started)
    finally:
        buf.close()
    log.notice(f"DB loaded from append only file: "
               f"{time.monotonic() - started:.3f} seconds ({options.jobs} jobs, "
               f"{options.expired} expired dropped, {options.deleted} deleted)")
    return options


def _replay(node, buf, size, path, truncate_ok, options, started):
    parse = aof.parse
    loadjob = aof.LOADJOB
    replay = REPLAY
    pos = 0
    count = 0
    next_progress = started + PROGRESS_EVERY_S
    log.notice(f"Loading the append only file {path} ({size} bytes)")
    while pos < size:
        try:
            argv, next_pos = parse(buf, pos, size)
        except aof.Truncated:
            _truncated(path, pos, size, truncate_ok)
            return
        except aof.FormatError as exc:
            raise LoadError(
                f"Bad file format reading the append only file {path}: "
                f"{exc.reason} at offset {exc.offset} (the record starting at "
                f"offset {pos}). Make a backup of the file, then keep only its "
                f"first {pos} bytes (for example: truncate -s {pos} {path}) "
                f"to load every record before that point.") from None
        name = argv[0]
        try:
            if name is loadjob:
                start, stop = argv[1]
                replay_loadjob(node, (buf, start, stop), options)
            else:
                handler = replay.get(name.upper())
                if handler is None:
                    raise LoadError(
                        f"Unknown command '{name.decode(errors='replace')}' "
                        f"reading the append only file {path} at offset {pos}")
                handler(node, argv, options)
        except ValueError as exc:
            raise LoadError(
                f"Unrecoverable error loading the append only file {path}: "
                f"{exc} in the record at offset {pos}. Make a backup of the "
                f"file, then keep only its first {pos} bytes (for example: "
                f"truncate -s {pos} {path}) to load every record before it."
            ) from None
        pos = next_pos
        count += 1
        if count % YIELD_EVERY == 0:
            now = time.monotonic()
            if now >= next_progress:
                next_progress = now + PROGRESS_EVERY_S
                log.notice(f"Loading the AOF: {pos * 100 / size:.1f}% "
                           f"({pos} of {size} bytes, {options.jobs} jobs, "
                           f"{now - started:.1f} s)")
            yield


def _truncated(path, valid, size, truncate_ok):
    dropped = size - valid
    if not truncate_ok:
        raise LoadError(
            f"Unexpected end of file reading the append only file {path}: the "
            f"last {dropped} bytes (from offset {valid}) are an incomplete "
            f"record. You can: 1) make a backup of the file, then keep only "
            f"its first {valid} bytes (truncate -s {valid} {path}); 2) set "
            f"'aof-load-truncated yes' and restart the server.")
    log.warning("!!! Warning: short read while loading the AOF file !!!")
    log.warning(f"!!! Truncating the AOF at offset {valid}: {dropped} bytes "
                f"of an incomplete last record dropped !!!")
    try:
        os.truncate(path, valid)
    except OSError as exc:
        raise LoadError(f"Error truncating the AOF file {path}: "
                        f"{exc.strerror}") from None
    log.warning("AOF loaded anyway because aof-load-truncated is enabled")
