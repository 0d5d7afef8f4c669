"""The explicit ack writer (option ack=true): a DataFrame of job IDs, from
a batch read, is acknowledged with ACKJOB once the user's own output is
safely written."""

from __future__ import annotations

from typing import Iterator, Optional

import hiredis
import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StringType, StructType

from .connection import NodeUnavailable, encode
from .lease import ACK_IDS_PER_COMMAND
from .options import OptionError, SinkOptions
from .sink import PartitionWriter, SinkCommit, task_partition, report

ID_COLUMN = "id"


def check_ack_schema(schema: StructType) -> None:
    fields = {f.name: f.dataType for f in schema.fields}
    if not isinstance(fields.get(ID_COLUMN), StringType):
        raise OptionError("option 'ack' needs a string column 'id' (the job IDs)")


class AckWriter(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        conn = PartitionWriter(self.options, task_partition())  # connection + failover
        acked = 0
        for batch in iterator:
            ids = [i for i in batch.column(batch.schema.names.index(ID_COLUMN)).to_pylist()
                   if i]
            requests = [encode("ACKJOB", *ids[i:i + ACK_IDS_PER_COMMAND])
                        for i in range(0, len(ids), ACK_IDS_PER_COMMAND)]
            while True:
                try:
                    replies = conn.conn.pipeline(requests)
                    break
                except NodeUnavailable as e:
                    conn.failover(str(e))  # acks are idempotent: send again
            for reply in replies:
                if isinstance(reply, hiredis.ReplyError):
                    raise RuntimeError(f"ACKJOB failed: {reply}")
                acked += int(reply)  # type: ignore[arg-type]
        conn.close()
        return SinkCommit(conn.partition, acked, conn.failovers)

    def commit(self, messages: list[Optional[WriterCommitMessage]]) -> None:
        report(messages, "acked (jobs known to the nodes asked)")

