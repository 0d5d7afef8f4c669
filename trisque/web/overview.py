"""/api/overview: what the dashboard shows, as one JSON object.

Counters, not rates: the page keeps the last 15 minutes of snapshots and
derives rates from the differences, so the node stores no history.
"""

import time
from dataclasses import asdict
from typing import Any, Optional

from . import node_view
from .dead_letter_view import dead_letters

SLOW_COMMANDS = 10  # by mean time per call


def overview(node: Any) -> dict[str, Any]:
    stats = node.stats
    commands = node_view.commands(node)
    slow = sorted(commands, key=lambda c: c.seconds / c.calls, reverse=True)[:SLOW_COMMANDS]
    aof = node_view.aof(node)
    return {
        "time": time.time(),
        "node": {"id": node.id, "port": node.config.port,
                 "uptime_s": (node.now_ms() - stats.start_ms) // 1000,
                 "loading": bool(node.loading), "load": _load_progress(aof)},
        "nodes": [asdict(p) for p in node_view.peers(node)],
        "jobs": node_view.jobs_by_state(node),
        "registered_jobs": len(node.jobs),
        "queues": [asdict(q) for q in node_view.queues(node)],
        "dead_letters": asdict(dead_letters(node)),
        "schedules": node_view.schedules(node),
        # the page offers REVIVE and DELJOB only where the port asks for a
        # password (job_actions.py)
        "job_actions": bool(node.config.requirepass),
        "clients": {"connected": len(node.clients), "blocked": node.blocked_clients()},
        "commands_processed": stats.commands,
        "slow_commands": [{"name": c.name, "calls": c.calls,
                           "usec_per_call": round(c.seconds * 1e6 / c.calls, 2)}
                          for c in slow],
        "memory": node_view.memory(node),
        "aof": {"enabled": bool(aof.get("aof_enabled")),
                "size": aof.get("aof_current_size", 0),
                "rewriting": bool(aof.get("aof_rewrite_in_progress")),
                "fsync_lag_s": aof["fsync_lag_s"]},
    }


def _load_progress(aof: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The AOF load's progress while it runs (INFO persistence's loading_*)."""
    if "loading_loaded_perc" not in aof:
        return None
    return {"percent": float(aof["loading_loaded_perc"]),
            "eta_s": aof["loading_eta_seconds"],
            "jobs": aof["loading_loaded_jobs"],
            "jobs_per_s": aof["loading_jobs_per_sec"]}
