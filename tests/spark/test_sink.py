"""The sink against real trisque nodes: every row once, the ADDJOB options,
routing by a queue column, rows as JSON, a failing partition, a node of a
3-node cluster killed mid-write, and bad options named in the error."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from pyspark.sql import functions as F

from tests.cluster.conftest import build_cluster
from tests.harness import Server, wait_for
from tests.spark.util import bodies, jobs_on, nodes_option

ROWS = 10_000


def write(df: Any, **options: Any) -> None:
    writer = df.write.format("trisque").mode("append")
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.save()


def test_10k_rows_written_once_each(spark: Any, node: Server) -> None:
    df = spark.range(ROWS, numPartitions=4).select(
        F.concat(F.lit("row-"), F.col("id").cast("string")).alias("body"))
    start = time.monotonic()
    write(df, nodes=nodes_option(node), queue="tasks")
    elapsed = time.monotonic() - start
    jobs = jobs_on(node.client(), "tasks")
    assert bodies(jobs) == sorted(b"row-%d" % i for i in range(ROWS))
    assert node.client().execute_command("QLEN", "tasks") == ROWS
    print(f"10k rows in {elapsed:.1f} s")


def test_addjob_options_routing_and_json(spark: Any, node: Server) -> None:
    df = spark.createDataFrame([(i, f"q{i % 2}", i * 1.5) for i in range(6)],
                               "n long, queue string, x double")
    write(df, nodes=nodes_option(node), retry=7, ttl=600, delay=1, replicate=1,
          timeout_ms=1000, **{"async": "true"})
    c = node.client()
    jobs = jobs_on(c)
    assert len(jobs) == 6
    for job in jobs.values():
        row = json.loads(job["body"])
        assert set(row) == {"n", "x"}  # the queue column routes, not sent
        assert job["queue"].decode() == f"q{row['n'] % 2}"
        assert int(job["retry"]) == 7 and int(job["delay"]) == 1
        assert 590 <= int(job["ttl"]) <= 600
    binary = spark.createDataFrame([(bytearray(b"\x00\xff"),)], "body binary")
    write(binary, nodes=nodes_option(node), queue="bin")
    assert bodies(jobs_on(c, "bin")) == [b"\x00\xff"]


def test_maxlen_refusal_fails_the_write(spark: Any, node: Server) -> None:
    df = spark.range(50, numPartitions=1).select(F.col("id").cast("string").alias("body"))
    with pytest.raises(Exception, match="MAXLEN"):
        write(df, nodes=nodes_option(node), queue="small", maxlen=10)
    # The failed partition took back what it added (best effort: healthy node).
    assert node.client().execute_command("QLEN", "small") == 0


def test_partition_that_raises_loses_no_jobs(spark: Any, node: Server) -> None:
    """Partition 1 meets a null body after writing most of its rows: the
    write fails, FASTACK takes back what the attempt added, and writing
    again puts every row there."""
    df = spark.range(4000, numPartitions=2).select(
        F.when(F.col("id") == 3999, F.lit(None)).otherwise(
            F.col("id").cast("string")).alias("body"))
    with pytest.raises(Exception, match="column 'body' holds a null"):
        write(df, nodes=nodes_option(node), queue="q", chunk=100)
    left = bodies(jobs_on(node.client(), "q"))
    assert len(left) == 0, f"{len(left)} jobs of the failed attempt left"
    write(df.na.fill("3999"), nodes=nodes_option(node), queue="q")
    assert bodies(jobs_on(node.client(), "q")) == sorted(b"%d" % i for i in range(4000))


def test_node_killed_during_write(spark: Any) -> None:
    """Three nodes, one partition each; node 0 is killed mid-write.  Its
    partition fails over; the write commits, and every row is in the
    cluster (REPLICATE 2: a copy survives on another node)."""
    cluster = build_cluster(3)
    try:
        total = 30_000
        df = spark.range(total, numPartitions=3).select(
            F.concat(F.lit("r"), F.col("id").cast("string")).alias("body"))
        victim = cluster.clients[0]

        def kill_when_busy() -> None:
            wait_for(lambda: victim.execute_command("QLEN", "k") > 1000, 60, 0.01)
            cluster.kill(0)
        killer = threading.Thread(target=kill_when_busy)
        killer.start()
        write(df, nodes=nodes_option(*cluster.servers), queue="k", replicate=2,
              timeout_ms=4000, chunk=200)
        killer.join()
        assert cluster.alive() == [1, 2]
        seen: dict[str, Any] = {}
        for i in (1, 2):
            seen.update(jobs_on(cluster.clients[i], "k"))
        got = set(bodies(seen))
        missing = {b"r%d" % i for i in range(total)} - got
        assert not missing, f"{len(missing)} rows missing, e.g. {sorted(missing)[:3]}"
    finally:
        cluster.close()


@pytest.mark.parametrize("options, column, message", [
    ({"queue": "q", "replicat": "2"}, "body", "unknown sink option 'replicat'"),
    ({"queue": "q", "retry": "soon"}, "body", "option 'retry' must be an integer"),
    ({"queue": "q", "nodes": "127.0.0.1:1"}, "body", "option 'nodes': no node reachable"),
    ({}, "body", "option 'queue' is required"),
    ({"queue": "q"}, "int", "column 'body' must be string or binary"),
])
def test_bad_sink_options_name_the_option(spark: Any, node: Server, options: dict[str, str],
                                          column: str, message: str) -> None:
    df = spark.range(3).select(
        (F.col("id") if column == "int" else F.col("id").cast("string")).alias("body"))
    options.setdefault("nodes", nodes_option(node))
    with pytest.raises(Exception, match=message):
        write(df, **options)
