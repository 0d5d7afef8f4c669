"""The sink against real trisque nodes: every row once, the ADDJOB options,
routing by a queue column, rows as JSON, a failing partition, a node of a
3-node cluster killed mid-write, and bad options named in the error."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import Column
from pyspark.sql import functions as F

from tests.cluster.conftest import build_cluster
from tests.harness import Server, wait_for
from tests.spark.util import HoldingProxy, bodies, jobs_on, nodes_option
from trisque.pipeline.sink import RECORD_PREFIX

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


def settle(spark: Any, node: Server, queue: str, timeout_s: float = 60.0) -> int:
    """After a failed write, tasks of it may still run (Spark does not wait
    for them): wait until Spark has no active job or stage and no running
    task, and the queue length has not changed over the last STABLE_S;
    returns that length."""
    tracker = spark.sparkContext.statusTracker()
    jvm_tracker = spark.sparkContext._jsc.sc().statusTracker()
    client = node.client()
    deadline = time.monotonic() + timeout_s
    last, since = -1, time.monotonic()
    while True:
        length = client.execute_command("QLEN", queue)
        now = time.monotonic()
        if length != last:
            last, since = length, now
        running = sum(e.numRunningTasks() for e in jvm_tracker.getExecutorInfos())
        idle = not tracker.getActiveJobsIds() and not tracker.getActiveStageIds() \
            and running == 0
        if idle and now - since >= STABLE_S:
            return int(length)
        assert now < deadline, (f"not settled after {timeout_s} s: {running} tasks running, "
                                f"QLEN {queue} = {length}")
        time.sleep(0.05)


STABLE_S = 1.0


def test_partition_that_raises_loses_no_jobs(spark: Any, node: Server) -> None:
    """Partition 1 meets a null body after writing most of its rows: the
    write fails, FASTACK takes back what the attempt added (partition 0's
    too, even when it is still writing as abort runs), and writing again
    puts every row there."""
    df = spark.range(4000, numPartitions=2).select(
        F.when(F.col("id") == 3999, F.lit(None)).otherwise(
            F.col("id").cast("string")).alias("body"))
    with pytest.raises(Exception, match="column 'body' holds a null"):
        write(df, nodes=nodes_option(node), queue="q", chunk=100)
    assert settle(spark, node, "q") == 0
    left = bodies(jobs_on(node.client(), "q"))
    assert len(left) == 0, f"{len(left)} jobs of the failed attempt left"
    write(df.na.fill("3999"), nodes=nodes_option(node), queue="q")
    assert bodies(jobs_on(node.client(), "q")) == sorted(b"%d" % i for i in range(4000))


def null_last_row_once(flag: Path, last: int, timeout_s: float) -> Column:
    """The id as a string, and for id ``last`` a null, but only once
    ``flag`` exists (or timeout_s has passed): the partition holding
    ``last`` fails when the test says.  A Python UDF, so that the task's
    own Python worker waits (local[2]: the same machine, the same files)."""
    path = str(flag)

    @F.udf("string", useArrow=False)  # the Arrow form needs pandas
    def body(i: int) -> str | None:
        if i != last:
            return str(i)
        deadline = time.monotonic() + timeout_s
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.01)
        return None
    return body(F.col("id"))


HOLD_WAIT_S = 60.0  # how long partition 1 waits for partition 0 to be held
RECORD_WAIT_S = 20.0  # for partition 0 to write 2000 jobs and record them


def write_failing_through(spark: Any, proxy: HoldingProxy, node: Server, held: Path) -> None:
    """Two partitions of 2000 rows into queue 'late', partition 0 through
    ``proxy`` (task k starts at node k mod 2; abort marks the nodes in
    order, the proxy's first); partition 1 fails on its last row once
    ``held`` exists."""
    df = spark.range(4000, numPartitions=2).select(
        null_last_row_once(held, 3999, HOLD_WAIT_S).alias("body"))
    nodes = f"127.0.0.1:{proxy.port},127.0.0.1:{node.port}"
    with pytest.raises(Exception, match="column 'body' holds a null"):
        write(df, nodes=nodes, queue="late", chunk=100)


def test_partition_still_writing_after_abort_takes_its_jobs_back(
        spark: Any, node: Server, tmp_path: Path) -> None:
    """The race the CI run hit, forced: partition 0 writes through a proxy
    that holds its ADDJOBs until partition 1 has failed the write and the
    driver's abort has run (save() raised), then lets them through: its
    jobs arrive after abort, and its commit message never reaches abort.
    The abort marker on the node makes it stop and take them back (without
    the marker it wrote all 2000, and they stayed).

    Partition 1 meets its null only once partition 0 is held: its last
    row's body comes from a UDF that waits for a flag file, touched when
    the proxy holds a request (else partition 1 may fail, and Spark cancel
    partition 0, before partition 0 sent anything: nothing held).

    Spark kills a failed job's other tasks and their Python workers
    spark.python.task.killTimeout (2 s) later; the CI run's partition 0
    finished inside that window.  conftest makes it 30 s, so that a loaded
    machine's slow abort does not kill the worker before the race plays
    out."""
    proxy = HoldingProxy(node.port, b"ADDJOB")
    held = tmp_path / "partition-0-held"

    def flag_when_held() -> None:
        if proxy.held.wait(HOLD_WAIT_S):
            held.touch()
    threading.Thread(target=flag_when_held, daemon=True).start()
    try:
        write_failing_through(spark, proxy, node, held)
        assert proxy.held.is_set(), "partition 0 was not held: the race was not forced"
        proxy.release()
        left = settle(spark, node, "late")
        calls = {k: v["calls"] for k, v in node.client().info("commandstats").items()}
        print(f"late partition: {left} jobs left; calls {calls}")
        # Its held chunk reached the node after abort (with the marker it
        # stops at its next check and takes back what it added).
        assert calls.get("cmdstat_addjob", 0) >= 100, "partition 0 wrote nothing after abort"
        assert left == 0, f"{left} jobs of the late partition stayed"
    finally:
        proxy.close()


def test_partition_done_before_abort_marks_is_taken_back_by_its_record(
        spark: Any, node: Server, tmp_path: Path) -> None:
    """The other side of that race, forced: partition 0 finishes after the
    write failed but before abort sets the marker on its node, so its last
    look finds no marker, and its commit message never reaches abort.  The
    proxy holds partition 0's ADDJOBs until partition 1 has failed, then
    abort's SET of the marker on partition 0's node until partition 0's
    record there names every job it added (its last look went in the same
    pipeline).  Abort reads the record and takes them back (without
    records all 2000 stayed: the CI run's test_partition_that_raises_
    loses_no_jobs, alone, failed so 7 times in 7)."""
    proxy = HoldingProxy(node.port, b"ADDJOB", b"$2\r\nPX\r\n")  # abort's SET ... PX
    addjob, marker = proxy.gates.values()
    held = tmp_path / "partition-0-held"
    client = node.client()
    recorded: list[str] = []

    def partition_0_recorded_all() -> bool:
        mine = {i for i, job in jobs_on(client, "late").items() if int(job["body"]) < 2000}
        recorded[:] = [i for key in client.keys(RECORD_PREFIX + "*")
                       for element in client.lrange(key, 0, -1) for i in element.decode().split()]
        return len(mine) == 2000 and mine <= set(recorded)

    def play_the_race() -> None:
        try:
            if addjob.held.wait(HOLD_WAIT_S):
                held.touch()  # partition 1 fails now
            if marker.held.wait(HOLD_WAIT_S):  # abort is setting the marker
                addjob.release()
                wait_for(partition_0_recorded_all, RECORD_WAIT_S, 0.05)
        finally:
            proxy.release()
    race = threading.Thread(target=play_the_race, daemon=True)
    race.start()
    try:
        write_failing_through(spark, proxy, node, held)
        race.join(HOLD_WAIT_S)
        assert addjob.held.is_set() and marker.held.is_set(), "the race was not forced"
        assert partition_0_recorded_all() or len(recorded) == 0, "records left after abort"
        left = settle(spark, node, "late")
        assert left == 0, f"{left} jobs of the finished partition stayed"
        assert client.keys(RECORD_PREFIX + "*") == [], "abort leaves no record"
    finally:
        proxy.close()


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
