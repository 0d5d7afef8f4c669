"""Which node a call goes to: the node list, what HELLO taught about the
cluster, and the rules of a smart Disque client.

Addresses.  ``trisque://[:password@]host:port``, ``trisques://...`` (TLS,
as ``rediss://``) or plain ``host:port``; the port defaults to 7711.

Failover.  Calls go to the preferred node (the first seed at the start);
when a node cannot be reached, the client tries the next one in list order
(the seeds, then the nodes HELLO named), and the first that answers
becomes the preferred node.

ACK routing (Disque's README: "ACKJOB to the node that created the job").
A job ID carries the first 8 hex digits of its creator's node ID.  ACK,
FASTACK, NACK and WORKING go first to that node when HELLO named it and it
is reachable (priority below 100); else, or when it fails, to the
preferred node, as any node can acknowledge any job.

Consumer affinity (``ConsumerAffinity``).  The client counts who created
the jobs that GETJOB brought, per window of ``window`` jobs (100 by
default).  When a window is full and one other node created more than half
of its jobs, and HELLO says that node is reachable, the preferred node
becomes that node: its jobs then reach the consumer without a trip through
another node.  The counts start again with each window.
"""

import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Final, Optional
from urllib.parse import unquote, urlsplit

from trisque.client.replies import Hello

DEFAULT_PORT: Final = 7711
FAILING_PRIORITY: Final = 100  # HELLO's priority of a failing or leaving node


@dataclass(frozen=True)
class NodeAddress:
    host: str
    port: int
    tls: bool = False
    password: Optional[str] = None  # from the URL; else the client's

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def parse_address(spec: str) -> NodeAddress:
    """``trisque://[:pw@]host[:port]``, ``trisques://...`` or ``host[:port]``."""
    if "://" not in spec:
        spec = "trisque://" + spec
    url = urlsplit(spec)
    if url.scheme not in ("trisque", "trisques", "disque"):
        raise ValueError(f"not a trisque node address: {spec!r}")
    if not url.hostname:
        raise ValueError(f"no host in {spec!r}")
    try:
        port = url.port or DEFAULT_PORT
    except ValueError:
        raise ValueError(f"bad port in {spec!r}") from None
    password = unquote(url.password) if url.password else None
    return NodeAddress(url.hostname, port, url.scheme == "trisques", password)


class Topology:
    """The node list and what HELLO said: node ID prefixes to addresses.

    Shared by the threads of a sync client: every change holds the lock."""

    seeds: list[NodeAddress]
    nodes: list[NodeAddress]  # seeds first, then nodes learnt from HELLO
    preferred: NodeAddress
    refresh_interval_s: float
    _by_prefix: dict[str, NodeAddress]
    _prefix_of: dict[NodeAddress, str]
    _priority: dict[str, int]
    _refreshed_at: float
    _lock: threading.Lock

    def __init__(self, seeds: list[NodeAddress], refresh_interval_s: float = 60.0) -> None:
        if not seeds:
            raise ValueError("a client needs at least one node")
        self.seeds = list(seeds)
        self.nodes = list(seeds)
        self.preferred = seeds[0]
        self.refresh_interval_s = refresh_interval_s
        self._by_prefix = {}
        self._prefix_of = {}
        self._priority = {}
        self._refreshed_at = -1e18
        self._lock = threading.Lock()

    def order(self, first: Optional[NodeAddress] = None) -> list[NodeAddress]:
        """The nodes to try, in order: ``first``, the preferred node, then
        the others in list order after the preferred one."""
        with self._lock:
            nodes = self.nodes
            at = nodes.index(self.preferred) if self.preferred in nodes else 0
            ordered = nodes[at:] + nodes[:at]
        if first is not None:
            ordered = [first] + [a for a in ordered if a != first]
        return ordered

    def answered(self, address: NodeAddress) -> None:
        """A node served a call after the preferred one failed: prefer it."""
        self.preferred = address

    def needs_refresh(self, now_s: Optional[float] = None) -> bool:
        now_s = time.monotonic() if now_s is None else now_s
        return now_s - self._refreshed_at >= self.refresh_interval_s

    def learn(self, asked: NodeAddress, hello: Hello, tls: bool) -> None:
        """HELLO's reply from ``asked``.  The node asked keeps the address
        we reached it by; the others are added with HELLO's (not with TLS:
        HELLO gives each node's plain port, so TLS clients route to the
        nodes they were given only)."""
        with self._lock:
            self._refreshed_at = time.monotonic()
            me = hello.node_id[:8]
            self._by_prefix[me] = asked
            self._prefix_of[asked] = me
            for node in hello.nodes:
                self._priority[node.prefix] = node.priority
                if node.prefix == me or tls:
                    continue
                known = self._by_prefix.get(node.prefix)
                if known is not None and known in self.seeds:
                    continue  # a seed's own address wins over HELLO's
                if not node.host or node.host == "0.0.0.0":
                    continue
                address = NodeAddress(node.host, node.port, asked.tls, asked.password)
                self._by_prefix[node.prefix] = address
                self._prefix_of[address] = node.prefix
                if address not in self.nodes:
                    self.nodes.append(address)

    def knows(self, prefix: str) -> bool:
        return prefix in self._by_prefix

    def owner(self, prefix: str) -> Optional[NodeAddress]:
        """The address of the node with this ID prefix, if it is known and
        not failing."""
        with self._lock:
            address = self._by_prefix.get(prefix)
            if address is None or self._priority.get(prefix, 1) >= FAILING_PRIORITY:
                return None
            return address

    def reachable(self, prefix: str) -> Optional[NodeAddress]:
        """As ``owner``, but only a node HELLO saw fully reachable."""
        with self._lock:
            address = self._by_prefix.get(prefix)
            if address is None or self._priority.get(prefix, 100) > 1:
                return None
            return address

    def prefix_of(self, address: NodeAddress) -> Optional[str]:
        return self._prefix_of.get(address)


class ConsumerAffinity:
    """Counts the creators of the jobs a consumer receives and says when to
    move to the node that creates most of them (module docstring)."""

    window: int
    _counts: Counter[str]
    _seen: int
    _lock: threading.Lock

    def __init__(self, window: int = 100) -> None:
        self.window = window
        self._counts = Counter()
        self._seen = 0
        self._lock = threading.Lock()

    def record(self, creators: list[str], serving: Optional[str]) -> Optional[str]:
        """Count these jobs' creator prefixes; at the end of a window, the
        prefix to move to (``serving`` is the prefix of the node that gave
        them), or None to stay."""
        if self.window <= 0 or not creators:
            return None
        with self._lock:
            self._counts.update(creators)
            self._seen += len(creators)
            if self._seen < self.window:
                return None
            (top, count), = self._counts.most_common(1)
            seen = self._seen
            self._counts.clear()
            self._seen = 0
        if top != serving and count * 2 > seen:
            return top
        return None
