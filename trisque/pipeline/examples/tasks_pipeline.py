"""An example pipeline on a trisque cluster (``make cluster`` first):

  1. a CSV of tasks -> the queue ``tasks`` (batch sink, each row as JSON);
  2. a stream from ``tasks`` -> parse and transform -> Parquet files,
     trigger(availableNow=True) so it stops once the queue is drained;
  3. the counts: tasks written, results in Parquet, results by kind.

    .venv/bin/python pipeline/examples/tasks_pipeline.py [--tasks 10000]
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import sys
import time


def make_csv(path: str, count: int) -> None:
    kinds = ["resize", "thumbnail", "transcode", "ocr"]
    rng = random.Random(15)
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["task_id", "kind", "size_kb"])
        for i in range(count):
            out.writerow([i, rng.choice(kinds), rng.randint(1, 5000)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", default="127.0.0.1:7711,127.0.0.1:7712,127.0.0.1:7713")
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--dir", default="pipeline-example", help="CSV, Parquet, checkpoint")
    args = parser.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from trisque.pipeline import register

    spark = (SparkSession.builder.master("local[2]").appName("trisque-example")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.extraJavaOptions",
                     "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)

    run = os.path.join(os.path.abspath(args.dir), time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(run)
    csv_path = os.path.join(run, "tasks.csv")
    make_csv(csv_path, args.tasks)

    # 1. CSV -> queue: no body column, so each row goes as JSON.
    tasks = spark.read.option("header", True).schema(
        "task_id long, kind string, size_kb long").csv(csv_path)
    started = time.monotonic()
    (tasks.write.format("trisque").option("nodes", args.nodes).option("queue", "tasks")
     .option("retry", 120).mode("append").save())
    print(f"queued {tasks.count()} tasks in {time.monotonic() - started:.1f} s")

    # 2. queue -> transform -> Parquet.
    task = F.from_json("body", "task_id long, kind string, size_kb long")
    results = (spark.readStream.format("trisque").option("nodes", args.nodes)
               .option("queues", "tasks").option("maxJobsPerTrigger", 5000).load()
               .select("id", task.alias("t"), "ctime")
               .select("id", "t.task_id", "t.kind",
                       (F.col("t.size_kb") / 1024).alias("size_mb"),
                       F.when(F.col("t.size_kb") > 2500, "large").otherwise("small")
                       .alias("bucket"), "ctime"))
    started = time.monotonic()
    query = (results.writeStream.format("parquet")
             .option("path", os.path.join(run, "results"))
             .option("checkpointLocation", os.path.join(run, "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    print(f"stream drained the queue in {time.monotonic() - started:.1f} s")

    # 3. Counts.
    out = spark.read.parquet(os.path.join(run, "results"))
    print(f"results in Parquet: {out.count()} rows, {out.select('task_id').distinct().count()} "
          f"distinct tasks ({os.path.join(run, 'results')})")
    for row in out.groupBy("kind", "bucket").count().orderBy("kind", "bucket").collect():
        print(f"  {row.kind:10} {row.bucket:6} {row['count']}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
