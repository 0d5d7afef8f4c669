"""Consumers that poll, the way many real workers consume (issue 13).

Each one loops: a random live node, ``GETJOB TIMEOUT 200 COUNT 20 FROM q``
(issue 13's; other seeds draw other timeouts and counts), then one ACKJOB
for the batch it got, except a share of batches never
acknowledged (a worker that died on them: the jobs come back after RETRY).
Some consumers know only some of the nodes (a worker configured with one
or two addresses); half are sticky: they keep the node they polled until a
call to it fails (a worker connected to one node), so a killed node loses
its consumers for good and comes back with none.  Jobs queued where nobody
polls must come to the consumers (federation).
As redis-py with a socket timeout, a reply that takes longer than
SOCKET_TIMEOUT_MS is given up: the connection is closed, and jobs that
reply would have carried never reach the consumer (the node counts them
delivered; they come back after RETRY).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from .world import SimClient

if TYPE_CHECKING:
    from .workload import Workload
    from .world import SimNode

POLL_TIMEOUT_MS = (200, 200, 50, 1000)  # drawn once a seed, as the two below
POLL_COUNT = (20, 20, 1, 5)
CONSUMERS = (4, 4, 2, 6)
UNACKED_BATCHES = 0.05
SOCKET_TIMEOUT_MS = 2000
THINK_MS = (0, 10)  # between a reply and the next request
PARTIAL_VIEW = 0.25  # share of consumers that know only some nodes
STICKY = 0.5  # share of consumers that keep their node until a call fails
NO_NODE_WAIT_MS = 100  # every node is down: try again this much later

Reply = Callable[["SimNode", object], None]


class PollingConsumer:
    def __init__(self, workload: Workload, queue: bytes) -> None:
        self.workload = workload
        self.world = workload.world
        self.rng = workload.rng
        self.queue = queue
        self.clients: dict[int, SimClient] = {}  # node index -> connection
        self.stopped = False
        self.request = 0  # the request awaited: replies to older ones were given up
        nodes = self.world.nodes
        self.known = {n.index for n in nodes}  # the nodes it polls
        if len(nodes) > 1 and self.rng.random() < PARTIAL_VIEW:
            self.known = set(self.rng.sample(sorted(self.known),
                                             self.rng.randint(1, len(nodes) - 1)))
        self.sticky = self.rng.random() < STICKY
        self.node: SimNode | None = None  # a sticky consumer's node

    def _target(self, nodes: list[SimNode]) -> SimNode:
        node = self.node
        if node is not None:
            client = self.clients.get(node.index)
            if node.alive and (client is None or client.alive):
                return node
            self.node = None  # its connection broke: the call fails, it moves
        node = self.rng.choice(nodes)
        if self.sticky:
            self.node = node
        return node

    def _failed(self, wait_ms: int | None = None) -> None:
        """A call failed (error, dead node, timeout): a sticky consumer
        moves to another node."""
        self.node = None
        self._next(wait_ms)

    def poll(self) -> None:
        if self.stopped:
            return
        nodes = [n for n in self.workload.alive_nodes() if n.index in self.known]
        if not nodes:
            self._next(NO_NODE_WAIT_MS)
            return
        workload = self.workload
        argv = [b"GETJOB", b"TIMEOUT", workload.poll_timeout_ms,
                b"COUNT", workload.poll_count, b"FROM", self.queue]
        self._send(self._target(nodes), argv, self._on_jobs, self._failed)

    def _next(self, wait_ms: int | None = None) -> None:
        if wait_ms is None:
            wait_ms = self.rng.randint(*THINK_MS)
        self.world.at(self.world.now_ms + wait_ms, self.poll)

    def _send(self, sim_node: SimNode, argv: list, on_reply: Reply,
              on_timeout: Callable[[], None]) -> None:
        client = self.workload.connection(self.clients, sim_node)
        self.request += 1
        request = self.request

        def reply(value: object) -> None:
            if request == self.request:
                self.request += 1  # answered: its timeout is void
                on_reply(sim_node, value)
        world = self.world
        if not client.call(argv, reply):
            self.request += 1
            on_timeout()  # the node died meanwhile: as a refused connection
            return
        world.at(world.now_ms + SOCKET_TIMEOUT_MS, self._timeout, request, client, on_timeout)

    def _timeout(self, request: int, client: SimClient, on_timeout: Callable[[], None]) -> None:
        if request != self.request:
            return
        self.request += 1  # a late reply is dropped with the connection
        client.close()
        on_timeout()

    def _on_jobs(self, sim_node: SimNode, reply: object) -> None:
        if not isinstance(reply, list):  # timed out empty, or an error
            if isinstance(reply, Exception):
                self._failed()
            else:
                self.world.checker.polled_empty()
                self._next()
            return
        checker = self.world.checker
        ids = [item[1] for item in reply]
        for job_id in ids:
            checker.delivered(job_id, sim_node.index)
        if self.rng.random() < UNACKED_BATCHES:
            for job_id in ids:
                checker.redelivery_expected(job_id)
            self._next()
            return

        def acked(_sim_node: SimNode, value: object) -> None:
            if isinstance(value, int):
                for job_id in ids:
                    checker.acked(job_id)
            else:
                not_acked()
                return
            self._next()

        def not_acked() -> None:
            for job_id in ids:
                checker.redelivery_expected(job_id)
            self._failed()
        self._send(sim_node, [b"ACKJOB", *ids], acked, not_acked)
