"""The streaming source against a real node: each job once over several
micro-batches, availableNow, the batch before stop() acked, a query
stopped mid-batch and restarted from its checkpoint, a batch that raises."""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable

import pytest
from pyspark.sql import functions as F

from tests.harness import Server, wait_for
from tests.spark.util import jobs_on, nodes_option


def add_jobs(node: Server, n: int, queue: str = "in", retry_s: int = 300) -> set[str]:
    c = node.client()
    pipe = c.pipeline(transaction=False)
    for i in range(n):
        pipe.execute_command("ADDJOB", queue, f"job-{i}", 0, "RETRY", retry_s)
    return {x.decode() for x in pipe.execute()}


def leftover(node: Server) -> dict[str, Any]:
    """Jobs still queued or active (leased and not acked)."""
    return jobs_on(node.client(), states=("queued", "active"))


class Collector:
    """A foreachBatch sink that keeps every (batch, id, body) it saw."""

    def __init__(self, before: Callable[[int], None] = lambda batch: None) -> None:
        self.rows: list[tuple[int, str, str]] = []
        self.before = before
        self.lock = threading.Lock()

    def __call__(self, df: Any, batch_id: int) -> None:
        self.before(batch_id)
        got = [(batch_id, r.id, r.body) for r in df.select("id", "body").collect()]
        with self.lock:
            self.rows.extend(got)

    def ids(self) -> list[str]:
        with self.lock:
            return [r[1] for r in self.rows]

    def batches(self) -> set[int]:
        with self.lock:
            return {r[0] for r in self.rows}


def stream(spark: Any, node: Server, **options: Any) -> Any:
    reader = spark.readStream.format("trisque").option("nodes", nodes_option(node)) \
        .option("queues", "in")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_each_job_once_over_three_batches(spark: Any, node: Server, tmp_path: Any) -> None:
    ids = add_jobs(node, 3000)
    sink = Collector()
    query = (stream(spark, node, maxJobsPerTrigger=1000).writeStream.foreachBatch(sink)
             .option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        wait_for(lambda: len(sink.ids()) >= 3000, 90, 0.1, "3000 rows")
        # The last batch is acked at the next trigger (latestOffset(start)).
        wait_for(lambda: not leftover(node), 20, 0.2, "every job acked")
    finally:
        query.stop()
    assert sorted(sink.ids()) == sorted(ids)  # each once: no fault, no duplicate
    assert len(sink.batches()) >= 3
    assert node.client().execute_command("QLEN", "in") == 0


def test_available_now_drains_in_batches_and_acks_all(spark: Any, node: Server,
                                                      tmp_path: Any) -> None:
    ids = add_jobs(node, 2500)
    sink = Collector()
    query = (stream(spark, node, maxJobsPerTrigger=1000).writeStream.foreachBatch(sink)
             .option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert sorted(sink.ids()) == sorted(ids)
    assert len(sink.batches()) == 3
    # Acked by the final latestOffset (Spark never calls commit for it) or
    # the listener: nothing left leased.
    wait_for(lambda: not leftover(node), 10, 0.1, "every job acked")


def test_batch_before_stop_is_acked(spark: Any, node: Server, tmp_path: Any) -> None:
    """One batch, then stop() long before the next trigger: Spark never
    tells the reader; the AckListener acks it on the progress event."""
    add_jobs(node, 300)
    sink = Collector()
    query = (stream(spark, node).writeStream.foreachBatch(sink)
             .option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="10 minutes").start())
    wait_for(lambda: len(sink.ids()) == 300, 60, 0.1, "the batch")
    wait_for(lambda: query.lastProgress is not None, 30, 0.1, "progress")
    query.stop()
    wait_for(lambda: not leftover(node), 10, 0.1, "the batch acked")


def test_stopped_mid_batch_then_restarted_from_checkpoint(spark: Any, node: Server,
                                                          tmp_path: Any) -> None:
    ids = add_jobs(node, 2000)
    checkpoint = str(tmp_path / "cp")

    def slow_body(body: str) -> str:
        time.sleep(0.004)  # so that stop() lands inside a batch
        return body
    slow = F.udf(slow_body, "string")
    first = Collector()
    query = (stream(spark, node, maxJobsPerTrigger=500)
             .withColumn("body", slow("body")).writeStream.foreachBatch(first)
             .option("checkpointLocation", checkpoint)
             .trigger(processingTime="100 milliseconds").start())

    def uncommitted_after_the_first() -> set[str]:
        offsets = set(os.listdir(os.path.join(checkpoint, "offsets")))
        commits = set(os.listdir(os.path.join(checkpoint, "commits")))
        return {o for o in offsets if o.isdigit() and int(o) >= 1} - commits
    wait_for(lambda: len(first.batches()) >= 1, 90, 0.05, "a first batch")
    # A later batch is planned (its offsets written), so running: 500 rows
    # x 4 ms / 2 cores, about 1 s for stop() to land in
    wait_for(uncommitted_after_the_first, 60, 0.01, "the next batch")
    query.stop()
    uncommitted = uncommitted_after_the_first()
    assert uncommitted, "the query was meant to stop in the middle of a batch"
    assert leftover(node), "jobs of the interrupted batch are still leased"

    second = Collector()
    query = (stream(spark, node, maxJobsPerTrigger=500)
             .withColumn("body", slow("body")).writeStream.foreachBatch(second)
             .option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    replayed = {b for b, _, _ in second.rows} & {int(o) for o in uncommitted}
    assert replayed, "the restart replays the uncommitted batch"
    delivered = set(first.ids()) | set(second.ids())
    assert delivered == ids  # at least once each
    bodies = {i: b for _, i, b in first.rows + second.rows}
    assert all(b.startswith("job-") for b in bodies.values())
    wait_for(lambda: not leftover(node), 10, 0.1, "every job acked in the end")


def test_batch_that_raises_loses_no_jobs(spark: Any, node: Server, tmp_path: Any) -> None:
    ids = add_jobs(node, 1500)
    checkpoint = str(tmp_path / "cp")

    def fail_batch_1(batch_id: int) -> None:
        if batch_id == 1:
            raise RuntimeError("boom in batch 1")
    first = Collector(fail_batch_1)
    query = (stream(spark, node, maxJobsPerTrigger=500).writeStream.foreachBatch(first)
             .option("checkpointLocation", checkpoint)
             .trigger(processingTime="100 milliseconds").start())
    with pytest.raises(Exception, match="boom in batch 1"):
        query.awaitTermination(90)
    second = Collector()
    query = (stream(spark, node, maxJobsPerTrigger=500).writeStream.foreachBatch(second)
             .option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination(90)
    assert set(first.ids()) | set(second.ids()) == ids
    wait_for(lambda: not leftover(node), 10, 0.1, "every job acked in the end")


@pytest.mark.parametrize("options, message", [
    ({"queues": "in", "maxJobsPerTriger": "5"}, "unknown source option 'maxjobspertriger'"),
    ({"queues": ""}, "option 'queues' is required"),
    ({"queues": "in", "maxJobsPerTrigger": "0"}, "option 'maxJobsPerTrigger' must be between"),
    ({"queues": "in", "nodes": "127.0.0.1:1"}, "option 'nodes': no node reachable"),
])
def test_bad_source_options_name_the_option(spark: Any, node: Server, tmp_path: Any,
                                            options: dict[str, str], message: str) -> None:
    reader = spark.readStream.format("trisque")
    options.setdefault("nodes", nodes_option(node))
    for k, v in options.items():
        reader = reader.option(k, v)
    with pytest.raises(Exception, match=message):
        query = (reader.load().writeStream.format("console")
                 .option("checkpointLocation", str(tmp_path / "cp")).start())
        try:
            query.awaitTermination(30)
        finally:
            query.stop()
