"""The bounded batch read: planning leases up to maxJobs queued jobs and
the partitions carry them to the executors.  Nothing acks them: the user
writes the IDs to the ack writer (option ack=true) once the output is
safe, or they come back after their RETRY.

Pitfall: Spark may plan a DataFrame again (another action, a lost cached
partition), and every planning leases more jobs.  cache() or
localCheckpoint() the DataFrame before using it twice."""

from __future__ import annotations

from typing import Iterator

from pyspark.sql.datasource import DataSourceReader, InputPartition

from .job_rows import PartitionJobs, Row, rows, split
from .lease import lease
from .nodes import parse_nodes
from .options import SourceOptions


class BatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions, body_binary: bool) -> None:
        self.options = options
        self.body_binary = body_binary
        self.nodes = parse_nodes(options.nodes)

    def partitions(self) -> list[InputPartition]:
        jobs = lease(self.nodes, self.options.queues, self.options.max_jobs,
                     self.options.socket_timeout_s)
        parts = split(jobs, [], self.options.partitions)
        # Spark wants at least one partition, even for no jobs.
        return [InputPartition(p) for p in parts] or [InputPartition(PartitionJobs())]

    def read(self, partition: InputPartition) -> Iterator[Row]:
        part: PartitionJobs = partition.value
        return rows(part, self.nodes, self.options.socket_timeout_s, self.body_binary)
