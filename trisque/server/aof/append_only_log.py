"""The append-only file (AOF): Disque's persistence, in real files.

What is logged, as RESP commands (``protocol/aof.py``): ``LOADJOB`` when a
job is stored here (ADDJOB, a replica received, synchronous replication
reached) and ``DELJOB`` when it is acked or evicted.  Other components (the
keyspace: ``aof_keys.py``) log their writes with ``append_command(*argv)``,
register a replay handler in ``aof_load.REPLAY`` and a snapshot source in
``aof_rewrite.SNAPSHOT_SOURCES``.

When a record reaches the disk:

- The core calls ``job_stored``/``job_deleted`` synchronously and the record
  is handed to the kernel (``os.write``) before the call returns, so before
  any reply or bus message that depends on it can be sent.  A process crash
  (kill -9) never loses a record whose command was answered.
- ``appendfsync always``: replies also wait for an ``fsync`` covering their
  records.  The fsync runs in a worker thread (never in the event loop) and
  covers every record written before it started (group commit).  The shell
  asks: every record up to ``end`` has been logged; a reply that depends on
  records up to ``mark`` may go once ``durable >= mark``
  (``wait_durable(mark)`` for a client task, ``hold(mark, resume, conn)``
  for output produced elsewhere).  Under the other policies ``durable``
  follows ``written`` at once, so nothing waits.
- ``everysec``: a worker thread fsyncs once a second; ``no``: the kernel
  decides.

If a write fails (disk full, I/O error), the records stay in memory, write
commands and PING get ``-MISCONF`` (``failing`` is the reason) and the log
retries every second; the first successful write clears the error.

``appendonly yes`` set at runtime first writes a complete file with a
background rewrite (state ``wait-rewrite``), then appends; ``no`` closes
the file.  BGREWRITEAOF and automatic rewrites compact the file while the
node serves (``aof_rewrite.py``); ``SHUTDOWN REWRITE-AOF`` writes it
synchronously on the way out, for controlled restarts.
"""

import errno
import glob
import heapq
import os
import time

import trio

from ...protocol import aof
from ...protocol.errors import CommandError
from ...core.admin.config import ConfigError

from . import keys as aof_keys, load as aof_load, rewrite as aof_rewrite  # noqa: F401 (aof_keys registers)
from ...shell import log
from ...shell.ticks import sleep_to_tick
from .job_record import loadjob_record
from .load_progress import LoadProgress

OFF = "off"
ON = "on"
WAIT_REWRITE = "wait-rewrite"

CRON_S = 0.1
WRITE_RETRY_S = 1.0  # after a write error, as Disque
ERROR_LOG_EVERY_S = 30
REWRITE_RETRY_S = 5.0  # after a failed rewrite that the state waits for


class AppendOnlyLog:
    """The node's ``log``: core hooks (synchronous) and shell tasks."""

    def __init__(self, node):
        self.node = node
        self.config = node.config
        self._rewriting = None
        self.state = OFF
        self.path = os.path.abspath(node.config.appendfilename)
        self.fd = -1
        # Logical offsets, counted from the start of the process (they
        # survive file switches): bytes logged, handed to the kernel,
        # covered by a finished fsync, and what replies may rely on.
        self.end = 0
        self.written = 0
        self.synced = 0
        self.durable = 0
        self.current_size = 0
        self.base_size = 0
        self.pending = []  # records not written because of an error
        self.pending_bytes = 0
        self.failing = None
        self.rewriting = None  # the running aof_rewrite.Rewrite
        self.rewrite_scheduled = False
        self.rewrite_not_before = 0.0
        self.last_rewrite_status = "ok"
        self.last_rewrite_time_s = -1
        self.last_fsync = 0  # unix seconds of the last finished fsync
        self.load_progress = None  # a LoadProgress while the AOF loads at start
        self.last_fsync_status = "ok"
        self.fsync_in_progress = False
        self.fsyncs = 0
        self._last_fsync_try = 0.0
        self._force_sync = False
        self._dir_sync = False
        self._to_close = []  # (fd, fsync first) for the sync task
        self._waiters = []  # heap of (mark, n, trio.Event)
        self._waiter_n = 0
        self._holds = []  # (mark, resume, conn)
        self._kick_event = trio.Event()
        self._nursery = None
        self._last_deleted = None
        self._last_error_log = 0.0
        self._last_write_try = 0.0
        # True when a record only needs os.write: on, no rewrite, nothing
        # pending, no fsync per write (see _refresh).
        self._plain = False
        # While a client's batch of requests runs (connection.py sets it),
        # plain records are kept here and written with one os.write at the
        # end of the batch, before any reply of it is sent.
        self.deferring = False
        self._deferred = []

    # ------------------------------------------------------- core hooks

    @property
    def enabled(self):
        return self.state != OFF

    # The node skips the job hooks while they would do nothing (no AOF and
    # no rewrite): a call into this interpreted class is dear on ADDJOB's
    # and ACKJOB's path.  Every change of either goes through here.
    @property
    def state(self):
        return self._state

    @state.setter
    def state(self, value):
        self._state = value
        self._records_jobs_changed()

    @property
    def rewriting(self):
        """The running aof_rewrite.Rewrite, or None."""
        return self._rewriting

    @rewriting.setter
    def rewriting(self, value):
        self._rewriting = value
        self._records_jobs_changed()

    @property
    def records_jobs(self):
        """Whether job_stored and job_deleted do anything now."""
        return self._state is not OFF or self._rewriting is not None

    def _records_jobs_changed(self):
        node = self.node
        if node.log is self or getattr(node.log, "real", None) is self:  # (inside EXEC)
            node.log_active = self.records_jobs

    @property
    def failing(self):
        """strerror of the last failed write, or None: kept on the node,
        whose dispatch reads it before every write command (-MISCONF)."""
        return self.node.log_failing

    @failing.setter
    def failing(self, reason):
        self.node.log_failing = reason

    def job_stored(self, job):
        """A job is stored here: log it before anyone hears about it."""
        if self._plain and self.deferring:  # the common case, inline
            data = loadjob_record(job)
            self.end += len(data)
            self._deferred.append(data)
            return
        if self.state is OFF and self.rewriting is None:
            return
        self.append(loadjob_record(job))

    def job_deleted(self, job):
        """Acked or evicted (an ack and the free that follows log once)."""
        if (self.state is OFF and self.rewriting is None) or job is self._last_deleted:
            return
        self._last_deleted = job
        self.append(aof.deljob(job.id))

    def job_updated(self, job):
        """A job changed (policy.py): DELJOB then LOADJOB, in one write, so
        a reload ends with the new version (LOADJOB keeps the first copy)."""
        if self.state is OFF and self.rewriting is None:
            return
        self._last_deleted = None
        self.append(aof.deljob(job.id) + loadjob_record(job))

    def append_command(self, *argv):
        """Log any command (bytes or str arguments), e.g. a keyspace write."""
        if self.state is OFF and self.rewriting is None:
            return
        self.append(aof.command(*argv))

    def append(self, data):
        size = len(data)
        self.end += size
        if self._plain:
            if self.deferring:
                self._deferred.append(data)
                return
            if self._deferred:
                self._flush_deferred()
            try:
                written = self._os_write(data)
            except OSError as exc:
                self._write_failed(exc.errno, data)
                return
            if written == size:
                self.current_size += size
                self.written = self.durable = self.end
            else:
                self._short_write(data, written)
            return
        rewriting = self.rewriting
        if rewriting is not None:
            rewriting.buffer.append(data)
            rewriting.buffered += size
        if self.state is not ON:
            # Off (a one-time rewrite takes it) or waiting for the first
            # rewrite, which will contain it: nothing to wait for, as Disque.
            self.written = self.durable = self.end
            return
        if self.pending:
            self.pending.append(data)
            self.pending_bytes += size
            return
        self._write(data)

    def _os_write(self, data):
        """os.write, timed into the latency monitor ("aof-write") when it
        is on: the disk's stalls are the node's."""
        latency = self.node.latency
        if not latency.threshold_ms:
            return os.write(self.fd, data)
        started = time.perf_counter()
        try:
            return os.write(self.fd, data)
        finally:
            latency.timed("aof-write", started, time.perf_counter())

    def _write(self, data):
        try:
            written = self._os_write(data)
        except OSError as exc:
            self._write_failed(exc.errno, data)
            return False
        if written != len(data):
            self._short_write(data, written)
            return False
        self.current_size += written
        self.written += written
        if self.failing is not None:
            log.warning("AOF write error looks solved, trisque can write again.")
            self.failing = None
            self._refresh()
        if self._sync_each_write():
            self._kick()
        else:
            self.durable = self.written
            if self._waiters or self._holds:
                self._release()
        return True

    def end_batch(self):
        """A client's batch is done: write what it logged (one syscall)."""
        self.deferring = False
        if self._deferred:
            self._flush_deferred()

    def _flush_deferred(self):
        deferred = self._deferred
        if deferred:
            self._deferred = []
            self._write(deferred[0] if len(deferred) == 1 else b"".join(deferred))

    def _short_write(self, data, written):
        """The disk filled up mid-record: take the partial record back out
        if we can, so the file never ends in the middle of one."""
        try:
            os.ftruncate(self.fd, self.current_size)
        except OSError as exc:
            self._log_error(f"Could not remove short write from the "
                            f"append-only file: {exc.strerror}")
            self.current_size += written
            self.written += written
            data = data[written:]
        self._write_failed(errno.ENOSPC, data)

    def _write_failed(self, code, rest):
        reason = os.strerror(code)
        self._log_error(f"Error writing to the AOF file: {reason}")
        self.failing = reason
        self.pending = [rest]
        self.pending_bytes = len(rest)
        self._last_write_try = time.monotonic()
        self._refresh()

    def _refresh(self):
        self._plain = (self.state is ON and self.rewriting is None and not self.pending
                       and self.config.appendfsync != "always")

    def _log_error(self, message):
        now = time.monotonic()
        if now - self._last_error_log >= ERROR_LOG_EVERY_S or not self._last_error_log:
            self._last_error_log = now
            log.warning(message)

    def _retry_pending(self):
        self._last_write_try = time.monotonic()
        data = b"".join(self.pending)
        self.pending = []
        self.pending_bytes = 0
        self._refresh()
        return self._write(data)

    def rewrite(self):
        """BGREWRITEAOF: returns the status text, or raises CommandError."""
        if self.rewriting is not None:
            raise CommandError("ERR Background append only file rewriting "
                               "already in progress")
        if self._start_rewrite():
            return "Background append only file rewriting started"
        return "Background append only file rewriting scheduled"

    def reload(self):
        """DEBUG LOADAOF: forget everything, then load the file again."""
        from ...core.admin.commands_server import flushall
        self._flush_deferred()
        if self.pending:
            self._retry_pending()
        if self.rewriting is not None:
            # Its snapshot holds the jobs we are about to replace: start over.
            self.rewriting.abort()
            self.rewriting = None
            self.rewrite_scheduled = True
            self._refresh()
        flushall(self.node)
        self.node.keyspace.flush_all()
        try:
            _exhaust(aof_load.load(self.node, self.path,
                                   self.config.aof_load_truncated, False))
        except aof_load.LoadError as exc:
            log.warning(str(exc))
            raise CommandError(f"ERR {exc}") from None

    def info(self):
        now = time.time()
        rewriting = self.rewriting
        fields = {
            "loading": int(self.node.loading),
            "aof_enabled": int(self.state != OFF),
            "aof_state": self.state,
            "aof_rewrite_in_progress": int(rewriting is not None),
            "aof_rewrite_scheduled": int(self.rewrite_scheduled),
            "aof_last_rewrite_time_sec": self.last_rewrite_time_s,
            "aof_current_rewrite_time_sec":
                int(now - rewriting.started) if rewriting is not None else -1,
            "aof_last_bgrewrite_status": self.last_rewrite_status,
            "aof_last_write_status": "err" if self.failing else "ok",
        }
        if self.node.loading and self.load_progress is not None:
            fields.update(self.load_progress.info_fields())
        if self.state != OFF:
            fields.update({
                "aof_current_size": self.current_size,
                "aof_base_size": self.base_size,
                "aof_pending_rewrite": int(self.rewrite_scheduled),
                "aof_buffer_length": self.pending_bytes,
                "aof_rewrite_buffer_length":
                    rewriting.buffered if rewriting is not None else 0,
                "aof_pending_bio_fsync": int(self.fsync_in_progress),
                "aof_delayed_fsync": 0,
                "aof_fsync": self.config.appendfsync,
                "aof_last_fsync": self.last_fsync,
                "aof_last_fsync_status": self.last_fsync_status,
                "aof_fsyncs": self.fsyncs,
            })
            if self.failing:
                fields["aof_last_write_error"] = self.failing
        return fields

    # --------------------------------------------- replies wait (always)

    async def wait_durable(self, mark):
        """Return once every record up to ``mark`` is as safe as the fsync
        policy promises (written; with ``always``, fsynced too)."""
        if self.durable >= mark:
            return
        event = trio.Event()
        self._waiter_n += 1
        heapq.heappush(self._waiters, (mark, self._waiter_n, event))
        self._kick()
        await event.wait()

    def hold(self, mark, resume, conn):
        """Call ``resume(conn)`` once ``durable >= mark`` (output produced
        for a client outside its own task)."""
        self._holds.append((mark, resume, conn))
        self._kick()

    def _release(self):
        durable = self.durable
        waiters = self._waiters
        while waiters and waiters[0][0] <= durable:
            heapq.heappop(waiters)[2].set()
        if self._holds:
            holds, self._holds = self._holds, []
            for item in holds:
                if item[0] <= durable:
                    item[1](item[2])
                else:
                    self._holds.append(item)

    def _sync_each_write(self):
        return (self.config.appendfsync == "always"
                and not (self.rewriting is not None
                         and self.config.no_appendfsync_on_rewrite))

    def _update_durable(self):
        if self.state is ON and self._sync_each_write():
            durable = min(self.synced, self.written)
        else:
            durable = self.written
        if durable > self.durable:
            self.durable = durable
        if self._waiters or self._holds:
            self._release()

    def _kick(self):
        event = self._kick_event
        if not event.is_set():
            event.set()

    # ---------------------------------------------------------- start/stop

    async def load(self):
        """Load the file (appendonly yes, or aof-enqueue-jobs-once), then
        open it for appending; server/main.py keeps node.loading set
        meanwhile.  Raises ConfigError if the node must not start (the
        reasons are logged)."""
        config = self.config
        node = self.node
        self.path = os.path.abspath(config.appendfilename)
        config.on_change["appendonly"] = self._on_appendonly
        config.on_change["appendfsync"] = self._on_appendfsync
        self._remove_stale_temp_files()
        if config.appendonly or config.aof_enqueue_jobs_once:
            try:
                self.load_progress = LoadProgress()
                loader = aof_load.load(node, self.path, config.aof_load_truncated,
                                       config.aof_enqueue_jobs_once, self.load_progress)
                while True:
                    try:
                        next(loader)
                    except StopIteration:
                        break
                    await trio.sleep(0)
            except aof_load.LoadError as exc:
                log.warning(str(exc))
                raise ConfigError("Refusing to start: the append only file "
                                  "cannot be loaded (see the lines above)") from None
            if config.aof_enqueue_jobs_once:
                # It applies to one restart only: turn it off, in the
                # config file too, as Disque does.
                config.aof_enqueue_jobs_once = False
                if config.config_file:
                    try:
                        config.rewrite()
                    except (ConfigError, OSError) as exc:
                        log.warning(f"CONFIG REWRITE failed (executed to turn "
                                    f"off aof-enqueue-jobs-once): {exc}")
        if config.appendonly:
            try:
                self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as exc:
                log.warning(f"Can't open the append-only file: {exc.strerror}")
                raise ConfigError(f"Can't open the append-only file "
                                  f"{self.path}: {exc.strerror}") from None
            self.state = ON
            self.current_size = self.base_size = os.fstat(self.fd).st_size
            self._last_fsync_try = time.monotonic()
            self._refresh()

    def _remove_stale_temp_files(self):
        """A rewrite killed by a crash leaves its temporary file behind."""
        directory = os.path.dirname(self.path)
        for pattern in ("temp-rewriteaof-bg-*.aof", "temp-rewriteaof-*.aof"):
            for name in glob.glob(os.path.join(glob.escape(directory), pattern)):
                try:
                    os.unlink(name)
                    log.notice(f"Removed the leftover rewrite file {name}")
                except OSError:
                    pass

    async def run(self, own_cron=True):
        """The fsync loop, and every CRON_S the cron, unless the caller
        runs it (``own_cron`` False: main.py's client loop, in its turns,
        shell/timers.py)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._sync_loop)
            while own_cron:
                await sleep_to_tick(CRON_S)  # (with the other periodic tasks)
                self.cron()

    async def close(self, rewrite=False):
        """Shutdown: finish the file (and rewrite it if asked) while no
        command can run any more (nothing here awaits)."""
        self._flush_deferred()
        rewriting = self.rewriting
        if rewriting is not None:
            log.warning("There is a background AOF rewrite in progress. Stopping it!")
            rewriting.abort()
            self.rewriting = None
        if self.state is WAIT_REWRITE:
            log.warning("Writing the initial AOF before exiting.")
            rewrite = True
        if self.state is ON:
            if self.pending:
                self._retry_pending()
            log.notice("Calling fsync() on the AOF file.")
            try:
                os.fsync(self.fd)
            except OSError as exc:
                log.warning(f"Error calling fsync() on the AOF file: {exc.strerror}")
        if rewrite:
            try:
                aof_rewrite.rewrite_now(self.node, self.path)
                log.notice("SYNC append only file rewrite performed")
            except OSError as exc:
                log.warning(f"Error rewriting the append only file: {exc.strerror}")
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.state = OFF
        self._refresh()
        self.written = self.durable = self.end
        self._release()

    def _on_appendfsync(self, value):
        self._flush_deferred()
        self._refresh()
        self._update_durable()

    def _on_appendonly(self, value):
        if self.node.loading:
            raise ConfigError("appendonly cannot change while the AOF is loading")
        self._flush_deferred()
        if value and self.state is OFF:
            self._start()
        elif not value and self.state is not OFF:
            self._stop()

    def _start(self):
        """appendonly yes at runtime: write the whole state first."""
        path = os.path.abspath(self.config.appendfilename)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            log.warning(f"trisque needs to enable the AOF but can't open the "
                        f"append only file: {exc.strerror}")
            raise ConfigError("Unable to turn on AOF. Check server logs.") from None
        os.close(fd)
        self.path = path
        self.state = WAIT_REWRITE
        self._refresh()
        self.written = self.durable = self.end
        if self.rewriting is None:
            self._start_rewrite()
        # else: the one-time rewrite in progress has buffered everything
        # since it started; it switches the file on when done.

    def _stop(self):
        """appendonly no at runtime."""
        if self.rewriting is not None:
            log.notice("Killing the running AOF rewrite")
            self.rewriting.abort()
            self.rewriting = None
        if self.pending:
            self._retry_pending()
        if self.fd >= 0:
            self._to_close.append((self.fd, True))
            self.fd = -1
            self._kick()
        self.state = OFF
        self.pending = []
        self.pending_bytes = 0
        self.failing = None
        self.rewrite_scheduled = False
        self._refresh()
        self.written = self.durable = self.end
        self._release()

    # -------------------------------------------------------------- rewrite

    def _start_rewrite(self):
        """Start a background rewrite now (True), or schedule it."""
        self._flush_deferred()  # logged before it starts: in its snapshot
        if self._nursery is None:
            self.rewrite_scheduled = True
            return False
        self.rewrite_scheduled = False
        rewriting = aof_rewrite.Rewrite(self, self.path)
        self.rewriting = rewriting
        self._refresh()
        log.notice("Background append only file rewriting started")
        self._nursery.start_soon(rewriting.run)
        return True

    def rewrite_done(self, rewriting):
        """The rewrite wrote everything logged up to now: switch files."""
        if self.rewriting is not rewriting:
            raise OSError(errno.ECANCELED, "the rewrite was stopped")
        fd = rewriting.fd
        path = self.path
        if self.state is OFF:
            # One-time rewrite with the AOF off: keep the old file open so
            # the rename does not unlink it here, in the event loop.
            try:
                old = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                old = -1
            try:
                os.rename(rewriting.tmp, path)
            except OSError:
                if old >= 0:
                    os.close(old)
                raise
            self._to_close.append((fd, True))
            if old >= 0:
                self._to_close.append((old, False))
        else:
            os.rename(rewriting.tmp, path)
            if self.fd >= 0:
                self._to_close.append((self.fd, False))
            self.fd = fd
            self.current_size = self.base_size = os.fstat(fd).st_size
            if self.state is WAIT_REWRITE:
                self.state = ON
                log.notice("The append only file is written: appending from now on")
            # Records not written because of an error are in the new file.
            if self.failing is not None:
                log.warning("AOF write error looks solved, trisque can write again.")
            self.pending = []
            self.pending_bytes = 0
            self.failing = None
            self.written = self.end
        self._force_sync = True
        self._dir_sync = True
        self.rewriting = None
        self._refresh()
        self.last_rewrite_status = "ok"
        self.last_rewrite_time_s = int(time.time() - rewriting.started)
        log.notice(f"Background AOF rewrite finished successfully "
                   f"({self.current_size if self.state is ON else 'new'} bytes)")
        self._update_durable()
        self._kick()

    def rewrite_failed(self, rewriting):
        if self.rewriting is not rewriting:
            return
        self.rewriting = None
        self._refresh()
        self.last_rewrite_status = "err"
        self.last_rewrite_time_s = int(time.time() - rewriting.started)
        # No new attempt (automatic, or for WAIT_REWRITE) for a while.
        self.rewrite_not_before = time.monotonic() + REWRITE_RETRY_S
        if self.state is WAIT_REWRITE:
            # The AOF cannot be on without a complete file: try again.
            self.rewrite_scheduled = True
        self._update_durable()

    def _auto_rewrite_due(self):
        config = self.config
        percentage = config.auto_aof_rewrite_percentage
        if (self.state is not ON or not percentage
                or self.current_size < config.auto_aof_rewrite_min_size):
            return False
        base = self.base_size or 1
        growth = self.current_size * 100 // base - 100
        if growth >= percentage:
            log.notice(f"Starting automatic rewriting of AOF on {growth}% growth")
            return True
        return False

    # ----------------------------------------------------------- the tasks

    def cron(self):
        """Every 100 ms: retry failed writes, start due rewrites, follow
        appendfsync changes.  (Each step only when its state says it may
        have work: with appendonly no and no rewrite, a tick reads a few
        attributes; bench/README.md, "A node's ticks and system calls".)"""
        if self._deferred:
            self._flush_deferred()
        active = (self._state is not OFF or self._rewriting is not None
                  or self.rewrite_scheduled or self.pending)
        now = 0.0
        if active:
            now = time.monotonic()
            if self.pending and now - self._last_write_try >= WRITE_RETRY_S:
                self._retry_pending()
            if self._rewriting is None:
                if self.rewrite_scheduled:
                    if now >= self.rewrite_not_before:
                        self._start_rewrite()
                elif now >= self.rewrite_not_before and self._auto_rewrite_due():
                    self._start_rewrite()
        # (_update_durable raises durable to at most written, and releases)
        if self.durable < self.written or self._waiters or self._holds:
            self._update_durable()
        if (active and (self._force_sync or self.synced < self.written)
                and self._sync_due(now)):
            self._kick()

    def _sync_due(self, now):
        if self.fd < 0 or self.state is not ON:
            return False
        if self._force_sync:
            return True
        if self.synced >= self.written:
            return False
        if self.rewriting is not None and self.config.no_appendfsync_on_rewrite:
            return False
        policy = self.config.appendfsync
        if policy == "always":
            return True
        if policy == "everysec":
            return now - self._last_fsync_try >= 1.0
        return False

    def _sync_wait(self, now):
        """Seconds the sync loop may sleep unkicked: until an everysec
        fsync falls due, else None (until kicked: what makes an fsync due
        kicks, the writes under always and the cron's look every tick, and
        an idle node's loop no longer wakes every second for nothing).
        Never 0 when no fsync is due: that would spin the loop."""
        if self.config.appendfsync != "everysec" or self.synced >= self.written:
            return None
        wait = 1.0 - (now - self._last_fsync_try)
        return wait if wait > 0.0 else 1.0  # (due by time, held back otherwise)

    async def _sync_loop(self):
        """fsync (and close old files) in worker threads, one at a time."""
        to_thread = trio.to_thread.run_sync
        while True:
            if self._to_close:
                closing, self._to_close = self._to_close, []
                await to_thread(_close_files, closing)
                continue
            now = time.monotonic()
            if self._sync_due(now):
                await self._fsync(to_thread)
                continue
            wait = self._sync_wait(now)
            if wait is None:
                await self._kick_event.wait()
            else:
                with trio.move_on_after(wait):
                    await self._kick_event.wait()
            self._kick_event = trio.Event()

    async def _fsync(self, to_thread):
        fd = self.fd
        target = self.written
        directory = self.path if self._dir_sync else None
        self._force_sync = False
        self._dir_sync = False
        self._last_fsync_try = time.monotonic()
        self.fsync_in_progress = True
        try:
            await to_thread(_fsync_file, fd, directory)
        except OSError as exc:
            self.last_fsync_status = "err"
            self._log_error(f"Error fsyncing the AOF file: {exc.strerror}")
            await trio.sleep(WRITE_RETRY_S)
            return
        finally:
            self.fsync_in_progress = False
        self.last_fsync_status = "ok"
        self.last_fsync = int(time.time())
        self.fsyncs += 1
        if target > self.synced:
            self.synced = target
        self._update_durable()


def _fsync_file(fd, directory_of):
    if hasattr(os, "fdatasync"):
        os.fdatasync(fd)
    else:
        os.fsync(fd)
    if directory_of is not None:
        aof_rewrite.fsync_dir(directory_of)


def _close_files(closing):
    for fd, sync in closing:
        try:
            if sync:
                os.fsync(fd)
        except OSError:
            pass
        try:
            os.close(fd)
        except OSError:
            pass


def _exhaust(generator):
    for _ in generator:
        pass


def attach_log(node):
    """The node's persistence: core hooks on ``node.log``, and the object
    main.py loads, runs and closes."""
    aof_log = AppendOnlyLog(node)
    node.log = aof_log
    return aof_log
