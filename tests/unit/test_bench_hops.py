"""bench/hops.py cuts a job's path where it should: from a perf script
trace written here (the real run needs perf and root: bench/README.md)."""

from bench import hops

GEN, ORIGIN, R1, R2, OTHER = 900, 100, 200, 300, 555
ADD = hops.ADDJOB_SIZE


def _enter(comm, pid, t_us, nr, size, fd=7):
    return (f" {comm} {pid} [000] {t_us / 1e6:.6f}: raw_syscalls:sys_enter: "
            f"NR {nr} ({fd:x}, 55e9b73a3a10, {size:x}, 0, ffffffff, 7f2c)")


def _woke(comm, pid, t_us):
    return f" {comm} {pid} [001] {t_us / 1e6:.6f}:  raw_syscalls:sys_exit: NR 232 = 1"


def _job(t0, replica_answer=(40, 50)):
    """One job's lines from t0: the replica R2 answers last when its
    figures are the later ones."""
    s = "trisque-server"
    return [
        _enter("loadgen-1", GEN, t0, 1, ADD),
        _woke(s, ORIGIN, t0 + 30),
        _enter(s, ORIGIN, t0 + 32, 0, 4000),  # a read: not a hop's mark
        _enter(s, ORIGIN, t0 + 40, 1, 601),   # the copies
        _enter(s, ORIGIN, t0 + 45, 1, 601),
        _woke(s, R1, t0 + 40 + replica_answer[0]),
        _enter(s, R1, t0 + 40 + replica_answer[0] + 10, 1, 208),
        _woke(s, R2, t0 + 40 + replica_answer[1]),
        _enter(s, R2, t0 + 40 + replica_answer[1] + 12, 1, 208),
        _woke(s, ORIGIN, t0 + 40 + replica_answer[1] + 12 + 5),
        _enter(s, ORIGIN, t0 + 120, 1, 91),   # the job, to its consumer
        _enter(s, ORIGIN, t0 + 122, 1, 43),   # the ADDJOB's reply, after it
        _woke("loadgen-1", GEN, t0 + 140),
        _enter("other", OTHER, t0 + 141, 1, ADD),  # not the generator's
    ]


def test_a_jobs_hops_add_up_to_its_time_to_the_generator():
    lines = _job(1000) + _job(2000) + [_enter("loadgen-1", GEN, 3000, 1, ADD)]
    events, comms = hops.parse(lines)
    assert comms[GEN] == "loadgen-1" and comms[ORIGIN] == "trisque-server"
    assert all(e.kind in ("woke", "write") for e in events)
    jobs = hops.hops(events, ORIGIN, [R1, R2], GEN)
    assert len(jobs) == 2
    # generator -> origin 30, ADDJOB 10, to the last replica 50, its work 12,
    # back 5, the GOTJOB turn to its first write (the job to its consumer,
    # 120 - 107 = 13), to the generator 20
    assert [round(h) for h in jobs[0]] == [30, 10, 50, 12, 5, 13, 20]
    assert round(sum(jobs[0])) == 140


def test_the_replica_that_answers_last_is_the_path():
    events, _ = hops.parse(_job(1000, replica_answer=(55, 20)) + [
        _enter("loadgen-1", GEN, 3000, 1, ADD)])
    (job,) = hops.hops(events, ORIGIN, [R1, R2], GEN)
    assert round(job[2]) == 55 and round(job[3]) == 10  # R1's wake and work


def test_a_job_still_on_its_way_when_the_next_starts_is_left_out():
    lines = _job(1000)
    cut = [line for line in lines if "loadgen" not in line or "sys_exit" not in line]
    events, _ = hops.parse(cut + [_enter("loadgen-1", GEN, 3000, 1, ADD)] + _job(4000)
                           + [_enter("loadgen-1", GEN, 5000, 1, ADD)])
    jobs = hops.hops(events, ORIGIN, [R1, R2], GEN)
    assert len(jobs) == 1 and round(sum(jobs[0])) == 140


def test_the_table_has_a_row_a_hop_and_a_column_a_server():
    events, _ = hops.parse(_job(1000) + [_enter("loadgen-1", GEN, 3000, 1, ADD)])
    jobs = hops.hops(events, ORIGIN, [R1, R2], GEN)
    text = hops.table({"trisque": jobs, "Disque C": jobs})
    assert all(hop in text for hop in hops.HOPS)
    assert "trisque" in text.splitlines()[0] and "Disque C" in text.splitlines()[0]
    assert text.splitlines()[-2].split()[-2:] == ["140", "140"]
