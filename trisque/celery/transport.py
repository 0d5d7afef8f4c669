"""A kombu transport on Disque's jobs: Celery's messages as replicated jobs.

Each message kombu publishes becomes one ADDJOB (the kombu payload as JSON
in the body) on the queue it is routed to, so it is held by ``replicate``
nodes before the publisher returns.  A consumer's GETJOB takes it; Celery's
ack is ACKJOB (with ``acks_late``: after the task ran), a reject with
requeue is NACK, and a worker that dies holding it loses nothing: the job
comes back after its RETRY, which is the transport's ``visibility_timeout``.
A task's ``eta``/``countdown`` is the job's DELAY: the job is not
delivered before it is due, instead of waiting in the worker's memory.

Exchanges and bindings are kombu's virtual ones.  The tables that other
processes must see (the fanout exchanges of Celery's remote control, the
reply exchange) live in a set per exchange in the keyspace of every node
the transport knows, and fanout publishes one job per bound queue.

Transport options (``broker_transport_options``): ``visibility_timeout``
(s, default 3600, as Celery's Redis transport), ``replicate`` (copies of
each message, default the node's), ``add_timeout_ms`` (how long ADDJOB may
wait for its copies, default 5000), ``ttl`` (s, a message's life, default
one day beyond its delay), ``password``, ``tls``.
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from datetime import datetime, timezone
from queue import Empty
from typing import Any, Optional

from kombu.transport import virtual
from kombu.utils.objects import cached_property

from trisque.client import Client, Job
from trisque.client.errors import TrisqueError
from trisque.client.every_node import EveryNode

DEFAULT_PORT = 7711
BINDINGS_KEY = "_trisque.kombu.binding.%s"  # a set per exchange, on every node
SEP = "\x06\x16"  # between a binding's routing key, pattern and queue (kombu's)
TABLE_CACHE_S = 1.0  # a binding table read this recently is used as is (misses re-read)
BLOCK_MS = 1000  # the longest GETJOB wait of one drain: shutdown stays prompt
DAY_S = 86400


def _eta_delay_s(message: dict[str, Any]) -> int:
    """The seconds until the message's ``eta`` header (Celery), or 0."""
    eta = (message.get("headers") or {}).get("eta")
    if not eta:
        return 0
    due = datetime.fromisoformat(eta)
    if due.tzinfo is None:
        due = due.replace(tzinfo=timezone.utc)
    return max(0, math.ceil((due - datetime.now(timezone.utc)).total_seconds()))


def job_priority(message: dict[str, Any]) -> Optional[int]:
    """Celery's priority (0-9, higher first as on RabbitMQ; kombu's default
    0) as the job's level: 0 is a plain job (level 5), 1-9 go above it
    (levels 6-9), so plain tasks cost nothing more and urgent ones pass."""
    try:
        priority = int((message.get("properties") or {}).get("priority") or 0)
    except (TypeError, ValueError):
        return None
    if priority <= 0:
        return None
    return 5 + math.ceil(min(priority, 9) * 4 / 9)


def _expiration_s(message: dict[str, Any]) -> Optional[int]:
    """kombu's per-message TTL (``expiration``, ms as a string), in s."""
    expiration = (message.get("properties") or {}).get("expiration")
    return None if expiration is None else max(1, math.ceil(int(expiration) / 1000))


class QoS(virtual.QoS):
    """Acks go to the cluster: ACKJOB, NACK; unacked messages at shutdown
    are NACKed (delivered again at once) rather than published again."""

    def ack(self, delivery_tag: str) -> None:
        self.channel.client.ack(delivery_tag)
        super().ack(delivery_tag)

    def reject(self, delivery_tag: str, requeue: bool = False) -> None:
        if requeue:
            self.channel.client.nack(delivery_tag)
        else:
            self.channel.client.ack(delivery_tag)  # dropped, as AMQP does
        super().reject(delivery_tag, requeue=False)

    def restore_unacked(self) -> list[tuple[BaseException, Any]]:
        self._flush()
        errors: list[tuple[BaseException, Any]] = []
        while self._delivered:
            tag, message = self._delivered.popitem()
            try:
                self.channel.client.nack(tag)
            except TrisqueError as e:  # it comes back after its RETRY anyway
                errors.append((e, message))
        return errors


class Channel(virtual.Channel):
    QoS = QoS
    supports_fanout = True
    do_restore = True

    def __init__(self, connection: Any, **kwargs: Any) -> None:
        super().__init__(connection, **kwargs)
        options = connection.client.transport_options
        self.visibility_timeout = int(options.get("visibility_timeout", 3600))
        self.replicate = options.get("replicate")
        self.add_timeout_ms = int(options.get("add_timeout_ms", 5000))
        self.ttl_s = options.get("ttl")
        self.no_ack_queues: set[str] = set()  # consumed with no_ack: acked on delivery
        self._tables: dict[str, tuple[float, list[tuple[str, str, str]]]] = {}
        self._tables_lock = threading.Lock()

    @cached_property
    def client(self) -> Client:
        return self.connection.trisque_client()

    @cached_property
    def every_node(self) -> EveryNode:
        return EveryNode(self.client)

    # ------------------------------------------------------------ messages

    def _put(self, queue: str, message: dict[str, Any], **kwargs: Any) -> None:
        delay = _eta_delay_s(message)
        expiration = _expiration_s(message)
        ttl = expiration if expiration is not None else (
            int(self.ttl_s) if self.ttl_s is not None else DAY_S)
        ttl += delay
        retry = min(self.visibility_timeout, max(1, ttl - 1))
        self.client.add_job(queue, json.dumps(message), timeout_ms=self.add_timeout_ms,
                            replicate=self.replicate, delay_s=delay or None,
                            retry_s=retry, ttl_s=ttl, priority=job_priority(message))

    @staticmethod
    def delivered(job: Job) -> dict[str, Any]:
        """The kombu payload a job carries, its delivery tag the job's ID."""
        payload: dict[str, Any] = json.loads(job.body)
        properties = payload.setdefault("properties", {})
        properties["delivery_tag"] = job.id  # what QoS acks: the job
        if job.additional_deliveries or job.nacks:
            payload["redelivered"] = True
        return payload

    def _get(self, queue: str, timeout: Optional[float] = None) -> dict[str, Any]:
        jobs = self.client.get_jobs(queue, nohang=True, withcounters=True)
        if not jobs:
            raise Empty()
        return self.delivered(jobs[0])

    def basic_consume(self, queue: str, no_ack: bool, *args: Any, **kwargs: Any) -> Any:
        if no_ack:
            self.no_ack_queues.add(queue)
        else:
            self.no_ack_queues.discard(queue)
        return super().basic_consume(queue, no_ack, *args, **kwargs)

    def basic_get(self, queue: str, no_ack: bool = False, **kwargs: Any) -> Any:
        message = super().basic_get(queue, no_ack, **kwargs)
        if message is not None and no_ack:  # nobody will ack it: done once taken
            self.client.ack(message.delivery_tag)
        return message

    def _size(self, queue: str) -> int:
        return self.client.qlen(queue)

    def _purge(self, queue: str) -> int:
        """Removes the jobs queued on the node the client prefers (FASTACK:
        gone from every node that holds them)."""
        purged = 0
        while True:
            jobs = self.client.get_jobs(queue, count=1000, nohang=True)
            if not jobs:
                return purged
            self.client.fast_ack(*(job.id for job in jobs))
            purged += len(jobs)

    # ------------------------------------------------------------ bindings

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        member = SEP.join([routing_key or "", pattern or "", queue or ""])
        self.every_node.write("SADD", BINDINGS_KEY % exchange, member)
        with self._tables_lock:
            self._tables.pop(exchange, None)

    def _delete(self, queue: str, exchange: str, routing_key: str, pattern: str,
                *args: Any, **kwargs: Any) -> None:
        member = SEP.join([routing_key or "", pattern or "", queue or ""])
        self.every_node.write("SREM", BINDINGS_KEY % exchange, member)
        with self._tables_lock:
            self._tables.pop(exchange, None)
        self._purge(queue)

    def get_table(self, exchange: str) -> list[tuple[str, str, str]]:
        with self._tables_lock:
            cached = self._tables.get(exchange)
        if cached is not None and time.monotonic() - cached[0] < TABLE_CACHE_S:
            return cached[1]
        return self._read_table(exchange)

    def _read_table(self, exchange: str) -> list[tuple[str, str, str]]:
        members: set[bytes] = set()
        for reply in self.every_node.replies("SMEMBERS", BINDINGS_KEY % exchange):
            members.update(reply if isinstance(reply, (list, set)) else [])
        table = [tuple(m.decode().split(SEP)) for m in sorted(members)]
        typed = [(t[0], t[1], t[2]) for t in table if len(t) == 3]
        with self._tables_lock:
            self._tables[exchange] = (time.monotonic(), typed)
        return typed

    def _lookup(self, exchange: str, routing_key: str,
                default: Optional[str] = None) -> list[str]:
        queues: list[str] = super()._lookup(exchange, routing_key, default)
        if exchange and not [q for q in queues if q and q != default]:
            self._read_table(exchange)  # a binding made since the table was read?
            queues = super()._lookup(exchange, routing_key, default)
        return queues

    def _put_fanout(self, exchange: str, message: dict[str, Any], routing_key: str,
                    **kwargs: Any) -> None:
        for queue in {q for _rk, _pattern, q in self._read_table(exchange)}:
            self._put(queue, message)


class Transport(virtual.Transport):
    """``broker_url = "trisque://h1:7711;trisque://h2:7711"``: every URL of
    kombu's list is a node of one client (kombu's own failover is not
    needed: the client fails over by itself)."""

    Channel = Channel
    default_port = DEFAULT_PORT  # type: ignore[assignment]  # (kombu types it None)
    polling_interval = 0.05  # while every channel's prefetch is full
    driver_type = "trisque"
    driver_name = "trisque"
    implements = virtual.Transport.implements.extend(
        asynchronous=False, exchange_type=frozenset(["direct", "topic", "fanout"]))

    def __init__(self, client: Any, **kwargs: Any) -> None:
        super().__init__(client, **kwargs)
        self._trisque: Optional[Client] = None
        self._trisque_lock = threading.Lock()

    def trisque_client(self) -> Client:
        with self._trisque_lock:
            if self._trisque is None:
                self._trisque = Client(self._node_urls(), **self._client_options())
            return self._trisque

    def _node_urls(self) -> list[str]:
        conninfo: Any = self.client  # kombu's Connection
        urls = []
        for alt in conninfo.alt or [conninfo.as_uri(include_password=True)]:
            if "://" not in alt:
                alt = f"trisque://{alt}"
            scheme, rest = alt.split("://", 1)
            rest = rest.split("/", 1)[0]
            if ":" not in rest.rsplit("@", 1)[-1]:
                rest += f":{DEFAULT_PORT}"
            urls.append(f"{'trisques' if scheme == 'trisques' else 'trisque'}://{rest}")
        return urls

    def _client_options(self) -> dict[str, Any]:
        conninfo: Any = self.client
        options = conninfo.transport_options
        kept = {}
        for name in ("password", "tls", "protocol", "connect_timeout_s", "read_timeout_s"):
            if name in options:
                kept[name] = options[name]
        if "password" not in kept and conninfo.password:
            kept["password"] = conninfo.password
        return kept

    # (kombu's virtual Transport overrides its base's signature so too)
    def drain_events(self, connection: Any, timeout: Any = None) -> Any:  # type: ignore[override]
        """One GETJOB over the queues of every channel that may take more
        (a channel each would wait in turn: Celery's remote-control channel
        held the task channel's jobs back a second a turn), delivering what
        comes to the consumers of its queue; socket.timeout after
        ``timeout`` without a message."""
        deadline = None if timeout is None else time.monotonic() + timeout
        channels: list[Channel] = list(self.channels or ())
        while True:
            queues: list[str] = []
            counts = []
            full = False  # a channel's prefetch is full: an ack may free it any time
            for channel in channels:
                if not channel._consumers:
                    continue
                if channel.qos.can_consume():
                    queues += [q for q in channel._active_queues if q not in queues]
                    counts.append(channel.qos.can_consume_max_estimate())
                else:
                    full = True
            left_ms = BLOCK_MS if deadline is None else int((deadline - time.monotonic()) * 1000)
            if queues:
                # the smallest prefetch room: no channel takes more than it may
                count = min((c for c in counts if c), default=1)
                longest = int(self.polling_interval * 1000) if full else BLOCK_MS
                wait_ms = min(longest, left_ms)
                client = self.trisque_client()
                if wait_ms > 0:
                    jobs = client.get_jobs(queues, count=count, timeout_ms=wait_ms,
                                           withcounters=True)
                else:
                    jobs = client.get_jobs(queues, count=count, nohang=True, withcounters=True)
                if jobs:
                    no_ack = {q for channel in channels for q in channel.no_ack_queues}
                    taken = [job.id for job in jobs if job.queue in no_ack]
                    if taken:  # a no_ack consumer (a reply queue): done once taken
                        client.ack(*taken)
                    for job in jobs:
                        self._deliver(Channel.delivered(job), job.queue)
                    return
            elif left_ms > 0:
                time.sleep(min(self.polling_interval, left_ms / 1000))
            if deadline is not None and time.monotonic() >= deadline:
                raise socket.timeout()

    def establish_connection(self) -> Any:
        self.trisque_client().ping()  # a dead cluster fails here, clearly
        return super().establish_connection()

    def close_connection(self, connection: Any) -> None:
        super().close_connection(connection)
        with self._trisque_lock:
            if self._trisque is not None:
                self._trisque.close()
                self._trisque = None

    def driver_version(self) -> str:
        from trisque import __version__
        return str(__version__)
