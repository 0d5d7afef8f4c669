"""trisque.pipeline: the ``trisque`` PySpark data source (Spark 4's Python
Data Source API), a client of the broker over RESP.

    from trisque.pipeline import TrisqueDataSource, register
    register(spark)  # spark.dataSource.register(TrisqueDataSource) + AckListener
"""

from __future__ import annotations

from typing import Any

from .datasource import TrisqueDataSource
from .listener import AckListener
from .options import OptionError

__all__ = ["AckListener", "OptionError", "TrisqueDataSource", "register"]


def register(spark: Any, ack_listener: bool = True) -> None:
    """Register the data source, and the listener that acks a stream's last
    batch before a stop (see stream_source.py)."""
    spark.dataSource.register(TrisqueDataSource)
    if ack_listener:
        spark.streams.addListener(AckListener())
