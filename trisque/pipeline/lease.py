"""Leases on jobs, from the driver: GETJOB NOHANG COUNT takes queued jobs
(they stay active on the broker until acked, or come back after their
RETRY), ACKJOB ends the lease for good, WORKING extends it."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Optional, Sequence

import hiredis

from .connection import Address, Connection, NodeUnavailable, Reply, encode
from .nodes import address_key, connect_first, parse_address_key
from .offsets import JobsByNode

ACK_IDS_PER_COMMAND = 500  # one ACKJOB holds this many IDs
GETJOB_COUNT_MAX = 10_000  # jobs one GETJOB asks for; more take more calls


@dataclass(frozen=True)
class LeasedJob:
    node: str  # "host:port" of the node that handed it out
    queue: bytes
    id: str
    body: bytes
    nacks: int
    deliveries: int


def _counters(reply: list) -> tuple[int, int]:
    fields = dict(zip(reply[3::2], reply[4::2]))
    return int(fields.get(b"nacks", 0)), int(fields.get(b"additional-deliveries", 0))


def lease(nodes: Sequence[Address], queues: Sequence[str], limit: int,
          timeout_s: float, first: int = 0) -> list[LeasedJob]:
    """Up to ``limit`` queued jobs, asking each node in turn from ``first``.
    A node that does not answer is skipped; none answering raises."""
    leased: list[LeasedJob] = []
    reached = 0
    errors = []
    for k in range(len(nodes)):
        address = nodes[(first + k) % len(nodes)]
        key = address_key(address)
        try:
            with Connection(address, timeout_s) as conn:
                reached += 1
                while len(leased) < limit:
                    want = min(limit - len(leased), GETJOB_COUNT_MAX)
                    reply = conn.call("GETJOB", "NOHANG", "WITHCOUNTERS", "COUNT", want,
                                      "FROM", *queues)
                    got = reply or []
                    assert isinstance(got, list)
                    for item in got:
                        nacks, deliveries = _counters(item)
                        leased.append(LeasedJob(key, item[0], item[1].decode(), item[2],
                                                nacks, deliveries))
                    if len(got) < want:
                        break
        except NodeUnavailable as e:
            errors.append(str(e))
        if len(leased) >= limit:
            break
    if not reached:
        raise NodeUnavailable("option 'nodes': no node reachable (" + "; ".join(errors) + ")")
    return leased


def queued(nodes: Sequence[Address], queues: Sequence[str], timeout_s: float) -> int:
    """How many jobs wait in these queues over the reachable nodes."""
    total = 0
    for address in nodes:
        try:
            with Connection(address, timeout_s) as conn:
                replies = conn.pipeline([encode("QLEN", q) for q in queues])
                total += sum(r for r in replies if isinstance(r, int))
        except NodeUnavailable:
            pass
    return total


def group(jobs: Sequence[LeasedJob]) -> JobsByNode:
    out: JobsByNode = {}
    for job in jobs:
        out.setdefault(job.node, []).append(job.id)
    return out


def _each_node(jobs: JobsByNode, nodes: Sequence[Address], command: str,
               per_command: int, timeout_s: float) -> JobsByNode:
    """Send ``command id...`` for every ID, to the node that leased it, or
    to any other node of the list when it is down (the cluster passes acks
    on).  Returns the IDs no node took."""
    left: JobsByNode = {}
    for key, ids in jobs.items():
        if not ids:
            continue
        home = parse_address_key(key)
        candidates = [home] + [n for n in nodes if n != home]
        for address in candidates:
            try:
                with Connection(address, timeout_s) as conn:
                    requests = [encode(command, *ids[i:i + per_command])
                                for i in range(0, len(ids), per_command)]
                    _raise_errors(conn.pipeline(requests), command)
                break
            except NodeUnavailable:
                continue
        else:
            left[key] = ids
    return left


def _raise_errors(replies: list[Reply], command: str) -> None:
    for reply in replies:
        if isinstance(reply, hiredis.ReplyError) and not str(reply).startswith("NOJOB"):
            raise RuntimeError(f"{command} failed: {reply}")


def ack(jobs: JobsByNode, nodes: Sequence[Address], timeout_s: float) -> JobsByNode:
    """ACKJOB every ID; returns those not acked (no node reachable)."""
    return _each_node(jobs, nodes, "ACKJOB", ACK_IDS_PER_COMMAND, timeout_s)


def renew(jobs: JobsByNode, nodes: Sequence[Address], timeout_s: float) -> None:
    """WORKING for every ID, best effort: postpones their requeue by RETRY."""
    for key, ids in jobs.items():
        try:
            with Connection(parse_address_key(key), timeout_s) as conn:
                conn.pipeline([encode("WORKING", i) for i in ids])  # errors: too late, acked
        except NodeUnavailable as e:
            print(f"trisque: lease renewal skipped: {e}", file=sys.stderr)


def fastack(ids: Sequence[str], nodes: Sequence[Address], start: int,
            timeout_s: float) -> Optional[str]:
    """FASTACK ``ids`` on one reachable node, best effort (it tells the
    others); returns why it could not, or None."""
    if not ids:
        return None
    try:
        _, conn = connect_first(nodes, start, timeout_s)
        with conn:
            conn.pipeline([encode("FASTACK", *ids[i:i + ACK_IDS_PER_COMMAND])
                           for i in range(0, len(ids), ACK_IDS_PER_COMMAND)])
    except NodeUnavailable as e:
        return str(e)
    return None
