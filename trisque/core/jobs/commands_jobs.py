"""Job commands: ADDJOB, GETJOB (also named GETJOBS), ACKJOB, FASTACK,
NACK, ENQUEUE, DEQUEUE, WORKING, DELJOB, SHOW, JSCAN.  Replies and errors
are Disque's, in RESP2 shapes unless the client opted in to RESP3 types
(client.py)."""

from typing import Any, Final

from ...protocol import errors, jobid, resp
from ...protocol.args import decimal, to_int
from ...protocol.errors import CommandError

from ..client import BlockedGet, Client
from ..hooks import WORKING
from .job import ACKED, ACTIVE, BCAST_WILLQUEUE, QUEUED, STATE_BY_NAME, STATE_NAMES, Job
from .job_reply import job_reply
from ..node import Node
from .policy import (DEFAULT_PRIORITY, MAX_DELIVERIES_MAX, MAX_IDEMPOTENCY_BYTES, MAX_PRIORITY,
                     MAX_REASON_BYTES, MIN_PRIORITY, Policy, derived, parse_option, share)
from .queue import PAUSED_IN, PAUSED_OUT, Queue
from .scan import parse_scan_args, scan
from ..command import Commands

COMMANDS = Commands("jobs")
command = COMMANDS.command

TTL_DEFAULT_S: Final = 24 * 3600
RETRY_DEFAULT_MAX_S: Final = 300
_RETRY_FOR_DEFAULT_TTL_S: Final = max(1, min(TTL_DEFAULT_S // 10, RETRY_DEFAULT_MAX_S))
U32_MAX: Final = 2**32 - 1
# ADDJOB's options read in its own loop (_addjob_option); the others go to
# policy.parse_option.
_REPLICATE: Final = 1
_TTL: Final = 2
_RETRY: Final = 3
_DELAY: Final = 4
_MAXLEN: Final = 5
_ASYNC: Final = 6
_PRIORITY: Final = 7
_MAXDELIVERIES: Final = 8
_IDEMPOTENCY: Final = 9
_ADDJOB_OPTIONS: Final[dict[bytes, int]] = {
    b"REPLICATE": _REPLICATE,
    b"TTL": _TTL,
    b"RETRY": _RETRY,
    b"DELAY": _DELAY,
    b"MAXLEN": _MAXLEN,
    b"ASYNC": _ASYNC,
    b"PRIORITY": _PRIORITY,
    b"MAXDELIVERIES": _MAXDELIVERIES,
    b"IDEMPOTENCY": _IDEMPOTENCY,
}


def _addjob_option(arg: bytes) -> int:
    """The code of ADDJOB's option ``arg``, 0 if not one of these.  A name
    as clients send it, in capitals, is found by comparing it with each
    (compiled, a comparison of bytes stops at their lengths or first byte),
    without hashing the request's new bytes object for a dict lookup or
    upper(), a generic method call; other spellings go through both."""
    if arg == b"REPLICATE":
        return _REPLICATE
    if arg == b"TTL":
        return _TTL
    if arg == b"RETRY":
        return _RETRY
    if arg == b"DELAY":
        return _DELAY
    if arg == b"MAXLEN":
        return _MAXLEN
    if arg == b"ASYNC":
        return _ASYNC
    if arg == b"PRIORITY":
        return _PRIORITY
    if arg == b"MAXDELIVERIES":
        return _MAXDELIVERIES
    if arg == b"IDEMPOTENCY":
        return _IDEMPOTENCY
    return _ADDJOB_OPTIONS.get(arg.upper(), 0)


def parse_timeout_ms(arg: bytes) -> int:
    value = to_int(arg, "ERR timeout is not an integer or out of range")
    if value < 0:
        raise CommandError("ERR timeout is negative")
    return value


def validate_ids(ids: list[bytes]) -> None:
    """All IDs must be well formed before any is acted on."""
    for job_id in ids:
        if not jobid.is_valid(job_id):
            raise CommandError(errors.BADID)


@command("ADDJOB", -4, "write denyoom fast",
         "Add a job to a queue, replicated to REPLICATE nodes",
         "queue body ms-timeout [REPLICATE count] [DELAY sec] [RETRY sec] "
         "[TTL sec] [MAXLEN count] [ASYNC] [MAXDELIVERIES count] [DEADLETTER queue] "
         "[BACKOFF linear|exponential|none base-sec max-sec] [IDEMPOTENCY key] "
         "[PRIORITY level]")
def addjob(node: Node, client: Client, argv: list[bytes]) -> Any:
    """ADDJOB queue body timeout_ms [REPLICATE n] [DELAY s] [RETRY s]
    [TTL s] [MAXLEN n] [ASYNC] [MAXDELIVERIES n] [DEADLETTER q]
    [BACKOFF kind base max] [IDEMPOTENCY key] [PRIORITY n] (the last
    five: docs/lifecycle.md)"""
    if len(argv[2]) > node.config.max_job_size:
        # A bound on every job a peer must hold too (Disque had none but
        # proto-max-bulk-len): refused before anything is allocated for it.
        raise CommandError(f"ERR job body too big: {len(argv[2])} bytes, "
                           f"max-job-size is {node.config.max_job_size}")
    cluster = node.cluster
    replicate = min(3, node.cluster_size)
    ttl_s = TTL_DEFAULT_S
    retry_s = -1
    delay_s = 0
    maxlen = 0
    asynchronous = False
    # MAXDELIVERIES and PRIORITY (0: not given) are read here; the other
    # policy options (and a key) are parsed into a Policy of the job's own.
    max_deliveries = 0
    priority = 0
    policy: Policy | None = None
    external = node.memory_level() > 0 or node.leaving
    i, argc = 4, len(argv)
    while i < argc:
        opt = _addjob_option(argv[i])
        has_value = i + 1 < argc
        if opt == _REPLICATE and has_value:
            replicate = _bounded(argv[i + 1], 1, 65535,
                                 "ERR REPLICATE must be between 1 and 65535")
            i += 1
        elif opt == _TTL and has_value:
            ttl_s = _bounded(argv[i + 1], 1, None, "ERR TTL must be a number > 0")
            i += 1
        elif opt == _RETRY and has_value:
            retry_s = _bounded(argv[i + 1], 0, None,
                               "ERR RETRY time must be a non negative number")
            i += 1
        elif opt == _DELAY and has_value:
            delay_s = _bounded(argv[i + 1], 0, None,
                               "ERR DELAY time must be a non negative number")
            i += 1
        elif opt == _MAXLEN and has_value:
            maxlen = _bounded(argv[i + 1], 1, None, "ERR MAXLEN must be a positive number")
            i += 1
        elif opt == _ASYNC:
            asynchronous = True
        elif opt == _PRIORITY and has_value:
            priority = decimal(argv[i + 1])
            if not MIN_PRIORITY <= priority <= MAX_PRIORITY:
                raise CommandError(
                    f"ERR PRIORITY must be between {MIN_PRIORITY} and {MAX_PRIORITY}")
            i += 1
        elif opt == _MAXDELIVERIES and has_value:
            max_deliveries = decimal(argv[i + 1])
            if not 0 <= max_deliveries <= MAX_DELIVERIES_MAX:
                raise CommandError(
                    f"ERR MAXDELIVERIES must be between 0 and {MAX_DELIVERIES_MAX}")
            i += 1
        elif opt == _IDEMPOTENCY and has_value:
            key = argv[i + 1]
            if not key or len(key) > MAX_IDEMPOTENCY_BYTES:
                raise CommandError(
                    f"ERR IDEMPOTENCY key must be 1 to {MAX_IDEMPOTENCY_BYTES} bytes")
            if policy is None:
                policy = Policy()
            policy.idempotency_key = key
            i += 1
        else:
            if policy is None:
                policy = Policy()
            after = parse_option(policy, argv, i)
            if after == i:
                raise CommandError(errors.SYNTAX)
            i = after
            continue
        i += 1
    timeout_ms = decimal(argv[3])
    if timeout_ms < 0:
        timeout_ms = parse_timeout_ms(argv[3])
    if argc > 4:
        # Disque keeps these in 32-bit fields (and so does our job record):
        # larger values (over 136 years) are clamped, not wrapped.
        ttl_s = min(ttl_s, U32_MAX)
        retry_s = min(retry_s, U32_MAX)
        delay_s = min(delay_s, U32_MAX)
    if replicate > 1 and retry_s == 0:
        raise CommandError("ERR With RETRY set to 0 please explicitly set  "
                           "REPLICATE to 1 (at-most-once delivery)")
    if delay_s >= ttl_s:
        raise CommandError("ERR The specified DELAY is greater than TTL. Job "
                           "refused since would never be delivered")
    if retry_s == -1:
        retry_s = (_RETRY_FOR_DEFAULT_TTL_S if ttl_s == TTL_DEFAULT_S
                   else max(1, min(ttl_s // 10, RETRY_DEFAULT_MAX_S)))

    if policy is not None and policy.idempotency_key:
        # Added here before within its TTL: the same answer, nothing new.
        found = node.find_idempotent(argv[1], policy.idempotency_key)
        if found is not None:
            node.stats.deduplicated_adds += 1
            return b"+%s\r\n" % found

    others_needed = replicate if external else replicate - 1
    if others_needed and others_needed > (reachable := cluster.reachable_count()):
        if external and others_needed - 1 == reachable:
            reason = "I'm leaving the cluster" if node.leaving else "I'm out of memory"
            raise CommandError(
                "NOREPL Not enough reachable nodes for the requested replication "
                "level, since I'm unable to hold a copy of the message for the "
                f"following reason: {reason}")
        raise CommandError(errors.NOREPL_NODES)

    qname = argv[1]
    queue: Queue | None = node.queue_named(qname)
    if queue is not None:
        qname = queue.name  # one name object for all its jobs (memory)
        if maxlen and len(queue.jobs) >= maxlen:
            raise CommandError(errors.MAXLEN)
        if queue.paused & PAUSED_IN:
            raise CommandError(errors.PAUSED_IN)

    now_ms = node.now_ms()
    replicated = replicate > 1 or external
    if replicated:
        reply = b""  # (the replication's, once enough copies are made)
        job_id = node.ids.new(ttl_s, retry_s)
    else:
        reply = node.ids.new_reply(ttl_s, retry_s)  # the ID in its reply: one build
        job_id = reply[1:-2]
    job = node.create_job(job_id, qname, argv[2], replicate, ttl_s, retry_s, delay_s, now_ms)
    # Only a job with options or in a queue with defaults has a policy (a
    # reset queue's entry sets nothing: its jobs are plain); one of only
    # settings is shared with the jobs of the same (policy.derived).
    default = node.queue_policies.get(qname) if node.queue_policies else None
    base = None if default is None or default.is_reset() else default.policy
    if policy is not None:
        if max_deliveries:
            policy.max_deliveries = max_deliveries
        if priority:
            policy.priority = priority
        job_policy(job, base, policy)
    elif max_deliveries or priority or base is not None:
        job.policy = derived(base, max_deliveries, priority)
    if replicated:
        # Synchronous replication blocks the client until enough nodes
        # confirmed (or answers now, for ASYNC); see cluster/replication.py.
        # Inside EXEC or a script nothing waits: ADDJOB acts as ASYNC.
        asynchronous = asynchronous or node.blocking.atomic_depth > 0
        return node.replication.replicate(job, client, timeout_ms, asynchronous, external,
                                         now_ms)
    job.state = ACTIVE
    job.nodes_delivered = node.just_me()
    node.register(job)
    if node.log_active:
        node.log.job_stored(job)
    if delay_s:
        node.schedule(job)
    else:
        node.enqueue_new(job, queue if queue is not None else node.get_queue(qname), now_ms)
    return reply


def job_policy(job: Job, default: Policy | None, given: Policy) -> None:
    """The job's policy: its queue's defaults (QCONFIG), overridden by the
    options ADDJOB was given (parsed into ``given``, this ADDJOB's own).
    None if that says nothing; interned if it only holds settings."""
    if default is None:
        policy = given  # (no copy: the job keeps it, or its interned equal)
    else:
        policy = default.copy()
    if policy is not given:
        if given.max_deliveries:
            policy.max_deliveries = given.max_deliveries
        if given.dead_letter:
            policy.dead_letter = given.dead_letter
        if given.backoff:
            policy.backoff, policy.base_ms, policy.max_ms = (
                given.backoff, given.base_ms, given.max_ms)
        policy.idempotency_key = given.idempotency_key
        if given.priority:
            policy.priority = given.priority
    if policy.priority == DEFAULT_PRIORITY:
        policy.priority = 0  # (the level of a job that says nothing)
    if not policy.is_default():
        job.policy = share(policy)


def _bounded(arg: bytes, low: int, high: int | None, message: str) -> int:
    value = decimal(arg)
    if value < 0:
        try:
            value = to_int(arg)
        except CommandError:
            raise CommandError(message) from None
    if value < low or (high is not None and value > high):
        raise CommandError(message)
    return value


_FROM: Final = 1
_NOHANG: Final = 2
_WITHCOUNTERS: Final = 3
_TIMEOUT: Final = 4
_COUNT: Final = 5
_GETJOB_OPTIONS: Final = {b"FROM": _FROM, b"NOHANG": _NOHANG, b"WITHCOUNTERS": _WITHCOUNTERS,
                          b"TIMEOUT": _TIMEOUT, b"COUNT": _COUNT}


def _getjob_option(arg: bytes) -> int:
    """The code of GETJOB's option ``arg``, 0 if not one of these: as
    _addjob_option, an int (compiled, comparing an optional one is a
    generic call each) found without hashing the request's bytes."""
    if arg == b"FROM":
        return _FROM
    if arg == b"TIMEOUT":
        return _TIMEOUT
    if arg == b"COUNT":
        return _COUNT
    if arg == b"NOHANG":
        return _NOHANG
    if arg == b"WITHCOUNTERS":
        return _WITHCOUNTERS
    return _GETJOB_OPTIONS.get(arg.upper(), 0)


_GETJOB_HELP: Final = ("Fetch jobs from the first queues that have some, or block",
                       "[NOHANG] [TIMEOUT ms-timeout] [COUNT count] [WITHCOUNTERS] "
                       "FROM queue1 queue2 ... queueN")


# GETJOBS: another name of GETJOB (same grammar, replies and errors), the
# one users read in this project's description.
@command("GETJOBS", -2, "write fast", *_GETJOB_HELP)
@command("GETJOB", -2, "write fast", *_GETJOB_HELP)
def getjob(node: Node, client: Client, argv: list[bytes]) -> bytes | None:
    """GETJOB [NOHANG] [TIMEOUT ms] [COUNT n] [WITHCOUNTERS] FROM queue..."""
    timeout_ms = 0
    count = 1
    nohang = False
    withcounters = False
    names = None
    i, argc = 1, len(argv)
    while i < argc:
        opt = _getjob_option(argv[i])
        has_value = i + 1 < argc
        if opt == _FROM:
            names = argv[i + 1:]  # everything after FROM is a queue name
            break
        elif opt == _NOHANG:
            nohang = True
        elif opt == _WITHCOUNTERS:
            withcounters = True
        elif opt == _TIMEOUT and has_value:
            timeout_ms = parse_timeout_ms(argv[i + 1])
            i += 1
        elif opt == _COUNT and has_value:
            count = _bounded(argv[i + 1], 1, None,
                             "ERR COUNT must be a number greater than zero")
            i += 1
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    if not names:
        raise CommandError(errors.SYNTAX)
    if len(names) > node.config.getjob_max_queues:
        # each named queue is created and watched: a bound on one request's work
        raise CommandError(f"ERR too many queues in GETJOB: {len(names)}, "
                           f"getjob-max-queues is {node.config.getjob_max_queues}")

    # Round robin over the queues, left to right, until COUNT jobs or none left.
    out = []
    now_ms = node.now_ms()
    progress = True
    single: Queue | None = None  # the queue of a GETJOB of one (blocked on below)
    if len(names) == 1:
        # The same rule for the usual single queue, with less bookkeeping:
        # take while there are jobs; a queue found empty asks for more.
        name = names[0]
        queue: Queue | None = node.queue_named(name)
        if queue is None:
            queue = node.get_queue(name)  # as Disque's GETJOB: it exists now
        queue.consumer_ms = now_ms
        single = queue
        if not queue.paused & PAUSED_OUT:
            jobs = queue.jobs
            if count == 1 and len(jobs):  # (the usual GETJOB: its reply in one build)
                return job_reply(node.fetch(queue, now_ms), withcounters, b"*1\r\n")
            while count and len(jobs):  # (compiled, len a native call; truth a generic one)
                out.append(job_reply(node.fetch(queue, now_ms), withcounters))

                count -= 1
        if count and node.cluster_size > 1:
            node.federation.need_jobs(queue, now_ms)  # (federation: nobody to ask alone)
        progress = False
    while count and progress:
        progress = False
        for name in names:
            queue = node.queue_named(name)
            if queue is None:
                queue = node.get_queue(name)
            queue.consumer_ms = now_ms
            if not queue.jobs or queue.paused & PAUSED_OUT:
                if node.cluster_size > 1:
                    node.federation.need_jobs(queue, now_ms)
                continue
            out.append(job_reply(node.fetch(queue, now_ms), withcounters))
            progress = True
            count -= 1
            if not count:
                break
    if out:
        if len(out) == 1:
            return b"*1\r\n" + out[0]
        return b"*%d\r\n%s" % (len(out), b"".join(out))
    if nohang or node.blocking.atomic_depth:  # inside EXEC/a script: NOHANG
        return resp.null_array(client.disque_proto())
    if node.leaving:
        raise CommandError(errors.LEAVING)
    if single is not None:
        # (one queue, the usual: no dict of the names to drop repeats, and
        # the queue found above: nothing in between drops a queue)
        unique = names
        single.blocked[client] = None
    else:
        unique = list(dict.fromkeys(names))
        for name in unique:
            node.get_queue(name).blocked[client] = None
    node.block(client, BlockedGet(unique, withcounters), timeout_ms)
    return None


class JobsById:
    """A command that takes a list of job IDs: every ID is checked before
    any is acted on, each is looked up (None: not known here), and the reply
    counts the jobs ``act`` acted on.  (A class, not a function passed
    around: compiled, ``act`` is a native call.)"""

    def run(self, node: Node, argv: list[bytes]) -> bytes:
        if len(argv) == 2:
            # One ID, the usual ACKJOB: no list of the IDs made and freed
            job_id = argv[1]
            if not jobid.is_valid(job_id):
                raise CommandError(errors.BADID)
            return resp.ONE if self.act(node, job_id, node.jobs.get(job_id)) else resp.ZERO
        ids = argv[1:]
        validate_ids(ids)
        jobs = node.jobs
        done = 0
        for job_id in ids:
            if self.act(node, job_id, jobs.get(job_id)):
                done += 1
        return resp.integer(done)

    def act(self, node: Node, job_id: bytes, job: Job | None) -> bool:
        raise NotImplementedError


class Ack(JobsById):
    def act(self, node: Node, job_id: bytes, job: Job | None) -> bool:
        if job is None:
            # An ack for a job we never saw may still matter elsewhere: the
            # cluster keeps a "dummy ack" for IDs whose TTL digits are odd.
            node.acks.dummy_ack(job_id)
            if node.waited:  # (an ack all the same, for WAITJOB here)
                node.settle_waits(job_id, ACKED)
            return False
        if job.state != ACKED:
            node.ack(job)
            return True
        node.acks.try_gc(job)
        return False


class FastAck(JobsById):
    def act(self, node: Node, job_id: bytes, job: Job | None) -> bool:
        node.acks.fast_ack(job, job_id)
        if node.waited:
            node.settle_waits(job_id, ACKED)
        if job is None:
            return False
        node.delete_job(job)
        return True


class Requeue(JobsById):
    def __init__(self, nack: bool) -> None:
        self.nack = nack  # NACK: counted as a nack, not an additional delivery

    def act(self, node: Node, job_id: bytes, job: Job | None) -> bool:
        return job is not None and job.state == ACTIVE and node.enqueue(job, self.nack)


class Dequeue(JobsById):
    def act(self, node: Node, job_id: bytes, job: Job | None) -> bool:
        return job is not None and node.dequeue(job)


class Revive(JobsById):
    def act(self, node: Node, job_id: bytes, job: Job | None) -> bool:
        return job is not None and node.revive(job)


class Delete(JobsById):
    def act(self, node: Node, job_id: bytes, job: Job | None) -> bool:
        if job is None:
            return False
        node.delete_job(job)
        return True


_ACK: Final = Ack()
_FAST_ACK: Final = FastAck()
_ENQUEUE: Final = Requeue(nack=False)
_NACK: Final = Requeue(nack=True)
_DEQUEUE: Final = Dequeue()
_DELETE: Final = Delete()
_REVIVE: Final = Revive()


@command("ACKJOB", -1, "write fast",
         "Acknowledge jobs: they will never be delivered again", "jobid1 jobid2 ... jobidN")
def ackjob(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _ACK.run(node, argv)


@command("FASTACK", -1, "write fast",
         "Acknowledge jobs with a best-effort delete on every node", "jobid1 jobid2 ... jobidN")
def fastack(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _FAST_ACK.run(node, argv)


@command("ENQUEUE", -1, "write denyoom fast",
         "Put active jobs back in their queue now", "jobid1 jobid2 ... jobidN")
def enqueue(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _ENQUEUE.run(node, argv)


@command("NACK", -1, "write denyoom fast",
         "Put active jobs back in their queue now (or after DELAY), counting a nack; "
         "DEAD: to their dead-letter queue now",
         "jobid1 jobid2 ... jobidN [DELAY sec] [REASON text] [DEAD]")
def nack(node: Node, client: Client, argv: list[bytes]) -> bytes:
    if ((len(argv) >= 4 and argv[-2].upper() in _NACK_OPTIONS)
            or (len(argv) >= 3 and argv[-1].upper() == b"DEAD")):
        return _nack_with_options(node, argv)
    return _NACK.run(node, argv)


_NACK_OPTIONS: Final = (b"DELAY", b"REASON", b"DEAD")


def _nack_with_options(node: Node, argv: list[bytes]) -> bytes:
    """NACK id... [DELAY s] [REASON text] [DEAD] (docs/lifecycle.md): the
    options follow the IDs; an argument that is neither is a bad ID, as
    before.  DEAD: the consumer says the job failed for good; it goes to its
    dead-letter queue now (counting the nack), as past its delivery limit."""
    end = 1
    while end < len(argv) and jobid.is_valid(argv[end]):
        end += 1
    delay_s = 0
    reason: bytes | None = None
    dead = False
    i = end
    while i < len(argv):
        opt = argv[i].upper()
        if end == 1 or opt not in _NACK_OPTIONS:
            raise CommandError(errors.BADID)
        if opt == b"DEAD":
            dead = True
            i += 1
            continue
        if i + 1 >= len(argv):
            raise CommandError(errors.SYNTAX)
        if opt == b"DELAY":
            delay_s = _bounded(argv[i + 1], 0, U32_MAX,
                               "ERR DELAY time must be a non negative number")
        else:
            reason = argv[i + 1][:MAX_REASON_BYTES]
        i += 2
    if dead and delay_s:
        raise CommandError("ERR DEAD and DELAY cannot be used together")
    done = 0
    for job_id in argv[1:end]:
        job = node.jobs.get(job_id)
        if job is None or job.state != ACTIVE:
            continue
        if reason is not None:
            policy = job.policy
            policy = policy.copy() if policy is not None else Policy()
            policy.last_error = reason
            node.set_policy(job, policy)
            node.relog(job)
        if dead:
            # (not an at-most-once job: never delivered again, as on NACK;
            # nor one dead already, which stays where it is)
            if job.retry_s and (job.policy is None or not job.policy.dead_from):
                node.dead_letter(job, True, failed=True)
                done += 1
        elif delay_s:
            if node.postpone_requeue(job, delay_s * 1000, True):
                done += 1
        elif node.enqueue(job, True):
            done += 1
    return resp.integer(done)


@command("REVIVE", -2, "write denyoom fast",
         "Put dead-lettered jobs back in the queue they died in, their counters at zero",
         "jobid1 jobid2 ... jobidN")
def revive(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _REVIVE.run(node, argv)


@command("DEQUEUE", -1, "write fast",
         "Take queued jobs out of their queue", "jobid1 jobid2 ... jobidN")
def dequeue(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _DEQUEUE.run(node, argv)


@command("DELJOB", -1, "write fast",
         "Delete jobs from this node only", "jobid1 jobid2 ... jobidN")
def deljob(node: Node, client: Client, argv: list[bytes]) -> bytes:
    return _DELETE.run(node, argv)


@command("WORKING", 2, "write fast",
         "Postpone the next delivery of a job by its RETRY time", "jobid")
def working(node: Node, client: Client, argv: list[bytes]) -> bytes:
    validate_ids(argv[1:])
    job = node.jobs.get(argv[1])
    if job is None:
        raise CommandError(errors.NOJOB)
    # Rule: no postponing once half of the TTL is gone, so one worker
    # cannot hold a job for its whole life.
    now_ms = node.now_ms()
    created_ms = job.ctime // 1000000
    ttl_ms = job.etime_ms - created_ms
    if ttl_ms > 0 and now_ms - created_ms > ttl_ms // 2:
        raise CommandError("TOOLATE Half of job TTL already elapsed, you are no "
                           "longer allowed to postpone the next delivery.")
    if job.state == QUEUED:
        node.dequeue(job)
    if job.retry_s and job.qtime_ms and job.state != ACKED:
        job.flags |= BCAST_WILLQUEUE
        job.qtime_ms = now_ms + job.retry_s * 1000 + node.jitter_ms()
        node.schedule(job)
    node.requeue.tell_holders(job, WORKING)
    return resp.integer(job.retry_s)


@command("SHOW", 2, "readonly fast",
         "Describe a job (15 fields)", "jobid")
def show(node: Node, client: Client, argv: list[bytes]) -> bytes:
    validate_ids(argv[1:])
    job = node.jobs.get(argv[1])
    if job is None:
        return resp.null(client.disque_proto())
    return resp.encode(job_info(node, job), client.disque_proto())


def job_info(node: Node, job: Job) -> dict[str, Any]:
    """SHOW's 15 fields, in Disque's order (a map for CLIENT DISQUE-RESP3),
    and a job with a delivery policy's 5 more after them."""
    now_ms = node.now_ms()
    info = {
        "id": job.id,
        "queue": job.queue,
        "state": STATE_NAMES[job.state],
        "repl": job.repl,
        "ttl": max(0, -((now_ms - job.etime_ms) // 1000)),  # rounded up
        "ctime": job.ctime,
        "delay": job.delay_s,
        "retry": job.retry_s,
        "nacks": job.nacks,
        "additional-deliveries": job.deliveries,
        "nodes-delivered": list(job.nodes_delivered),
        "nodes-confirmed": list(job.nodes_confirmed or ()),
        "next-requeue-within": (max(0, job.qtime_ms - now_ms)
                                if job.qtime_ms else None),
        "next-awake-within": (max(0, job.wake_ms - now_ms)
                              if job.wake_ms is not None else None),
        "body": job.body,
    }
    policy = job.policy
    if policy is not None and not policy.delivery_default():
        info["max-deliveries"] = policy.max_deliveries
        info["dead-letter"] = (policy.dead_letter_queue(policy.dead_from or job.queue)
                               if policy.max_deliveries else None)
        info["backoff"] = policy.backoff_text()
        info["dead-from"] = policy.dead_from or None
        info["last-error"] = policy.last_error or None
    if policy is not None and policy.idempotency_key:
        info["idempotency-key"] = policy.idempotency_key
    if policy is not None and policy.priority:
        info["priority"] = policy.priority
    if node.waited and (waiters := node.waits.waiters_of(job.id)):
        info["waiters"] = waiters  # WAITJOBs here and on the nodes that asked us
    return info


@command("JSCAN", -1, "readonly",
         "Iterate the jobs of this node",
         "[cursor] [COUNT count] [BUSYLOOP] [QUEUE queue] [STATE state1 "
         "STATE state2 ... STATE stateN] [REPLY all|id]")
def jscan(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """JSCAN [cursor] [COUNT n] [BUSYLOOP] [QUEUE q] [STATE s]... [REPLY all|id]"""
    queue: bytes | None = None
    states: set[int] = set()
    reply_all = False

    def own_option(name: bytes, value: bytes) -> bool:
        nonlocal queue, reply_all
        if name == b"QUEUE":
            queue = value
        elif name == b"STATE":
            state = STATE_BY_NAME.get(value.lower())
            if state is None:
                raise CommandError("ERR Invalid job state name")
            states.add(state)
        elif name == b"REPLY":
            kind = value.upper()
            if kind not in (b"ID", b"ALL"):
                raise CommandError("ERR Invalid REPLY type, try ID or ALL")
            reply_all = kind == b"ALL"
        else:
            return False
        return True

    cursor, count, busyloop = parse_scan_args(argv, own_option)

    def wanted(job: Job) -> bool:
        if job.flags & 8:  # dummy acks are bookkeeping, not jobs
            return False
        if queue is not None and job.queue != queue:
            return False
        return not states or job.state in states

    cursor, jobs = scan(node.jobs, cursor, count, busyloop, wanted,
                        node.deletions)
    items: list[Any]
    if reply_all:
        items = [job_info(node, job) for job in jobs]
    else:
        items = [resp.Status(job.id.decode()) for job in jobs]
    return resp.encode([str(cursor), items], client.disque_proto())


@command("LOADJOB", 2, "write",
         "Load a serialized job (append-only file only)", "serialized-job")
def loadjob(node: Node, client: Client, argv: list[bytes]) -> bytes:
    raise CommandError("ERR LOADJOB is a special command only processed from AOF")
