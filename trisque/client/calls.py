"""Each client method as data: the command to send, how to read its reply,
how long the node may hold it, and where it should go.

``Client`` and ``AsyncClient`` build the same ``Call`` objects here and
differ only in how they send them, so the two APIs cannot drift apart.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Final, Generic, Optional, Sequence, TypeVar, Union

from trisque.client import replies
from trisque.client.wire import Arg

T = TypeVar("T")

# GETJOB's wait when the caller waits without limit: the client sends
# GETJOBs of this length one after another, so that a dead connection is
# noticed within this time plus the read timeout, never a hang.
BLOCK_SLICE_MS: Final = 5000


@dataclass(frozen=True)
class Call(Generic[T]):
    args: tuple[Arg, ...]
    decode: Callable[[object], T]
    blocks_ms: int = 0  # how long the node may hold the reply on purpose
    job_ids: tuple[str, ...] = field(default=())  # route to their creator first
    consumes: bool = False  # a GETJOB: its jobs feed the consumer affinity


def _int(reply: object) -> int:
    return replies.integer(reply)


def _status(reply: object) -> str:
    return replies.text(reply)


def queue_names(queues: Union[str, Sequence[str]]) -> list[str]:
    names = [queues] if isinstance(queues, str) else list(queues)
    if not names:
        raise ValueError("no queue given")
    return names


def add_job(queue: str, body: Union[bytes, str], *, timeout_ms: int,
            replicate: Optional[int], delay_s: Optional[int], retry_s: Optional[int],
            ttl_s: Optional[int], maxlen: Optional[int], async_: bool,
            priority: Optional[int] = None, dead_letter: Optional[str] = None) -> Call[str]:
    if timeout_ms <= 0:
        raise ValueError("timeout_ms must be positive: the client waits for "
                         "ADDJOB's reply this long plus its read timeout")
    args: list[Arg] = ["ADDJOB", queue, body, timeout_ms]
    for name, value in (("REPLICATE", replicate), ("DELAY", delay_s),
                        ("RETRY", retry_s), ("TTL", ttl_s), ("MAXLEN", maxlen),
                        ("PRIORITY", priority), ("DEADLETTER", dead_letter)):
        if value is not None:
            args += [name, value]
    if async_:
        args.append("ASYNC")
    return Call(tuple(args), _status, blocks_ms=0 if async_ else timeout_ms)


def get_jobs(queues: Sequence[str], *, count: int, timeout_ms: int, nohang: bool,
             withcounters: bool) -> Call[list[replies.Job]]:
    args: list[Arg] = ["GETJOB"]
    if nohang:
        args.append("NOHANG")
    else:
        args += ["TIMEOUT", timeout_ms]
    if count != 1:
        args += ["COUNT", count]
    if withcounters:
        args.append("WITHCOUNTERS")
    args += ["FROM", *queues]
    return Call(tuple(args), replies.jobs_from_reply,
                blocks_ms=0 if nohang else timeout_ms, consumes=True)


def by_job(command: str, job_ids: Sequence[str]) -> Call[int]:
    """ACKJOB, FASTACK, NACK...: the count the node answers."""
    if not job_ids:
        raise ValueError(f"{command} needs at least one job ID")
    return Call((command, *job_ids), _int, job_ids=tuple(job_ids))


def nack_dead(job_ids: Sequence[str], reason: Optional[str]) -> Call[int]:
    """NACK ... [REASON text] DEAD: to the dead-letter queue now."""
    if not job_ids:
        raise ValueError("NACK needs at least one job ID")
    extra: tuple[str, ...] = ("REASON", reason, "DEAD") if reason is not None else ("DEAD",)
    return Call(("NACK", *job_ids, *extra), _int, job_ids=tuple(job_ids))


def working(job_id: str) -> Call[int]:
    return Call(("WORKING", job_id), _int, job_ids=(job_id,))


def show(job_id: str) -> Call[Optional[replies.JobState]]:
    return Call(("SHOW", job_id), replies.job_state_from_reply, job_ids=(job_id,))


def qlen(queue: str) -> Call[int]:
    return Call(("QLEN", queue), _int)


def qstat(queue: str) -> Call[Optional[replies.QueueStats]]:
    return Call(("QSTAT", queue), replies.queue_stats_from_reply)


def qpeek(queue: str, count: int) -> Call[list[replies.Job]]:
    return Call(("QPEEK", queue, count), replies.jobs_from_reply)


def local(command: str, job_ids: Sequence[str]) -> Call[int]:
    """ENQUEUE, DEQUEUE, DELJOB: act on the copy of the node asked."""
    if not job_ids:
        raise ValueError(f"{command} needs at least one job ID")
    return Call((command, *job_ids), _int)


def pause(queue: str, option: str) -> Call[str]:
    return Call(("PAUSE", queue, option), _status)


def hello() -> Call[replies.Hello]:
    return Call(("HELLO",), replies.hello_from_reply)


def info(section: Optional[str]) -> Call[dict[str, str]]:
    args: tuple[Arg, ...] = ("INFO",) if section is None else ("INFO", section)
    return Call(args, replies.info_from_reply)


def ping() -> Call[Any]:
    return Call(("PING",), lambda reply: reply)


def jscan(cursor: int, *, count: Optional[int], queue: Optional[str],
          states: Sequence[str]) -> Call[replies.ScanPage]:
    args: list[Arg] = ["JSCAN", cursor]
    if count is not None:
        args += ["COUNT", count]
    if queue is not None:
        args += ["QUEUE", queue]
    for state in states:
        args += ["STATE", state]
    return Call(tuple(args), replies.scan_page)


def qscan(cursor: int, *, count: Optional[int], minlen: Optional[int],
          maxlen: Optional[int]) -> Call[replies.ScanPage]:
    args: list[Arg] = ["QSCAN", cursor]
    for name, value in (("COUNT", count), ("MINLEN", minlen), ("MAXLEN", maxlen)):
        if value is not None:
            args += [name, value]
    return Call(tuple(args), replies.scan_page)


def group_by_creator(job_ids: Sequence[str]) -> dict[str, list[str]]:
    """Job IDs by the ID prefix of the node that created them, in order."""
    groups: dict[str, list[str]] = {}
    for job_id in job_ids:
        groups.setdefault(replies.creator_prefix(job_id), []).append(job_id)
    return groups
