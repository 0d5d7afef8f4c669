"""Options of the ``trisque`` data source, parsed and checked on the driver
before any task runs, so a mistake fails the query with a message that
names the option."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

# Options Spark itself may add to a source's or sink's options.
SPARK_OWN = frozenset({"path", "checkpointlocation"})

SINK_OPTIONS = ("nodes", "queue", "replicate", "retry", "ttl", "delay", "maxlen",
                "async", "timeout_ms", "chunk", "ack")
SOURCE_OPTIONS = ("nodes", "queues", "maxJobsPerTrigger", "maxJobs", "numPartitions",
                  "leaseRenewSeconds", "timeout_ms")

DEFAULT_NODES = "127.0.0.1:7711"
CHUNK_DEFAULT = 1000  # ADDJOB per round trip: enough to hide the latency
CHUNK_MAX = 100_000
MAX_JOBS_PER_TRIGGER_DEFAULT = 10_000  # every leased ID is written in the offset log
MAX_JOBS_PER_BATCH = 1_000_000  # even a ReadAllAvailable batch stops here
PARTITIONS_DEFAULT = 2


class OptionError(ValueError):
    """A bad option of the trisque data source."""


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def _check_known(options: Mapping[str, str], known: tuple[str, ...], what: str) -> None:
    names = {k.lower() for k in known}
    for key in options:
        if key not in names and key not in SPARK_OWN:
            raise OptionError(f"unknown {what} option '{key}' (known: {', '.join(known)})")


def _int(options: Mapping[str, str], name: str, default: Optional[int],
         low: int, high: Optional[int] = None) -> Optional[int]:
    text = options.get(name.lower())
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise OptionError(f"option '{name}' must be an integer, not {text!r}") from None
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f">= {low}"
        raise OptionError(f"option '{name}' must be {bound}, not {value}")
    return value


def _bool(options: Mapping[str, str], name: str) -> bool:
    text = options.get(name.lower(), "false").strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise OptionError(f"option '{name}' must be true or false, not {text!r}")


class _SocketTimeout:
    timeout_ms: int

    @property
    def socket_timeout_s(self) -> float:
        # ADDJOB may wait timeout_ms for replication; the socket waits longer.
        return self.timeout_ms / 1000 + 10 if self.timeout_ms else 120.0


@dataclass(frozen=True)
class SinkOptions(_SocketTimeout):
    nodes: str
    queue: Optional[str]
    replicate: Optional[int]
    retry_s: Optional[int]
    ttl_s: Optional[int]
    delay_s: Optional[int]
    maxlen: Optional[int]
    asynchronous: bool
    timeout_ms: int
    chunk: int
    ack: bool

    @classmethod
    def parse(cls, raw: Mapping[str, str]) -> SinkOptions:
        options = _lower(raw)
        _check_known(options, SINK_OPTIONS, "sink")
        queue = options.get("queue")
        if queue is not None and not queue:
            raise OptionError("option 'queue' is empty")
        parsed = cls(
            nodes=options.get("nodes", DEFAULT_NODES),
            queue=queue,
            replicate=_int(options, "replicate", None, 1, 65535),
            retry_s=_int(options, "retry", None, 0),
            ttl_s=_int(options, "ttl", None, 1),
            delay_s=_int(options, "delay", None, 0),
            maxlen=_int(options, "maxlen", None, 1),
            asynchronous=_bool(options, "async"),
            timeout_ms=_int(options, "timeout_ms", 5000, 0) or 0,
            chunk=_int(options, "chunk", CHUNK_DEFAULT, 1, CHUNK_MAX) or CHUNK_DEFAULT,
            ack=_bool(options, "ack"),
        )
        if parsed.ack and any(v is not None for v in (
                parsed.queue, parsed.replicate, parsed.retry_s, parsed.ttl_s,
                parsed.delay_s, parsed.maxlen)):
            raise OptionError("option 'ack' acknowledges jobs by id: it takes no "
                              "queue, replicate, retry, ttl, delay or maxlen")
        if parsed.retry_s == 0 and parsed.replicate not in (None, 1):
            raise OptionError("option 'retry' 0 (at most once) needs option 'replicate' 1")
        return parsed

    def addjob_tail(self) -> list[bytes]:
        """The ADDJOB arguments after the body: timeout and options."""
        tail = [str(self.timeout_ms).encode()]
        for name, value in (("REPLICATE", self.replicate), ("RETRY", self.retry_s),
                            ("TTL", self.ttl_s), ("DELAY", self.delay_s),
                            ("MAXLEN", self.maxlen)):
            if value is not None:
                tail += [name.encode(), str(value).encode()]
        if self.asynchronous:
            tail.append(b"ASYNC")
        return tail


@dataclass(frozen=True)
class SourceOptions(_SocketTimeout):
    nodes: str
    queues: list[str] = field(default_factory=list)
    max_jobs_per_trigger: int = MAX_JOBS_PER_TRIGGER_DEFAULT
    max_jobs: int = MAX_JOBS_PER_TRIGGER_DEFAULT
    partitions: int = PARTITIONS_DEFAULT
    lease_renew_s: int = 0
    timeout_ms: int = 5000

    @classmethod
    def parse(cls, raw: Mapping[str, str]) -> SourceOptions:
        options = _lower(raw)
        _check_known(options, SOURCE_OPTIONS, "source")
        queues = [q.strip() for q in options.get("queues", "").split(",") if q.strip()]
        if not queues:
            raise OptionError("option 'queues' is required: the queues to consume, "
                              "comma separated")
        return cls(
            nodes=options.get("nodes", DEFAULT_NODES),
            queues=queues,
            max_jobs_per_trigger=_int(options, "maxJobsPerTrigger",
                                      MAX_JOBS_PER_TRIGGER_DEFAULT, 1, MAX_JOBS_PER_BATCH)
            or MAX_JOBS_PER_TRIGGER_DEFAULT,
            max_jobs=_int(options, "maxJobs", MAX_JOBS_PER_TRIGGER_DEFAULT, 1,
                          MAX_JOBS_PER_BATCH) or MAX_JOBS_PER_TRIGGER_DEFAULT,
            partitions=_int(options, "numPartitions", PARTITIONS_DEFAULT, 1, 10_000)
            or PARTITIONS_DEFAULT,
            lease_renew_s=_int(options, "leaseRenewSeconds", 0, 0) or 0,
            timeout_ms=_int(options, "timeout_ms", 5000, 1) or 5000,
        )
