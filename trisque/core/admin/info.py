"""INFO: Disque's sections and field names."""

from __future__ import annotations

import gc
import os
import platform
import resource
import sys
from typing import TYPE_CHECKING

from .build_form import build_form
from ..command import unique_commands
from ..keyspace.scripting import info_fields as scripting_info
from .version import REDIS_VERSION, VERSION

if TYPE_CHECKING:
    from ..node import Node

# One "name:value" line of a section (values are printed as they are).
InfoField = tuple[str, str | int | float]

SECTIONS = ("server", "clients", "memory", "jobs", "queues", "persistence",
            "stats", "replication", "cpu", "errorstats", "cluster", "keyspace")
DEFAULT = ("server", "clients", "memory", "jobs", "queues", "persistence",
           "stats", "replication", "cpu", "errorstats", "keyspace")
# The Redis version whose keyspace commands we follow (tested against it),
# for Redis tools and clients that check INFO server's redis_version.
RUN_ID = os.urandom(20).hex()


def human(size: int) -> str:
    for unit, scale in (("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if size >= scale:
            return f"{size / scale:.2f}{unit}"
    return f"{size}B"


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def section_fields(node: Node, name: str) -> list[InfoField] | None:
    now_ms = node.now_ms()
    stats = node.stats
    config = node.config
    if name == "server":
        uptime = (now_ms - stats.start_ms) // 1000
        return [
            ("disque_version", VERSION), ("trisque_version", VERSION),
            ("trisque_build", build_form()),
            ("redis_version", REDIS_VERSION), ("redis_mode", "standalone"),
            ("os", f"{platform.system()} {platform.release()} {platform.machine()}"),
            ("arch_bits", 64 if sys.maxsize > 2**32 else 32),
            ("multiplexing_api", "trio"),
            ("python_version", platform.python_version()),
            ("process_id", os.getpid()), ("run_id", RUN_ID),
            ("tcp_port", config.port), ("uptime_in_seconds", uptime),
            ("uptime_in_days", uptime // 86400), ("hz", config.hz),
            ("executable", os.path.abspath(sys.argv[0])),
            ("config_file", config.config_file or ""),
        ]
    if name == "clients":
        return [
            ("connected_clients", len(node.clients)),
            ("client_longest_output_list",
             max((len(c.out) for c in node.clients.values()), default=0)),
            ("client_biggest_input_buf", 0),
            ("blocked_clients", node.blocked_clients()),
        ]
    if name == "memory":
        rss = rss_bytes()
        used = node.used_memory
        return [
            ("used_memory", used), ("used_memory_human", human(used)),
            ("used_memory_rss", rss), ("used_memory_peak", node.peak_memory),
            ("used_memory_peak_human", human(node.peak_memory)),
            ("mem_fragmentation_ratio", f"{rss / used:.2f}" if used else "0"),
            ("mem_allocator", "pymalloc"),
            ("maxmemory", config.maxmemory),
            ("maxmemory_human", human(config.maxmemory)),
            ("maxmemory_policy", config.maxmemory_policy),
            ("memory_warning_level", node.memory_level()),
            *scripting_info(node),
        ]
    if name == "jobs":
        return [("registered_jobs", len(node.jobs))]
    if name == "queues":
        return [("registered_queues", len(node.queues))]
    if name == "persistence":
        return [*node.log.info().items(),
                ("rdb_changes_since_last_save", node.keyspace.changes)]
    if name == "stats":
        return [
            ("total_connections_received", stats.connections),
            ("total_commands_processed", stats.commands),
            ("instantaneous_ops_per_sec", 0),
            ("total_net_input_bytes", stats.net_in),
            ("total_net_output_bytes", stats.net_out),
            ("instantaneous_input_kbps", "0.00"),
            ("instantaneous_output_kbps", "0.00"),
            ("rejected_connections", stats.rejected),
            ("auth_failures", stats.auth_failures),
            ("protected_mode_denied", stats.denied),
            ("tls_handshake_failures", stats.tls_handshake_failures),
            ("client_query_buffer_limit_disconnections", stats.query_limit_kills),
            ("client_output_buffer_limit_disconnections", stats.output_limit_kills),
            ("expired_jobs", stats.expired_jobs),
            ("dead_lettered_jobs", stats.dead_lettered_jobs),
            ("revived_jobs", stats.revived_jobs),
            ("postponed_requeues", stats.requeues_postponed),
            ("deduplicated_adds", stats.deduplicated_adds),
            ("idempotency_keys", len(node.idempotency)),
            ("waitjob_waiting_clients", node.waits.clients_waiting()),
            ("waitjob_watches", node.waits.watches()),
            ("waitjob_acked", node.waits.acked_replies),
            ("waitjob_timeouts", node.waits.timeouts),
            *node.schedules.info_fields(),
            ("expired_keys", node.keyspace.expired_keys),
            ("pubsub_channels", len(node.pubsub.channels)),
            ("pubsub_patterns", len(node.pubsub.patterns)),
            ("pubsubshard_channels", len(node.pubsub.shard)),
            ("latest_fork_usec", 0),
            ("gc_pauses", stats.gc_pauses),
            ("gc_pause_ms_total", f"{stats.gc_pause_ms_total:.1f}"),
            ("gc_pause_ms_max", f"{stats.gc_pause_ms_max:.1f}"),
            ("gc_full_collections", gc.get_stats()[2]["collections"]),
            ("total_error_replies", stats.error_replies),
        ]
    if name == "replication":
        # Redis's replication: keys have none (jobs replicate over the bus,
        # INFO cluster), so a node is a master without replicas
        return [("role", "master"), ("connected_slaves", 0), ("master_repl_offset", 0)]
    if name == "cpu":
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return [
            ("used_cpu_sys", f"{me.ru_stime:.2f}"), ("used_cpu_user", f"{me.ru_utime:.2f}"),
            ("used_cpu_sys_children", f"{kids.ru_stime:.2f}"),
            ("used_cpu_user_children", f"{kids.ru_utime:.2f}"),
        ]
    if name == "cluster":
        return list(node.cluster.info_fields())
    if name == "keyspace":
        return list(node.keyspace.info_fields(now_ms))
    if name == "errorstats":  # error replies by code, in byte order (Redis's rax)
        return [(f"errorstat_{code.decode('utf-8', 'replace')}", f"count={count}")
                for code, count in sorted(stats.errorstats.items())]
    if name == "commandstats":
        return [(f"cmdstat_{c.lname}",
                 f"calls={c.calls},usec={c.ns // 1000},"
                 f"usec_per_call={c.ns / 1000 / c.calls if c.calls else 0:.2f},"
                 f"rejected_calls={c.rejected},failed_calls={c.failed}")
                for c in unique_commands(node.table) if c.calls or c.rejected]
    return None


def render(node: Node, sections: list[str]) -> str:
    """INFO's text for the sections asked (lower case; none: default), each
    once, in the table's order, as Redis 7 (INFO cpu all)."""
    wanted: set[str] = set()
    for section in sections or ["default"]:
        if section in ("all", "everything"):
            wanted.update(SECTIONS + ("commandstats",))
        elif section == "default":
            wanted.update(DEFAULT)
        else:
            wanted.add(section)
    names = [name for name in SECTIONS + ("commandstats",) if name in wanted]
    parts = []
    for name in names:
        fields = section_fields(node, name)
        if fields is None:
            continue
        body = "".join(f"{k}:{v}\r\n" for k, v in fields)
        title = "CPU" if name == "cpu" else name.capitalize()  # as Disque
        parts.append(f"# {title}\r\n{body}")
    return "\r\n".join(parts)
