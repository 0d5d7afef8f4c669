"""The Spark sink's rate against the broker's own pipelined ADDJOB rate,
on one trisque node, in the same run (issue 15's target: >= 0.5).

    .venv/bin/python -m bench.spark_sink [--rows 200000] [--rounds 3]

Broker: pipelined ADDJOB q <body> 0 in chunks of 1000 (what one sink
partition sends), from 1 client and from 2 clients at once (the sink's 2
partitions); the better of the two is the baseline.  Sink: a local[2]
SparkSession writes spark.range(rows, 2 partitions) as a string body
column with df.write.format("trisque"), after a warm-up write (JVM and
Python workers started).  Each figure is the median of --rounds; the
queue is emptied (DEBUG FLUSHALL) between runs."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from typing import Any

from pipeline.connection import Connection, encode  # run from the repository root

from . import servers

CHUNK = 1000


def broker_rate(port: int, rows: int, clients: int) -> float:
    per_client = rows // clients
    requests = [encode("ADDJOB", "q", b"row-%d" % i, 0) for i in range(per_client)]
    chunks = [requests[i:i + CHUNK] for i in range(0, len(requests), CHUNK)]
    conns = [Connection(("127.0.0.1", port), 60) for _ in range(clients)]

    def run(conn: Connection) -> None:
        for chunk in chunks:
            conn.pipeline(chunk)
    threads = [threading.Thread(target=run, args=(c,)) for c in conns]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    for c in conns:
        c.close()
    return per_client * clients / elapsed


def sink_rate(spark: Any, port: int, rows: int) -> float:
    from pyspark.sql import functions as F
    df = spark.range(rows, numPartitions=2).select(
        F.concat(F.lit("row-"), F.col("id").cast("string")).alias("body"))
    start = time.perf_counter()
    (df.write.format("trisque").option("nodes", f"127.0.0.1:{port}").option("queue", "q")
     .mode("append").save())
    return rows / (time.perf_counter() - start)


def session() -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from trisque.pipeline import register
    spark = (SparkSession.builder.master("local[2]").appName("trisque-bench")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.extraJavaOptions",
                     "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark, ack_listener=False)
    return spark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.spark_sink", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    spark = session()
    node = servers.start_trisque()
    try:
        flush = lambda: node.client.execute_command("DEBUG", "FLUSHALL")  # noqa: E731
        sink_rate(spark, node.port, 20_000)  # warm-up
        flush()
        figures: dict[str, list[float]] = {"broker 1 client": [], "broker 2 clients": [],
                                           "spark sink": []}
        for _ in range(args.rounds):
            figures["broker 1 client"].append(broker_rate(node.port, args.rows, 1))
            flush()
            figures["broker 2 clients"].append(broker_rate(node.port, args.rows, 2))
            flush()
            figures["spark sink"].append(sink_rate(spark, node.port, args.rows))
            assert node.client.execute_command("QLEN", "q") == args.rows
            flush()
        medians = {k: statistics.median(v) for k, v in figures.items()}
        baseline = max(medians["broker 1 client"], medians["broker 2 clients"])
        print(f"{args.rows} jobs, median of {args.rounds} rounds, "
              f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
        for name, value in medians.items():
            print(f"  {name:18} {value:9.0f} jobs/s")
        print(f"  sink / broker      {medians['spark sink'] / baseline:9.2f}  (target >= 0.50)")
    finally:
        node.stop()
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
