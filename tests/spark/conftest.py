"""One local SparkSession for the whole test run (it takes 8-12 s to start
and ~1.3 GB), quiet, on two cores, with the trisque data source and its
AckListener registered; trisque nodes are real processes (tests/harness)."""

from __future__ import annotations

import os
import sys
from typing import Iterator

import pytest

from tests.harness import Server

JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # quick start, small heap work


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    from trisque.pipeline import register

    session = (SparkSession.builder.master("local[2]").appName("trisque-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.extraJavaOptions", JVM_OPTIONS)
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.streaming.pollingDelay", "50ms")
               .config("spark.python.worker.reuse", "true")
               # A killed task's Python worker is killed this long after
               # (2 s by default): long enough for test_sink's forced race.
               .config("spark.python.task.killTimeout", "30s")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


@pytest.fixture
def node() -> Iterator[Server]:
    srv = Server().start()
    yield srv
    srv.cleanup()
