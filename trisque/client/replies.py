"""Disque's replies as dataclasses: a job taken (``Job``), a job described
(``JobState``, SHOW), a queue described (``QueueStats``, QSTAT), the
cluster as a node sees it (``Hello``).

Each ``*_from_reply`` function takes the parsed reply (RESP2 or RESP3: flat
field/value arrays, or maps after ``CLIENT DISQUE-RESP3 ON``) and checks its
shape: a reply of another shape raises ``ProtocolError``, never a
half-filled object.
"""

from dataclasses import dataclass
from typing import Any, Optional

from trisque.client.errors import ProtocolError


def text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value
    raise ProtocolError(f"expected a string, got {value!r}")


def integer(value: object) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, (bytes, str)):
        try:
            return int(value)
        except ValueError:
            pass
    raise ProtocolError(f"expected an integer, got {value!r}")


def optional_integer(value: object) -> Optional[int]:
    return None if value is None else integer(value)


def array(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise ProtocolError(f"expected an array, got {value!r}")
    return value


def fields(reply: object) -> dict[str, Any]:
    """A flat ``[name, value, ...]`` array (or a map) as a dict by name."""
    if isinstance(reply, dict):
        return {text(k): v for k, v in reply.items()}
    items = array(reply)
    if len(items) % 2:
        raise ProtocolError(f"expected field/value pairs, got {reply!r}")
    return {text(k): v for k, v in zip(items[::2], items[1::2])}


def creator_prefix(job_id: str) -> str:
    """The first 8 hex digits of the ID of the node that created the job
    (``D-<8 hex>-...``): where its ACK is cheapest."""
    return job_id[2:10]


@dataclass(frozen=True)
class Job:
    """A job as GETJOB or QPEEK return it.  ``nacks`` and
    ``additional_deliveries`` are None unless asked for (WITHCOUNTERS)."""

    id: str
    queue: str
    body: bytes
    nacks: Optional[int] = None
    additional_deliveries: Optional[int] = None

    @property
    def creator(self) -> str:
        """The ID prefix of the node that created the job."""
        return creator_prefix(self.id)


def job_from_reply(item: object) -> Job:
    parts = array(item)
    if len(parts) not in (3, 7):
        raise ProtocolError(f"not a job: {item!r}")
    body = parts[2]
    if not isinstance(body, bytes):
        raise ProtocolError(f"not a job body: {body!r}")
    nacks = deliveries = None
    if len(parts) == 7:
        counters = fields(parts[3:])
        nacks = integer(counters["nacks"])
        deliveries = integer(counters["additional-deliveries"])
    return Job(id=text(parts[1]), queue=text(parts[0]), body=body,
               nacks=nacks, additional_deliveries=deliveries)


def jobs_from_reply(reply: object) -> list[Job]:
    """GETJOB/QPEEK: an array of jobs; a null (nothing came) is none."""
    if reply is None:
        return []
    return [job_from_reply(item) for item in array(reply)]


@dataclass(frozen=True)
class JobState:
    """SHOW: everything a node knows about a job."""

    id: str
    queue: str
    state: str  # wait-repl, active, queued, acked
    repl: int
    ttl_s: int  # left to live
    ctime: int  # creation, ns since the epoch (Disque's unit)
    delay_s: int
    retry_s: int
    nacks: int
    additional_deliveries: int
    nodes_delivered: list[str]
    nodes_confirmed: list[str]
    next_requeue_within_ms: Optional[int]
    next_awake_within_ms: Optional[int]
    body: bytes


def job_state_from_reply(reply: object) -> Optional[JobState]:
    if reply is None:
        return None
    f = fields(reply)
    try:
        body = f["body"]
        if not isinstance(body, bytes):
            raise ProtocolError(f"not a job body: {body!r}")
        return JobState(
            id=text(f["id"]), queue=text(f["queue"]), state=text(f["state"]),
            repl=integer(f["repl"]), ttl_s=integer(f["ttl"]), ctime=integer(f["ctime"]),
            delay_s=integer(f["delay"]), retry_s=integer(f["retry"]),
            nacks=integer(f["nacks"]),
            additional_deliveries=integer(f["additional-deliveries"]),
            nodes_delivered=[text(n) for n in array(f["nodes-delivered"])],
            nodes_confirmed=[text(n) for n in array(f["nodes-confirmed"])],
            next_requeue_within_ms=optional_integer(f["next-requeue-within"]),
            next_awake_within_ms=optional_integer(f["next-awake-within"]),
            body=body)
    except KeyError as e:
        raise ProtocolError(f"SHOW reply without {e}: {reply!r}") from None


@dataclass(frozen=True)
class QueueStats:
    """QSTAT: a queue on the node asked."""

    name: str
    len: int
    age_s: int
    idle_s: int
    blocked: int  # consumers waiting
    import_from: list[str]  # node IDs this queue imports jobs from
    import_rate: int
    jobs_in: int
    jobs_out: int
    pause: str  # none, in, out, all


def queue_stats_from_reply(reply: object) -> Optional[QueueStats]:
    if reply is None:
        return None
    f = fields(reply)
    try:
        return QueueStats(
            name=text(f["name"]), len=integer(f["len"]), age_s=integer(f["age"]),
            idle_s=integer(f["idle"]), blocked=integer(f["blocked"]),
            import_from=[text(n) for n in array(f["import-from"])],
            import_rate=integer(f["import-rate"]), jobs_in=integer(f["jobs-in"]),
            jobs_out=integer(f["jobs-out"]), pause=text(f["pause"]))
    except KeyError as e:
        raise ProtocolError(f"QSTAT reply without {e}: {reply!r}") from None


@dataclass(frozen=True)
class HelloNode:
    """One node of HELLO's list.  ``priority``: 1 reachable, 5 no link yet,
    10 possibly failing, 100 failing or leaving."""

    id: str
    host: str
    port: int
    priority: int

    @property
    def prefix(self) -> str:
        return self.id[:8]


@dataclass(frozen=True)
class Hello:
    """HELLO: the ID of the node asked, and the nodes it knows (itself too)."""

    node_id: str
    nodes: list[HelloNode]


def hello_from_reply(reply: object) -> Hello:
    parts = array(reply)
    if len(parts) < 2:
        raise ProtocolError(f"not a HELLO reply: {reply!r}")
    nodes = []
    for item in parts[2:]:
        node = array(item)
        if len(node) != 4:
            raise ProtocolError(f"not a HELLO node: {item!r}")
        nodes.append(HelloNode(id=text(node[0]), host=text(node[1]),
                               port=integer(node[2]), priority=integer(node[3])))
    return Hello(node_id=text(parts[1]), nodes=nodes)


@dataclass(frozen=True)
class ScanPage:
    """One QSCAN/JSCAN reply: the next cursor (0: done) and the items."""

    cursor: int
    items: list[Any]


def scan_page(reply: object) -> ScanPage:
    parts = array(reply)
    if len(parts) != 2:
        raise ProtocolError(f"not a scan reply: {reply!r}")
    return ScanPage(cursor=integer(parts[0]), items=array(parts[1]))


def info_from_reply(reply: object) -> dict[str, str]:
    """INFO's ``field:value`` lines as a dict (section headers skipped)."""
    body = text(reply)
    out = {}
    for line in body.splitlines():
        if line and not line.startswith("#") and ":" in line:
            name, value = line.split(":", 1)
            out[name] = value
    return out
