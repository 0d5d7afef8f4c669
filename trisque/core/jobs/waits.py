"""WAITJOB: clients waiting here for a job to be acknowledged, and the
other nodes that asked this one to tell them (docs/lifecycle.md, "WAITJOB").

One ``JobWait`` per job ID someone waits on, in ``node.waited``:

- ``clients``: this node's WAITJOB clients.  They are answered ``+acked``
  when the job is acknowledged here (ACKJOB, SETACK, FASTACK, DELJOB from
  the bus), or when another node says it was (JOBSTATE, cluster/waitjob.py);
  at their timeout, the job's state here or the last one a holder reported;
  a null when no node knows the job (every other node said so and this one
  holds no copy: on a node alone, at once).
- ``nodes``: other nodes whose clients wait and who asked us (we hold a
  copy): they hear JOBSTATE when our copy is acked or leaves.

Waits are node-local and never persisted: a restart closes the clients
that waited, and the nodes that asked ask again (cluster/waitjob.py).
Each entry counts in used_memory (maxmemory) while it exists, with its
clients, its watching nodes and the other nodes' answers it keeps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ...protocol import resp
from .job import ACKED, ACTIVE, QUEUED, STATE_NAMES, WAIT_REPL

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

# A node's answer about a job it holds no copy of (the states are 0-3: job.py)
UNKNOWN: Final = 4
# used_memory of an entry, of each waiter in it (dict slots, the set) and of
# each peer's answer it keeps (a dict slot: the node ID string is membership's)
ENTRY_BYTES: Final = 240
WAITER_BYTES: Final = 100
ANSWER_BYTES: Final = 100

_STATE_REPLIES: Final = tuple(b"+%s\r\n" % name.encode() for name in STATE_NAMES)
ACKED_REPLY: Final = _STATE_REPLIES[ACKED]
_STATES_BY_RANK: Final = (QUEUED, ACTIVE, WAIT_REPL)  # what a timeout reports first


class JobWait:
    """The waits on one job ID, here and from other nodes."""

    __slots__ = ("clients", "nodes", "answers", "asked_ms")
    clients: dict[Client, None]
    nodes: set[str]
    answers: dict[str, int]
    asked_ms: int

    def __init__(self) -> None:
        self.clients = {}  # WAITJOB clients here, oldest first
        self.nodes = set()  # other nodes to tell when our copy settles
        self.answers = {}  # node id -> the state of its copy it last said, or UNKNOWN
        self.asked_ms = 0  # when the other nodes were last asked (0: never)


class BlockedWait:
    """``client.blocked`` while WAITJOB waits (node.py's blocking machinery
    calls ``cancel`` on CLIENT KILL or a disconnect, ``timeout`` at the
    deadline)."""

    __slots__ = ("job_id",)
    job_id: bytes

    def __init__(self, job_id: bytes) -> None:
        self.job_id = job_id

    def cancel(self, node: Node, client: Client) -> None:
        node.waits.drop(client, self.job_id)

    def timeout(self, node: Node, client: Client) -> None:
        node.waits.time_out(client, self.job_id)


class Waits:
    """Every JobWait of the node, and what changes them."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.entries: dict[bytes, JobWait] = node.waited  # (the lifecycle checks it)
        self.acked_replies = 0  # WAITJOBs answered +acked (INFO, /metrics)
        self.timeouts = 0  # WAITJOBs answered at their timeout

    # ------------------------------------------------------------ WAITJOB

    def wait(self, client: Client, job_id: bytes, timeout_ms: int) -> bytes | None:
        """The reply now, or None: the client waits (timeout_ms 0: forever)."""
        node = self.node
        job = node.jobs.get(job_id)
        if job is not None and job.state == ACKED:
            self.acked_replies += 1
            return ACKED_REPLY
        if job is None and node.wait_hooks.acked_here(job_id):
            self.acked_replies += 1  # acked and freed here a moment ago
            return ACKED_REPLY
        if node.blocking.atomic_depth:  # inside MULTI or a script: nothing waits
            return self.state_reply(client, job_id, None)
        if job is None and node.cluster_size <= 1:
            return resp.null(client.disque_proto())  # no one else could know it
        entry = self._entry(job_id)
        entry.clients[client] = None
        node.memory_changed(WAITER_BYTES)
        node.block(client, BlockedWait(job_id), timeout_ms)
        if node.cluster_size > 1 and len(entry.clients) == 1:
            entry.asked_ms = node.now_ms()
            node.wait_hooks.ask(job_id)
        return None

    def state_reply(self, client: Client, job_id: bytes, entry: JobWait | None) -> bytes:
        """The job's state as this node knows it, from its copy and what
        the holders last said: queued if a copy is queued, else active
        (held: delivered, or a replica), else wait-repl; a null if no
        copy is known."""
        states = set() if entry is None else set(entry.answers.values())
        job = self.node.jobs.get(job_id)
        if job is not None:
            states.add(job.state)
        for state in _STATES_BY_RANK:
            if state in states:
                return _STATE_REPLIES[state]
        return resp.null(client.disque_proto())

    def drop(self, client: Client, job_id: bytes) -> None:
        """The client no longer waits (answered, timed out, gone)."""
        entry = self.entries.get(job_id)
        if entry is None or client not in entry.clients:
            return
        del entry.clients[client]
        self.node.memory_changed(-WAITER_BYTES)
        if not entry.clients:
            self._forget_answers(entry)
            if entry.asked_ms:
                self.node.wait_hooks.stop(job_id)  # (the holders' watches would outlive us)
            self._forget_if_idle(job_id, entry)

    def time_out(self, client: Client, job_id: bytes) -> None:
        reply = self.state_reply(client, job_id, self.entries.get(job_id))
        self.timeouts += 1
        self.node.unblock(client)  # (calls drop)
        self.node.reply(client, reply)

    # ---------------------------------------------- what settles a job

    def settled(self, job_id: bytes, state: int) -> None:
        """Our copy was acked (``ACKED``) or left without an ack
        (``UNKNOWN``: expired, deleted): the nodes watching hear it, our
        clients get +acked; on a copy gone they wait on for the others."""
        entry = self.entries.get(job_id)
        if entry is None:
            return
        if entry.nodes:
            self.node.wait_hooks.tell(job_id, list(entry.nodes), state)
            self.node.memory_changed(-WAITER_BYTES * len(entry.nodes))
            entry.nodes.clear()
        if state == ACKED:
            self._answer_all(job_id, entry, ACKED_REPLY)
        elif entry.clients and (self.node.cluster_size <= 1
                                or self.node.wait_hooks.nobody_holds(entry.answers)):
            self._answer_all(job_id, entry, None)
        else:
            self._forget_if_idle(job_id, entry)

    def answered(self, job_id: bytes, node_id: str, state: int) -> None:
        """Another node's answer about the job (cluster/waitjob.py)."""
        entry = self.entries.get(job_id)
        if entry is None or not entry.clients:
            return
        if state == ACKED:
            self._answer_all(job_id, entry, ACKED_REPLY)
        elif 0 <= state <= UNKNOWN:
            if node_id not in entry.answers:
                self.node.memory_changed(ANSWER_BYTES)
            entry.answers[node_id] = state
            if (state == UNKNOWN and job_id not in self.node.jobs
                    and self.node.wait_hooks.nobody_holds(entry.answers)):
                self._answer_all(job_id, entry, None)

    # ------------------------------------------- other nodes' waits here

    def watch(self, job_id: bytes, node_id: str) -> None:
        """``node_id`` waits on a job we hold: tell it when it settles."""
        entry = self._entry(job_id)
        if node_id not in entry.nodes:
            entry.nodes.add(node_id)
            self.node.memory_changed(WAITER_BYTES)

    def unwatch(self, job_id: bytes, node_id: str) -> None:
        entry = self.entries.get(job_id)
        if entry is not None and node_id in entry.nodes:
            entry.nodes.discard(node_id)
            self.node.memory_changed(-WAITER_BYTES)
            self._forget_if_idle(job_id, entry)

    # ------------------------------------------------------------ counts

    def clients_waiting(self) -> int:
        return sum(len(e.clients) for e in self.entries.values())

    def watches(self) -> int:
        """Other nodes' waits this node will answer."""
        return sum(len(e.nodes) for e in self.entries.values())

    def waiters_of(self, job_id: bytes) -> int:
        entry = self.entries.get(job_id)
        return 0 if entry is None else len(entry.clients) + len(entry.nodes)

    # ------------------------------------------------------------ inside

    def _entry(self, job_id: bytes) -> JobWait:
        entry = self.entries.get(job_id)
        if entry is None:
            entry = self.entries[job_id] = JobWait()
            self.node.memory_changed(ENTRY_BYTES)
        return entry

    def _answer_all(self, job_id: bytes, entry: JobWait, reply: bytes | None) -> None:
        """Every client waiting here gets ``reply`` (None: a null); the
        other nodes need no STOP: the job settled there too, or nowhere."""
        node = self.node
        clients = list(entry.clients)
        entry.clients.clear()
        node.memory_changed(-WAITER_BYTES * len(clients))
        self._forget_answers(entry)
        self._forget_if_idle(job_id, entry)
        if reply is ACKED_REPLY:
            self.acked_replies += len(clients)
        for client in clients:
            node.unblock(client)  # (its drop finds it gone already)
            node.reply(client, reply if reply is not None
                       else resp.null(client.disque_proto()))

    def _forget_answers(self, entry: JobWait) -> None:
        """No client waits here any more: the answers were for them (the
        next WAITJOB asks again)."""
        if entry.answers:
            self.node.memory_changed(-ANSWER_BYTES * len(entry.answers))
            entry.answers.clear()

    def _forget_if_idle(self, job_id: bytes, entry: JobWait) -> None:
        if not entry.clients and not entry.nodes and self.entries.get(job_id) is entry:
            del self.entries[job_id]
            self.node.memory_changed(-ENTRY_BYTES)
