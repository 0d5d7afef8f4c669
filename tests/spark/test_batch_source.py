"""The bounded batch read and the explicit ack writer."""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness import Server
from tests.spark.test_stream_source import add_jobs, leftover
from tests.spark.util import jobs_on, nodes_option


def test_batch_read_then_ack(spark: Any, node: Server, tmp_path: Any) -> None:
    ids = add_jobs(node, 1200)
    nodes = nodes_option(node)
    df = (spark.read.format("trisque").option("nodes", nodes).option("queues", "in")
          .option("maxJobs", 1000).load().localCheckpoint())  # leased once, kept
    rows = df.collect()
    assert len(rows) == 1000 and {r.id for r in rows} <= ids
    assert all(r.body.startswith("job-") and r.ctime is not None for r in rows)
    assert node.client().execute_command("QLEN", "in") == 200
    df.write.parquet(str(tmp_path / "out"))  # the user's output first
    df.select("id").write.format("trisque").option("nodes", nodes) \
        .option("ack", "true").mode("append").save()
    assert len(jobs_on(node.client(), states=("active",))) == 0
    assert len(leftover(node)) == 200  # the 200 never read, still queued


def test_binary_body_schema(spark: Any, node: Server) -> None:
    node.client().execute_command("ADDJOB", "in", b"\x00\xfe", 0)
    schema = ("queue string, id string, body binary, nacks long, "
              "additional_deliveries long, ctime timestamp")
    rows = (spark.read.format("trisque").schema(schema).option("nodes", nodes_option(node))
            .option("queues", "in").load().collect())
    assert [bytes(r.body) for r in rows] == [b"\x00\xfe"]


def test_ack_writer_needs_an_id_column(spark: Any, node: Server) -> None:
    with pytest.raises(Exception, match="option 'ack' needs a string column 'id'"):
        spark.range(3).write.format("trisque").option("nodes", nodes_option(node)) \
            .option("ack", "true").mode("append").save()
