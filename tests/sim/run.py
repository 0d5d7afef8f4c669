"""One simulated run: form the cluster, run the workload under faults,
heal, drain, settle, check."""

import time

from trisque.core.jobs.job import DUMMY_ACK

from . import liveness
from .faults import Faults
from .schedules import ScheduleChecker
from .workload import Workload
from .world import World, frame_summary


def run_seed(seed, nodes=5, profile="none", work_ms=15000, drain_ms=40000,
             settle_ms=240000, trace_job=None, check_invariants=True, policies=False,
             schedules=False):
    started = time.monotonic(), time.process_time()
    world = World(seed, nodes=nodes, check_invariants=check_invariants)
    if schedules:
        world.schedules = ScheduleChecker(world)
    trace = []
    if trace_job is not None:
        needle = trace_job.encode() if isinstance(trace_job, str) else trace_job

        def tracer(now, src, dst, frame, lost):
            if needle in frame:
                arrow = "-x" if lost else "->"
                trace.append(f"{now:>8} ms  node {src} {arrow} node {dst}  "
                             f"{frame_summary(frame)}{'  (lost)' if lost else ''}")
        world.network.trace = tracer
        world.checker.watch = (needle, trace)
    checker = world.checker
    world.start_cluster()
    world.run_until(20000, stop=world.cluster_formed)
    if not world.cluster_formed():
        checker.violations.append("the cluster did not form a full mesh in 20 s")
        return _result(world, seed, nodes, profile, started, trace)
    t0 = world.now_ms
    faults = Faults(world, profile)
    world.faulty = profile != "none"
    workload = Workload(world, policies=policies, **faults.workload_options)
    faults.start(t0 + work_ms)
    workload.start(t0 + work_ms)
    if world.schedules is not None:
        world.schedules.add(workload.alive_nodes())
    _run_sampling(world, t0 + work_ms)
    faults.heal()
    healed_ms = checker.healed_ms = world.now_ms
    workload.drain()
    if world.schedules is not None:
        world.schedules.delete(workload.alive_nodes())
    _run_sampling(world, t0 + work_ms + drain_ms)
    # Lost, never delivered and starved jobs are judged when the drain ends.
    checker.judge_deliveries()
    checker.judge_limits()
    checker.violations += liveness.starved(checker, healed_ms, world.now_ms,
                                           world.node_timeout_ms)
    workload.stop()
    faults.unload()

    def settled():
        return all(s.alive and not s.node.jobs for s in world.nodes)
    world.run_until(world.now_ms + settle_ms, stop=settled)
    checker.judge_leaks()
    if world.schedules is not None:
        checker.violations += world.schedules.judge(profile == "none", nodes)
    return _result(world, seed, nodes, profile, started, trace)


def _run_sampling(world, end_ms):
    """Run until end_ms, sampling the number of dummy acks each second."""
    while world.now_ms < end_ms:
        world.run_until(min(end_ms, world.now_ms + 1000))
        for sim_node in world.nodes:
            if sim_node.alive:
                dummies = sum(1 for j in sim_node.node.jobs.values() if j.flags & DUMMY_ACK)
                world.checker.max_dummy_acks = max(world.checker.max_dummy_acks, dummies)


def _result(world, seed, nodes, profile, started, trace):
    summary = world.checker.summary()
    summary.update(seed=seed, nodes=nodes, profile=profile,
                   events=world.events_run, frames=world.network.frames,
                   virtual_s=world.now_ms / 1000,
                   wall_s=round(time.monotonic() - started[0], 2),
                   cpu_s=round(time.process_time() - started[1], 2),
                   violations=list(world.checker.violations), trace=trace)
    if world.schedules is not None:
        summary.update(world.schedules.summary())
    return summary


def replay_command(seed, nodes, profile, job=None, policies=False, schedules=False):
    line = f"python -m tests.sim --seed {seed} --nodes {nodes} --faults {profile}"
    if policies:
        line += " --policies"
    if schedules:
        line += " --schedules"
    if job:
        line += f" --trace {job}"
    return line
