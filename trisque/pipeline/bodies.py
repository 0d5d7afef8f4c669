"""Rows of a DataFrame as ADDJOB requests: the body is the ``body`` column
(string or binary) or, without one, the row as JSON; an optional ``queue``
column routes each row, else the ``queue`` option does."""

from __future__ import annotations

import json
from typing import Optional

import pyarrow as pa
from pyspark.sql.types import BinaryType, StringType, StructType

from .options import OptionError, SinkOptions

BODY_COLUMN = "body"
QUEUE_COLUMN = "queue"


def check_sink_schema(schema: StructType, options: SinkOptions) -> None:
    """Refuse, at planning, columns the sink cannot turn into jobs."""
    fields = {f.name: f.dataType for f in schema.fields}
    body = fields.get(BODY_COLUMN)
    if body is not None and not isinstance(body, (StringType, BinaryType)):
        raise OptionError(f"column '{BODY_COLUMN}' must be string or binary, not "
                          f"{body.simpleString()} (or drop it to send rows as JSON)")
    queue = fields.get(QUEUE_COLUMN)
    if queue is not None and not isinstance(queue, StringType):
        raise OptionError(f"column '{QUEUE_COLUMN}' must be a string, not "
                          f"{queue.simpleString()}")
    if queue is None and options.queue is None:
        raise OptionError("option 'queue' is required (or a string column 'queue')")


def _as_bytes(column: pa.Array, name: str) -> list[bytes]:
    if column.null_count:
        raise ValueError(f"column '{name}' holds a null: a job needs a value")
    if not pa.types.is_binary(column.type) and not pa.types.is_large_binary(column.type):
        column = column.cast(pa.binary())  # utf-8 strings: same bytes, no copy in Python
    return column.to_pylist()


class RequestEncoder:
    """Encodes a RecordBatch's rows as pipelined ADDJOB requests."""

    def __init__(self, options: SinkOptions) -> None:
        tail = options.addjob_tail()
        self.argc = 4 + len(tail) - 1
        self.tail = b"".join(b"$%d\r\n%s\r\n" % (len(t), t) for t in tail)
        self.default_queue = options.queue.encode() if options.queue else None
        self._heads: dict[bytes, bytes] = {}

    def _head(self, queue: bytes) -> bytes:
        head = self._heads.get(queue)
        if head is None:
            if len(self._heads) > 10_000:  # a bound on routed queue names kept
                self._heads.clear()
            head = self._heads[queue] = b"*%d\r\n$6\r\nADDJOB\r\n$%d\r\n%s\r\n" % (
                self.argc, len(queue), queue)
        return head

    def bodies(self, batch: pa.RecordBatch) -> list[bytes]:
        names = batch.schema.names
        if BODY_COLUMN in names:
            return _as_bytes(batch.column(names.index(BODY_COLUMN)), BODY_COLUMN)
        if QUEUE_COLUMN in names:
            batch = batch.drop_columns([QUEUE_COLUMN])
        dumps = json.JSONEncoder(default=str, separators=(",", ":"),
                                 ensure_ascii=False).encode
        return [dumps(row).encode() for row in batch.to_pylist()]

    def queues(self, batch: pa.RecordBatch) -> Optional[list[bytes]]:
        names = batch.schema.names
        if QUEUE_COLUMN not in names:
            return None
        return _as_bytes(batch.column(names.index(QUEUE_COLUMN)), QUEUE_COLUMN)

    def requests(self, batch: pa.RecordBatch) -> list[bytes]:
        bodies = self.bodies(batch)
        queues = self.queues(batch)
        tail = self.tail
        if queues is None:
            assert self.default_queue is not None  # check_sink_schema saw to it
            head = self._head(self.default_queue)
            return [b"%s$%d\r\n%s\r\n%s" % (head, len(b), b, tail) for b in bodies]
        return [b"%s$%d\r\n%s\r\n%s" % (self._head(q), len(b), b, tail)
                for q, b in zip(queues, bodies)]
