"""AckListener: acks a streaming batch's jobs from the driver as soon as
Spark reports the batch's progress, which it does after writing the
batch's commit log.  Without it, the batch before a query's stop stays
leased until the query restarts or the jobs' RETRY requeues them (see
stream_source.py).  Added by ``trisque.pipeline.register(spark)``."""

from __future__ import annotations

import json
import sys
from typing import Any

from pyspark.sql.streaming.listener import (QueryIdleEvent, QueryProgressEvent,
                                            QueryStartedEvent, QueryTerminatedEvent,
                                            StreamingQueryListener)

from . import offsets
from .connection import Address
from .lease import ack
from .nodes import parse_address_key

ACK_TIMEOUT_S = 10.0


def ack_offset(end: Any) -> int:
    """Ack the jobs an offset of ours names; returns how many were sent."""
    if not offsets.is_ours(end):
        return 0
    jobs = offsets.jobs_of(end)
    nodes: list[Address] = [parse_address_key(k) for k in jobs]
    left = ack(jobs, nodes, ACK_TIMEOUT_S)
    if left:
        print(f"trisque listener: {offsets.count(left)} acks not sent (nodes down); "
              f"the next start of the query sends them", file=sys.stderr)
    return offsets.count(jobs) - offsets.count(left)


class AckListener(StreamingQueryListener):
    def onQueryStarted(self, event: QueryStartedEvent) -> None:
        pass

    def onQueryProgress(self, event: QueryProgressEvent) -> None:
        for source in event.progress.sources:
            try:
                end = json.loads(source.endOffset) if source.endOffset else None
                ack_offset(end)
            except Exception as e:  # a listener must not break the query
                print(f"trisque listener: ack failed: {e!r}", file=sys.stderr)

    def onQueryIdle(self, event: QueryIdleEvent) -> None:
        pass

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:
        pass
