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

import gc
import mmap
import os
import stat
import time

from ...protocol import aof, jobcodec
from ...core.jobs.deadlines import Deadlines
from ...core.jobs.job import ACKED, ACTIVE, BCAST_WILLQUEUE, QUEUED, Job
from ...core.jobs import policy as policy_codec
from ...core.jobs import schedule as schedule_codec

from ...shell import log
from .load_progress import LoadProgress

PROGRESS_EVERY_S = 1.0
YIELD_EVERY = 2000  # records between the loader's chances to let others run


class LoadError(Exception):
    """The file cannot be loaded; the node must not start with it.
    ``offset``: where the first byte that cannot be loaded is (the records
    before it are good), when the file itself is at fault."""

    def __init__(self, message, offset=None):
        super().__init__(message)
        self.offset = offset


class Options:
    """What a replay handler may need to know."""

    def __init__(self, now_ms, enqueue_once):
        self.now_ms = now_ms
        self.enqueue_once = enqueue_once
        self.jobs = 0  # jobs registered
        self.expired = 0  # dropped: TTL already passed
        self.enqueued = 0
        self.deleted = 0
        # Loaded jobs' deadlines wait here until the load ends: no loaded
        # job's timer fires while other tasks run between its chunks.
        self.deferred = _Deferred()


class _Deferred(Deadlines):
    """Stands in for node.deadlines while a loaded job is scheduled: keeps
    (job, wake_ms) aside; ``flush`` inserts them all at once.  (A subclass,
    since the compiled node holds only a Deadlines there.)"""

    def __init__(self):
        super().__init__()
        self.items = []

    def set(self, item, wake_ms):
        self.items.append((item, wake_ms))

    def cancel(self, item):
        pass

    def schedule(self, node, job, enqueue=False):
        real = node.deadlines
        node.deadlines = self
        try:
            return node.enqueue(job) if enqueue else node.schedule(job)
        finally:
            node.deadlines = real

    def flush(self, node):
        """Schedule every deferred job still registered and not scheduled
        since (a DELJOB, or another task during a pause, may have acted)."""
        items, self.items = self.items, []
        jobs = node.jobs
        deadlines = node.deadlines
        for job, wake_ms in items:
            if job.wake_ms is None and jobs.get(job.id) is job:
                deadlines.set(job, wake_ms)


_FIXED = jobcodec._FIXED
_FIXED_SIZE = _FIXED.size
_unpack_fixed = _FIXED.unpack_from
_NODE_ID_LEN = jobcodec.NODE_ID_LEN
_HAS_POLICY = jobcodec.HAS_POLICY


def decode_job(buf, start, stop):
    """The job serialized in ``buf[start:stop]`` (jobcodec's layout, read
    straight from the file's buffer; a test checks it agrees with
    jobcodec.decode).  ValueError if it is not exactly one record."""
    end = start + _FIXED_SIZE
    if end > stop:
        raise ValueError("corrupted LOADJOB data (too short)")
    (job_id, state, flags, repl, ctime, etime_ms, delay_s, retry_s, nacks,
     deliveries, qlen, blen, nnodes) = _unpack_fixed(buf, start)
    qend = end + qlen
    bend = qend + blen
    policy = None
    if flags & _HAS_POLICY:
        # a job with a delivery policy: it follows the node IDs
        flags &= ~_HAS_POLICY
        nodes_end = bend + nnodes * _NODE_ID_LEN
        if nodes_end + 4 > stop:
            raise ValueError("corrupted LOADJOB data (bad lengths or state)")
        plen = int.from_bytes(buf[nodes_end:nodes_end + 4], "little")
        if nodes_end + 4 + plen != stop:
            raise ValueError("corrupted LOADJOB data (bad lengths or state)")
        policy = policy_codec.decode_shared(bytes(buf[nodes_end + 4:stop]))
        stop = nodes_end
    if bend + nnodes * _NODE_ID_LEN != stop or state > 3:
        raise ValueError("corrupted LOADJOB data (bad lengths or state)")
    job = Job(job_id, buf[end:qend], buf[qend:bend], state, repl, ctime,
              etime_ms, delay_s, retry_s)
    job.flags = flags
    job.nacks = nacks
    job.deliveries = deliveries
    if policy is not None:
        job.policy = policy
    if nnodes == 1:
        job.nodes_delivered = (buf[bend:stop].decode("ascii"),)
    elif nnodes:
        ids = buf[bend:stop].decode("ascii")
        job.nodes_delivered = tuple(ids[i:i + _NODE_ID_LEN]
                                    for i in range(0, len(ids), _NODE_ID_LEN))
    return job


def replay_loadjob(node, payload, options):
    """LOADJOB <serialized job>: register it, active, requeue timer armed.
    ``payload`` is (buffer, start, stop).  The job's deadline is deferred:
    whoever replays records calls ``options.deferred.flush(node)`` after the
    last one (``load`` does)."""
    buf, start, stop = payload
    try:
        job = decode_job(buf, start, stop)
    except UnicodeDecodeError:
        raise ValueError("corrupted LOADJOB data (node IDs)") from None
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
        if options.deferred.schedule(node, job, enqueue=True):
            options.enqueued += 1
        job.deliveries, job.nacks = deliveries, nacks
        job.flags = flags | (job.flags & BCAST_WILLQUEUE)
        if not job.retry_s:
            job.qtime_ms = 0
    else:
        options.deferred.schedule(node, job)


def replay_deljob(node, argv, options):
    for job_id in argv[1:]:
        job = node.jobs.get(job_id)
        if job is not None:
            # No tombstone for its idempotency key from here: an update is
            # DELJOB + LOADJOB, and a job that left has its IDEMKEY record.
            node.unregister(job, keep_key=False)
            options.deleted += 1


def _replay_loadjob_argv(node, argv, options):
    """LOADJOB framed other than the way we write it (still valid RESP)."""
    if len(argv) != 2:
        raise ValueError("LOADJOB takes exactly one argument")
    replay_loadjob(node, (argv[1], 0, len(argv[1])), options)


def replay_qconfig(node, argv, options):
    """QCONFIG name STORE version origin policy: a queue's defaults."""
    if len(argv) != 6 or argv[2] != b"STORE":
        raise ValueError("QCONFIG record: QCONFIG name STORE version origin policy")
    policy = policy_codec.decode(bytes(argv[5]))
    node.apply_queue_policy(bytes(argv[1]), policy_codec.QueuePolicy(
        policy, int(argv[3]), bytes(argv[4]).decode("ascii")), log=False)


def replay_idemkey(node, argv, options):
    """IDEMKEY queue key id until-ms: an idempotency key's tombstone
    (core/jobs/idempotency.py), dropped if its time is over."""
    if len(argv) != 5:
        raise ValueError("IDEMKEY record: IDEMKEY queue key id until-ms")
    node.key_tombstone(bytes(argv[1]), bytes(argv[2]), bytes(argv[3]), int(argv[4]))


def replay_schedule(node, argv, options):
    """SCHEDULE name STORE version origin schedule, SCHEDULE name FIRED
    tick node job-id, or SCHEDULE name DROP version origin: a periodic
    job's definition, its last tick, a tombstone forgotten
    (core/jobs/schedules.py)."""
    if len(argv) == 6 and argv[2] == b"STORE":
        name = bytes(argv[1])
        node.schedules.apply(schedule_codec.decode(
            name, bytes(argv[5]), int(argv[3]), bytes(argv[4]).decode("ascii")), log=False)
    elif len(argv) == 6 and argv[2] == b"FIRED":
        node.schedules.mark_fired(bytes(argv[1]), int(argv[3]), bytes(argv[4]).decode("ascii"),
                                  bytes(argv[5]), log=False)
    elif len(argv) == 5 and argv[2] == b"DROP":
        node.schedules.replay_drop(bytes(argv[1]), int(argv[3]), bytes(argv[4]).decode("ascii"))
    else:
        raise ValueError("SCHEDULE record: SCHEDULE name STORE version origin schedule "
                         "| SCHEDULE name FIRED tick node job-id "
                         "| SCHEDULE name DROP version origin")


REPLAY = {aof.LOADJOB: _replay_loadjob_argv, aof.DELJOB: replay_deljob,
          b"QCONFIG": replay_qconfig, b"IDEMKEY": replay_idemkey,
          b"SCHEDULE": replay_schedule}


def load(node, path, truncate_ok, enqueue_once, progress=None):
    """Replay the file into ``node``; a generator that yields every few
    thousand records so the caller can let other tasks run, with
    ``progress`` (a LoadProgress) brought up to date.  Its value
    (StopIteration) is the Options with the counts.  Raises LoadError."""
    if progress is None:
        progress = LoadProgress()
    options = Options(node.now_ms(), enqueue_once)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return options
    except OSError as exc:
        raise LoadError(f"Fatal error: can't open the append log file for "
                        f"reading: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LoadError(f"Fatal error: the append only file {path} is not "
                            f"a regular file")
        size = info.st_size
        if size == 0:
            return options
        buf = mmap.mmap(fd, size, prot=mmap.PROT_READ)
    except OSError as exc:
        raise LoadError(f"Fatal error: can't read the append only file {path}: "
                        f"{exc.strerror}") from None
    finally:
        os.close(fd)
    started = time.monotonic()
    progress.total_bytes = size
    progress.started = started
    collecting = gc.isenabled()
    gc.disable()  # a million new long-lived objects: no point scanning them
    try:
        yield from _replay(node, buf, size, path, truncate_ok, options, started, progress)
        options.deferred.flush(node)
    finally:
        buf.close()
        if collecting:
            gc.freeze()  # what we loaded lives long: keep it out of later scans
            gc.enable()
    log.notice(f"DB loaded from append only file: "
               f"{time.monotonic() - started:.3f} seconds ({options.jobs} jobs, "
               f"{options.expired} expired dropped, {options.deleted} deleted)")
    return options


def _replay(node, buf, size, path, truncate_ok, options, started, progress):
    parse = aof.parse
    loadjob = aof.LOADJOB
    head = aof.LOADJOB_HEAD
    head_len = len(head)
    replay = REPLAY
    pos = 0
    count = 0
    next_progress = started + PROGRESS_EVERY_S
    log.notice(f"Loading the append only file {path} ({size} bytes)")
    # A MULTI ... EXEC block (an EXEC's or a script's writes) is kept here
    # and applied only once its EXEC is read: (offset of MULTI, records).
    block = None
    while pos < size:
        record = pos
        try:
            # The common case, inline: a well-formed LOADJOB.
            if block is None and buf[pos:pos + head_len] == head:
                nl = buf.find(b"\r\n", pos + head_len, pos + head_len + 21)
                digits = buf[pos + head_len:nl] if nl > 0 else b""
                if digits.isdigit():
                    start = nl + 2
                    stop = start + int(digits)
                    if stop + 2 <= size and buf[stop:stop + 2] == b"\r\n":
                        replay_loadjob(node, (buf, start, stop), options)
                        pos = stop + 2
                        count += 1
                        if count % YIELD_EVERY == 0:
                            next_progress = _progress(pos, options, progress,
                                                      next_progress)
                            yield
                        continue
            # Anything else, and the precise diagnosis of a bad record.
            try:
                argv, next_pos = parse(buf, pos, size)
            except aof.Truncated:
                # A torn block goes whole, as Redis reverts an incomplete
                # MULTI/EXEC at the tail.
                _truncated(path, pos if block is None else block[0], size, truncate_ok)
                return
            except aof.FormatError as exc:
                raise LoadError(
                    f"Bad file format reading the append only file {path}: "
                    f"{exc.reason} at offset {exc.offset} (the record starting at "
                    f"offset {pos}). Make a backup of the file, then keep only its "
                    f"first {pos} bytes (for example: truncate -s {pos} {path}, "
                    f"or trisque-server --check-aof --fix {path}) "
                    f"to load every record before that point.",
                    pos if block is None else block[0]) from None
            name = argv[0]
            if name is loadjob:
                start, stop = argv[1]
                if block is not None:
                    block[1].append((replay_loadjob, (buf, start, stop)))
                else:
                    replay_loadjob(node, (buf, start, stop), options)
            else:
                upper = name.upper()
                if upper == b"MULTI":
                    if block is not None:
                        raise ValueError("MULTI inside MULTI")
                    block = (record, [])
                elif upper == b"EXEC" or upper == b"DISCARD":
                    if block is None:
                        raise ValueError(f"{upper.decode()} without MULTI")
                    if upper == b"EXEC":
                        for handler, args in block[1]:
                            handler(node, args, options)
                    block = None  # (DISCARD: a script cut short, dropped)
                else:
                    handler = replay.get(upper)
                    if handler is None:
                        raise LoadError(
                            f"Unknown command '{name.decode(errors='replace')}' "
                            f"reading the append only file {path} at offset {pos}",
                            record if block is None else block[0])
                    if block is not None:
                        block[1].append((handler, argv))
                    else:
                        handler(node, argv, options)
        except ValueError as exc:
            raise LoadError(
                f"Unrecoverable error loading the append only file {path}: "
                f"{exc} in the record at offset {record}. Make a backup of the "
                f"file, then keep only its first {record} bytes (for example: "
                f"truncate -s {record} {path}) to load every record before it.",
                record if block is None else block[0]) from None
        pos = next_pos
        count += 1
        if count % YIELD_EVERY == 0:
            next_progress = _progress(pos, options, progress, next_progress)
            yield
    if block is not None:
        log.warning(f"Revert incomplete MULTI/EXEC transaction in AOF file {path}")
        _truncated(path, block[0], size, truncate_ok)


def _progress(pos, options, progress, next_progress):
    progress.update(pos, options.jobs)
    now = time.monotonic()
    if now < next_progress:
        return next_progress
    log.notice(progress.log_line())
    return now + PROGRESS_EVERY_S


def _truncated(path, valid, size, truncate_ok):
    dropped = size - valid
    if not truncate_ok:
        raise LoadError(
            f"Unexpected end of file reading the append only file {path}: the "
            f"last {dropped} bytes (from offset {valid}) are an incomplete "
            f"record. You can: 1) make a backup of the file, then keep only "
            f"its first {valid} bytes (truncate -s {valid} {path}); 2) set "
            f"'aof-load-truncated yes' and restart the server.", valid)
    log.warning("!!! Warning: short read while loading the AOF file !!!")
    log.warning(f"!!! Truncating the AOF at offset {valid}: {dropped} bytes "
                f"of an incomplete last record dropped !!!")
    try:
        os.truncate(path, valid)
    except OSError as exc:
        raise LoadError(f"Error truncating the AOF file {path}: "
                        f"{exc.strerror}") from None
    log.warning("AOF loaded anyway because aof-load-truncated is enabled")
