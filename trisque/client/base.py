"""What ``Client`` and ``AsyncClient`` share beyond I/O: the node list and
its routing rules (nodes.py), the settings, and the choices made after a
reply (which node to prefer next)."""

import ssl
import time
from typing import Optional, Sequence, Union

from trisque.client.calls import Call
from trisque.client.nodes import ConsumerAffinity, NodeAddress, Topology, parse_address
from trisque.client.options import ClientOptions
from trisque.client.replies import Hello, Job

# After a job ID with an unknown creator, HELLO is asked again at most this
# often (a burst of such jobs must not become a burst of HELLOs).
UNKNOWN_CREATOR_REFRESH_S = 1.0

NodesSpec = Union[str, Sequence[str]]


def node_list(nodes: NodesSpec) -> list[NodeAddress]:
    """``"h1:7711,h2:7711"``, ``"trisque://h1,h2"`` or a list of addresses."""
    if isinstance(nodes, str):
        scheme = ""
        if "://" in nodes:
            scheme, rest = nodes.split("://", 1)
            scheme += "://"
            specs = [scheme + part for part in rest.split(",") if part]
        else:
            specs = [part for part in nodes.split(",") if part]
    else:
        specs = list(nodes)
    return [parse_address(spec.strip()) for spec in specs]


class ClientBase:
    options: ClientOptions
    topology: Topology
    affinity: ConsumerAffinity
    _ssl_context: Optional[ssl.SSLContext]
    _unknown_refresh_at: float

    def __init__(self, nodes: NodesSpec, *, password: Optional[str], username: Optional[str],
                 protocol: int, tls: bool, ssl_context: Optional[ssl.SSLContext],
                 tls_ca_file: Optional[str], tls_cert_file: Optional[str],
                 tls_key_file: Optional[str], connect_timeout_s: float,
                 read_timeout_s: float, max_idle_per_node: int,
                 affinity_window: int, topology_refresh_s: float) -> None:
        self.options = ClientOptions(
            password=password, username=username, protocol=protocol, tls=tls,
            ssl_context=ssl_context, tls_ca_file=tls_ca_file, tls_cert_file=tls_cert_file,
            tls_key_file=tls_key_file, connect_timeout_s=connect_timeout_s,
            read_timeout_s=read_timeout_s, max_idle_per_node=max_idle_per_node)
        self.topology = Topology(node_list(nodes), topology_refresh_s)
        self.affinity = ConsumerAffinity(affinity_window)
        self._ssl_context = None
        self._unknown_refresh_at = -1e18

    def ssl_context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = self.options.make_ssl_context()
        return self._ssl_context

    def first_node(self, call: Call[object]) -> Optional[NodeAddress]:
        """Where a call about jobs goes first: their creator, when every
        job of the call has the same one and it is known and not failing."""
        if not call.job_ids:
            return None
        creators = {job_id[2:10] for job_id in call.job_ids}
        if len(creators) != 1:
            return None
        return self.topology.owner(creators.pop())

    def wants_refresh(self, call: Call[object]) -> bool:
        """Whether to ask HELLO before this call: the periodic refresh, or
        a job whose creator no HELLO has named yet."""
        if call.args[0] == "HELLO":
            return False
        if self.topology.needs_refresh():
            return True
        if call.job_ids and any(not self.topology.knows(j[2:10]) for j in call.job_ids):
            now_s = time.monotonic()
            if now_s - self._unknown_refresh_at >= UNKNOWN_CREATOR_REFRESH_S:
                self._unknown_refresh_at = now_s
                return True
        return False

    def learned(self, address: NodeAddress, hello: Hello) -> None:
        self.topology.learn(address, hello, self.options.tls)

    def consumed(self, address: NodeAddress, jobs: list[Job]) -> None:
        """GETJOB on ``address`` gave ``jobs``: the consumer affinity rule."""
        target = self.affinity.record([job.creator for job in jobs],
                                      self.topology.prefix_of(address))
        if target is not None:
            moved_to = self.topology.reachable(target)
            if moved_to is not None:
                self.topology.preferred = moved_to

    def answered(self, address: NodeAddress, first: Optional[NodeAddress]) -> None:
        if address != first and address != self.topology.preferred:
            self.topology.answered(address)
