"""/metrics: the node's state in the Prometheus exposition format.

A custom collector reads the node (web/node_view.py) at every scrape and
yields metric families; prometheus-client's registry and exposition write
the text.  Series stay bounded: queues are the top TOP_QUEUES by length
plus one ``(other)`` series, commands are the command table's, bus frame
types the protocol's, nodes the cluster's.
"""

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    HistogramMetricFamily, Metric)
from prometheus_client.registry import Collector

from . import node_view


class NodeCollector(Collector):
    def __init__(self, node: Any) -> None:
        self.node = node

    def collect(self) -> Iterator[Metric]:
        node = self.node
        yield from self._jobs_and_queues(node)
        yield from self._clients_and_commands(node)
        yield from self._cluster(node)
        yield from self._persistence(node)
        yield from self._memory_and_keyspace(node)
        yield from self._latency_events(node)

    def _jobs_and_queues(self, node: Any) -> Iterator[Metric]:
        jobs = GaugeMetricFamily("trisque_jobs", "Jobs on this node by state "
                                 "(only queued above 100000 jobs)", labels=["state"])
        for state, count in node_view.jobs_by_state(node).items():
            jobs.add_metric([state], count)
        yield jobs
        yield GaugeMetricFamily("trisque_registered_jobs", "Jobs on this node",
                                value=len(node.jobs))
        yield GaugeMetricFamily("trisque_registered_queues", "Queues on this node",
                                value=len(node.queues))
        length = GaugeMetricFamily(
            "trisque_queue_length", "Jobs queued, for the top queues by length "
            "and the rest summed as queue=\"(other)\"", labels=["queue"])
        blocked = GaugeMetricFamily("trisque_queue_blocked_clients",
                                    "Clients blocked in GETJOB on the queue", labels=["queue"])
        counters = {
            "enqueued": CounterMetricFamily("trisque_queue_enqueued", "Jobs put in the queue",
                                            labels=["queue"]),
            "dequeued": CounterMetricFamily("trisque_queue_dequeued",
                                            "Jobs taken from the queue", labels=["queue"]),
            "acked": CounterMetricFamily("trisque_queue_acked",
                                         "Jobs of the queue acknowledged here", labels=["queue"]),
            "nacked": CounterMetricFamily("trisque_queue_nacked",
                                          "Jobs of the queue NACKed here", labels=["queue"]),
        }
        for q in node_view.queues(node):
            length.add_metric([q.name], q.length)
            blocked.add_metric([q.name], q.blocked)
            for field, family in counters.items():
                family.add_metric([q.name], getattr(q, field))
        yield length
        yield blocked
        yield from counters.values()

    def _clients_and_commands(self, node: Any) -> Iterator[Metric]:
        stats = node.stats
        yield GaugeMetricFamily("trisque_connected_clients", "Client connections",
                                value=len(node.clients))
        yield GaugeMetricFamily("trisque_blocked_clients", "Clients blocked (GETJOB, BLPOP...)",
                                value=node.blocked_clients())
        yield CounterMetricFamily("trisque_connections_received", "Connections accepted",
                                  value=stats.connections)
        yield CounterMetricFamily("trisque_commands_processed", "Commands run",
                                  value=stats.commands)
        yield CounterMetricFamily("trisque_expired_jobs", "Jobs expired (TTL)",
                                  value=stats.expired_jobs)
        yield CounterMetricFamily("trisque_dead_lettered_jobs",
                                  "Jobs moved to their dead-letter queue here (delivery limit)",
                                  value=stats.dead_lettered_jobs)
        yield CounterMetricFamily("trisque_revived_jobs", "Dead jobs put back by REVIVE",
                                  value=stats.revived_jobs)
        yield CounterMetricFamily("trisque_postponed_requeues",
                                  "Requeues postponed by NACK DELAY or a backoff",
                                  value=stats.requeues_postponed)
        yield CounterMetricFamily("trisque_deduplicated_adds",
                                  "ADDJOB ... IDEMPOTENCY answered with an existing job's ID",
                                  value=stats.deduplicated_adds)
        yield GaugeMetricFamily("trisque_idempotency_keys",
                                "Idempotency keys indexed here (live jobs and tombstones)",
                                value=len(node.idempotency))
        waits = node.waits
        yield GaugeMetricFamily("trisque_waitjob_waiting_clients",
                                "Clients blocked in WAITJOB here", value=waits.clients_waiting())
        yield GaugeMetricFamily("trisque_waitjob_watches",
                                "Other nodes' WAITJOBs this node will answer (it holds the job)",
                                value=waits.watches())
        yield CounterMetricFamily("trisque_waitjob_acked", "WAITJOBs answered acked",
                                  value=waits.acked_replies)
        yield CounterMetricFamily("trisque_waitjob_timeouts", "WAITJOBs answered at their timeout",
                                  value=waits.timeouts)
        schedules = node.schedules
        yield GaugeMetricFamily("trisque_schedules", "Periodic job schedules (SCHEDULE ADD)",
                                value=len(schedules.live()))
        yield CounterMetricFamily("trisque_schedule_fires",
                                  "Schedule ticks this node added the job for",
                                  value=schedules.fired)
        yield CounterMetricFamily("trisque_schedule_fire_errors",
                                  "Tries to add a schedule tick's job that failed here",
                                  value=schedules.fire_errors)
        yield CounterMetricFamily("trisque_schedule_ticks_heard",
                                  "Schedule ticks another node fired, heard over the bus",
                                  value=schedules.ticks_heard)
        yield GaugeMetricFamily("trisque_uptime_seconds", "Seconds since the node started",
                                value=(node.now_ms() - stats.start_ms) / 1000)
        calls = CounterMetricFamily("trisque_commands", "Calls by command", labels=["command"])
        latency = HistogramMetricFamily("trisque_command_duration_seconds",
                                        "Time running each command", labels=["command"])
        for c in node_view.commands(node):
            calls.add_metric([c.name], c.calls)
            latency.add_metric([c.name], [(_le(bound), count) for bound, count in c.buckets],
                               c.seconds)
        yield calls
        yield latency

    def _cluster(self, node: Any) -> Iterator[Metric]:
        state = GaugeMetricFamily("trisque_cluster_node_state",
                                  "1 for each known node's state as this node sees it",
                                  labels=["node_id", "address", "state"])
        link = GaugeMetricFamily("trisque_cluster_node_link",
                                 "1 if this node's bus link to the node is up",
                                 labels=["node_id", "address"])
        for peer in node_view.peers(node):
            state.add_metric([peer.id, peer.address, peer.state], 1)
            link.add_metric([peer.id, peer.address], int(peer.link))
        yield state
        yield link
        repl = HistogramMetricFamily(
            "trisque_replication_latency_seconds",
            "From ADDJOB here to the peer's GOTJOB (whole ms)", labels=["node_id", "address"])
        for r in node_view.replication(node):
            repl.add_metric([r.peer, r.address],
                            [(_le(bound), count) for bound, count in r.buckets], r.seconds)
        yield repl
        frames = node_view.bus_frames(node)
        if frames is not None:
            for direction, counts in zip(("received", "sent"), frames):
                family = CounterMetricFamily(f"trisque_bus_frames_{direction}",
                                             f"Cluster bus frames {direction} by type",
                                             labels=["type"])
                for type_name, count in counts.items():
                    family.add_metric([type_name], count)
                yield family
        refused = node_view.bus_links_refused(node)
        if refused is not None:
            family = CounterMetricFamily(
                "trisque_bus_links_refused",
                "Cluster bus links closed: auth (cluster-secret), too-big "
                "(cluster-bus-max-frame), slow-peer (cluster-bus-send-queue-limit)",
                labels=["reason"])
            for reason, count in refused.items():
                family.add_metric([reason], count)
            yield family

    def _persistence(self, node: Any) -> Iterator[Metric]:
        aof = node_view.aof(node)
        yield GaugeMetricFamily("trisque_loading", "1 while the AOF loads",
                                value=aof.get("loading", 0))
        if "loading_loaded_perc" in aof:
            yield GaugeMetricFamily("trisque_loading_loaded_ratio",
                                    "Part of the AOF loaded so far (0-1)",
                                    value=float(aof["loading_loaded_perc"]) / 100)
            yield GaugeMetricFamily("trisque_loading_eta_seconds",
                                    "Seconds the AOF load should still take",
                                    value=aof["loading_eta_seconds"])
            yield GaugeMetricFamily("trisque_loading_loaded_jobs", "Jobs loaded so far",
                                    value=aof["loading_loaded_jobs"])
        yield GaugeMetricFamily("trisque_aof_enabled", "appendonly", value=aof.get("aof_enabled", 0))
        yield GaugeMetricFamily("trisque_aof_rewrite_in_progress", "An AOF rewrite runs",
                                value=aof.get("aof_rewrite_in_progress", 0))
        yield GaugeMetricFamily("trisque_aof_rewrite_scheduled", "An AOF rewrite waits",
                                value=aof.get("aof_rewrite_scheduled", 0))
        yield GaugeMetricFamily("trisque_aof_last_rewrite_ok", "1 if the last rewrite worked",
                                value=int(aof.get("aof_last_bgrewrite_status", "ok") == "ok"))
        yield GaugeMetricFamily("trisque_aof_last_write_ok", "1 if the last AOF write worked",
                                value=int(aof.get("aof_last_write_status", "ok") == "ok"))
        if aof.get("aof_enabled"):
            yield GaugeMetricFamily("trisque_aof_size_bytes", "AOF size",
                                    value=aof["aof_current_size"])
            yield GaugeMetricFamily("trisque_aof_base_size_bytes", "AOF size after the "
                                    "last rewrite", value=aof["aof_base_size"])
            yield GaugeMetricFamily("trisque_aof_buffer_bytes", "Bytes not yet written",
                                    value=aof["aof_buffer_length"])
            yield CounterMetricFamily("trisque_aof_fsyncs", "fsync calls done",
                                      value=aof["aof_fsyncs"])
            if aof["fsync_lag_s"] is not None:
                yield GaugeMetricFamily("trisque_aof_fsync_lag_seconds",
                                        "Seconds since the last finished fsync",
                                        value=aof["fsync_lag_s"])

    def _memory_and_keyspace(self, node: Any) -> Iterator[Metric]:
        mem = node_view.memory(node)
        yield GaugeMetricFamily("trisque_memory_used_bytes", "used_memory", value=mem["used"])
        yield GaugeMetricFamily("trisque_memory_rss_bytes", "Resident set size",
                                value=mem["rss"])
        yield GaugeMetricFamily("trisque_memory_max_bytes", "maxmemory", value=mem["max"])
        yield GaugeMetricFamily("trisque_memory_level", "Disque's memory warning level: 0 "
                                "fine, 1 above 75%, 2 above 95% of maxmemory, 3 full",
                                value=mem["level"])
        keys = GaugeMetricFamily("trisque_keyspace_keys", "Keys by database", labels=["db"])
        expires = GaugeMetricFamily("trisque_keyspace_expires", "Keys with a TTL by database",
                                    labels=["db"])
        for db, (n_keys, n_expires) in node_view.keyspace(node).items():
            keys.add_metric([str(db)], n_keys)
            expires.add_metric([str(db)], n_expires)
        yield keys
        yield expires

    def _latency_events(self, node: Any) -> Iterator[Metric]:
        """The latency monitor's events (LATENCY LATEST): none until
        latency-monitor-threshold is set and something reached it."""
        latest = GaugeMetricFamily("trisque_latency_event_latest_ms", "The latest sample of "
                                   "a latency monitor event (LATENCY LATEST)", labels=["event"])
        worst = GaugeMetricFamily("trisque_latency_event_max_ms", "A latency monitor event's "
                                  "worst since the start or LATENCY RESET", labels=["event"])
        for event, _at, latest_ms, max_ms in node.latency.latest():
            latest.add_metric([event], latest_ms)
            worst.add_metric([event], max_ms)
        yield latest
        yield worst


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)


class MetricsExporter:
    """A registry holding the node's collector; ``render()`` is one scrape."""

    def __init__(self, node: Any) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(NodeCollector(node))

    def render(self) -> bytes:
        return generate_latest(self.registry)
