from tests.harness import wait_for


def test_addjob_getjob_ackjob(r):
    job_id = r.execute_command("ADDJOB", "q", "hello", 0).decode()
    assert len(job_id) == 40 and job_id.startswith("D-")
    assert r.execute_command("QLEN", "q") == 1
    [[queue, got_id, body]] = r.execute_command("GETJOB", "NOHANG", "FROM", "q")
    assert (queue, got_id, body) == (b"q", job_id.encode(), b"hello")
    assert r.execute_command("ACKJOB", job_id) == 1
    wait_for(lambda: r.info("jobs")["registered_jobs"] == 0)


def test_resp3_hello(r3):
    assert r3.ping()
    job_id = r3.execute_command("ADDJOB", "q", "x", 0)
    info = r3.execute_command("SHOW", job_id)
    assert info[4:6] == [b"state", b"queued"]  # Disque's flat array on RESP3 too
