"""The sink: each Spark task writes its partition's rows as jobs, through
pipelined ADDJOB in chunks, to one node of the ``nodes`` list (spread by
partition number), failing over to the next node when its node goes away.
The driver's commit reports counts; abort FASTACKs what the failed
attempt added, best effort.

A task may still be running when the write fails (Spark does not wait for
it), and its commit message never reaches abort.  So a task also records
the IDs it added on the node it writes to, in a list
``trisque:write-jobs:<write id>[:<batch>]`` (each chunk's IDs go with the
next chunk's requests), and abort sets a marker,
``trisque:write-aborted:<write id>``, on every node of the list, then
takes back (FASTACK) what the records there name.  A task checks the
marker about once a second between chunks and once after its last chunk,
its last IDs recorded in the same pipeline: if the marker is set, it takes
back what it added and fails; if not, abort (which sets the marker on that
node before it reads the records there) will find its record.  A committed
write's records are deleted."""

from __future__ import annotations

import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

import hiredis
import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (DataSourceArrowWriter, DataSourceStreamArrowWriter,
                                    WriterCommitMessage)

from .bodies import RequestEncoder
from .connection import Address, Connection, NodeUnavailable, Reply, encode
from .lease import fastack
from .connection import format_address
from .nodes import connect_first, parse_nodes
from .options import SinkOptions

# Transient refusals worth sending again to another node: not enough nodes
# reachable for REPLICATE yet, a node leaving, one loading its AOF.
RETRIABLE = ("NOREPL", "LEAVING", "LOADING")
FAILOVERS_PER_NODE = 3  # how often a task may go round the node list
REFUSED_PAUSE_S = 0.5  # before sending refused jobs again: let the cluster settle
ABORT_MARKER_PREFIX = "trisque:write-aborted:"
ABORT_MARKER_TTL_MS = 3_600_000  # an hour: longer than any straggling task
RECORD_PREFIX = "trisque:write-jobs:"
MARKER_CHECK_S = 1.0  # a task looks for the marker between chunks at most this often


def abort_marker(write_id: str) -> str:
    return ABORT_MARKER_PREFIX + write_id


def new_write_id() -> str:
    return uuid.uuid4().hex


def record_key(write_id: str, batch: Optional[str]) -> str:
    """The list of the IDs a write's tasks added, on each node they wrote
    to (one per micro-batch of a stream: a failed batch must not take back
    the jobs of batches committed before it)."""
    return RECORD_PREFIX + write_id + (f":{batch}" if batch is not None else "")


@dataclass
class SinkCommit(WriterCommitMessage):
    partition: int
    count: int
    failovers: int
    ids: list[str] = field(default_factory=list)  # for abort's FASTACK


class JobRefused(RuntimeError):
    """A node answered ADDJOB with an error that another try will not fix."""


class WriteAborted(RuntimeError):
    """The driver aborted the write while this task was still writing."""


def task_partition() -> int:
    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


def task_batch() -> Optional[str]:
    """The micro-batch a streaming task writes (a local property Spark
    sets for the batch's tasks; a batch write inside foreachBatch sees it
    too, so only the stream sink asks)."""
    context = TaskContext.get()
    return context.getLocalProperty("streaming.sql.batchId") if context is not None else None


class PartitionWriter:
    """One task's connection, with failover, and what it added."""

    def __init__(self, options: SinkOptions, partition: int, write_id: str = "",
                 batch: Optional[str] = None) -> None:
        self.options = options
        self.nodes: list[Address] = parse_nodes(options.nodes)
        self.partition = partition
        self.write_id = write_id
        self.record_key = record_key(write_id, batch)
        self.failovers = 0
        self.ids: list[str] = []
        self.unrecorded: list[str] = []  # added, not yet in a record on a node
        self.index, self.conn = connect_first(self.nodes, partition % len(self.nodes),
                                              options.socket_timeout_s)

    def failover(self, why: str) -> None:
        self.failovers += 1
        if self.failovers > FAILOVERS_PER_NODE * len(self.nodes):
            raise NodeUnavailable(f"option 'nodes': gave up after {self.failovers - 1} "
                                  f"failovers ({why})")
        self.conn.close()
        self.index, self.conn = connect_first(self.nodes, self.index + 1,
                                              self.options.socket_timeout_s)

    def send(self, requests: Sequence[bytes]) -> None:
        """Every request answered with an ID, or an exception.  A chunk cut
        by a dead node is sent again whole to the next one: at-least-once,
        some of its jobs may exist twice."""
        pending = list(requests)
        while pending:
            replies = self.pipeline_recorded(pending)
            retry = []
            for request, reply in zip(pending, replies):
                if isinstance(reply, hiredis.ReplyError):
                    text = str(reply)
                    if not text.startswith(RETRIABLE):
                        raise JobRefused(f"ADDJOB refused by "
                                         f"{format_address(self.conn.address)}: {text}")
                    retry.append(request)
                else:
                    assert isinstance(reply, bytes)
                    self.ids.append(reply.decode())
                    self.unrecorded.append(self.ids[-1])
            if retry:
                time.sleep(REFUSED_PAUSE_S)
                self.failover(f"{len(retry)} jobs refused for now")
            pending = retry

    def pipeline_recorded(self, requests: Sequence[bytes]) -> list[Reply]:
        """The replies to ``requests``, sent on our node (the next one if
        ours goes away) after an RPUSH of the IDs not recorded yet (one
        element) and its TTL."""
        while True:
            record = []
            if self.unrecorded:
                record = [encode("RPUSH", self.record_key, " ".join(self.unrecorded)),
                          encode("PEXPIRE", self.record_key, ABORT_MARKER_TTL_MS)]
            try:
                replies = self.conn.pipeline(record + list(requests))
            except NodeUnavailable as e:
                self.failover(str(e))
                continue
            self.unrecorded = []
            return replies[len(record):]

    def aborted(self) -> bool:
        """Records what is not recorded yet, then looks whether the
        driver's abort marked this write, on our node (on any node of the
        list if ours went away).  An error reply (a node without the
        keyspace) counts as not marked."""
        reply = self.pipeline_recorded([encode("GET", abort_marker(self.write_id))])[0]
        return isinstance(reply, bytes)

    def abandon(self) -> None:
        """This attempt failed: take back what it added (best effort)."""
        self.conn.close()
        fastack(self.ids, self.nodes, self.index, self.options.socket_timeout_s)

    def close(self) -> None:
        self.conn.close()


def write_partition(options: SinkOptions, write_id: str, batch: Optional[str],
                    batches: Iterator[pa.RecordBatch]) -> SinkCommit:
    encoder = RequestEncoder(options)
    writer = PartitionWriter(options, task_partition(), write_id, batch)
    chunk = options.chunk
    checked = time.monotonic()
    try:
        for batch in batches:
            requests = encoder.requests(batch)
            for i in range(0, len(requests), chunk):
                writer.send(requests[i:i + chunk])
                if time.monotonic() - checked >= MARKER_CHECK_S:
                    if writer.aborted():
                        raise WriteAborted(f"write {write_id} aborted by the driver")
                    checked = time.monotonic()
        # Last look: a write that failed elsewhere meanwhile may never get
        # our commit message; abort finds our record, or we see its marker.
        if writer.ids and writer.aborted():
            raise WriteAborted(f"write {write_id} aborted by the driver")
    except BaseException:
        writer.abandon()
        raise
    writer.close()
    return SinkCommit(writer.partition, len(writer.ids), writer.failovers, writer.ids)


def report(messages: Sequence[Optional[WriterCommitMessage]], what: str) -> str:
    done = [m for m in messages if isinstance(m, SinkCommit)]
    line = (f"trisque sink: {what}: {sum(m.count for m in done)} jobs from "
            f"{len(done)} of {len(messages)} partitions, "
            f"{sum(m.failovers for m in done)} failovers")
    print(line, file=sys.stderr)
    return line


def mark_aborted(nodes: Sequence[Address], write_id: str, key: str,
                 timeout_s: float) -> tuple[list[str], list[str]]:
    """SET the abort marker on every node, for tasks still writing, and
    take (read and delete) the records there, in that order on each node;
    returns the IDs recorded and the nodes that did not take the marker,
    with why."""
    ids: list[str] = []
    missed: list[str] = []
    requests = [encode("SET", abort_marker(write_id), 1, "PX", ABORT_MARKER_TTL_MS),
                encode("LRANGE", key, 0, -1), encode("DEL", key)]
    for address in nodes:
        try:
            with Connection(address, timeout_s) as conn:
                marked, recorded, _ = conn.pipeline(requests)
        except NodeUnavailable as e:
            missed.append(str(e))
            continue
        if isinstance(marked, hiredis.ReplyError):
            missed.append(f"{format_address(address)}: {marked}")
        if isinstance(recorded, list):
            ids += [i for element in recorded for i in element.decode().split()]
    return ids, missed


def forget_records(options: SinkOptions, key: str) -> None:
    """A committed write's records are not needed: deleted, best effort
    (they expire anyway)."""
    for address in parse_nodes(options.nodes):
        try:
            with Connection(address, options.socket_timeout_s) as conn:
                conn.pipeline([encode("DEL", key)])
        except NodeUnavailable:
            pass


def abort_all(options: SinkOptions, write_id: str, batch: Optional[str],
              messages: Sequence[Optional[WriterCommitMessage]]) -> None:
    nodes = parse_nodes(options.nodes)
    # The marker first, so tasks still running stop and take theirs back;
    # then what the tasks recorded, and what the finished ones reported.
    recorded, missed = mark_aborted(nodes, write_id, record_key(write_id, batch),
                                    options.socket_timeout_s)
    reported = [i for m in messages if isinstance(m, SinkCommit) for i in m.ids]
    ids = list(dict.fromkeys(reported + recorded))
    failed = fastack(ids, nodes, 0, options.socket_timeout_s)
    marked = f"marked on {len(nodes) - len(missed)} of {len(nodes)} nodes"
    if missed:
        marked += " (not: " + "; ".join(missed) + ")"
    report(messages, f"aborted, {marked}, FASTACK of {len(ids)} jobs "
                     f"{'failed: ' + failed if failed else 'sent'}")


class BatchSink(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options
        self.write_id = new_write_id()  # made on the driver, pickled to the tasks

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        return write_partition(self.options, self.write_id, None, iterator)

    def commit(self, messages: list[Optional[WriterCommitMessage]]) -> None:
        forget_records(self.options, record_key(self.write_id, None))
        report(messages, "committed")

    def abort(self, messages: list[Optional[WriterCommitMessage]]) -> None:
        abort_all(self.options, self.write_id, None, messages)


class StreamSink(DataSourceStreamArrowWriter):
    """One write id for the query's run: a failed batch ends the query, and
    a restart makes a new writer."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options
        self.write_id = new_write_id()

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        return write_partition(self.options, self.write_id, task_batch(), iterator)

    def commit(self, messages: list[Optional[WriterCommitMessage]], batchId: int) -> None:
        forget_records(self.options, record_key(self.write_id, str(batchId)))
        report(messages, f"batch {batchId} committed")

    def abort(self, messages: list[Optional[WriterCommitMessage]], batchId: int) -> None:
        abort_all(self.options, self.write_id, str(batchId), messages)
