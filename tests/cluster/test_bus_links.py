"""A peer's outbound link as the transport's send finds it: the links of
the last peers sent to are kept (cluster/tcp/transport.py), and frames
must follow a peer onto its new link once the old one is gone."""

from .conftest import addjob


def test_frames_follow_a_restarted_peer_onto_its_new_link(make_cluster):
    """Node 0 sends to nodes 1 and 2 (their links kept as the last two),
    then node 1 restarts: its old link is closed and a new one made.  A
    REPLICATE 3 ADDJOB needs node 1's copy, so it is answered only if the
    REPLJOB goes out on the new link (one sent to the closed link would be
    dropped, and so would every re-send)."""
    c = make_cluster(3)
    for i in range(5):
        job_id = addjob(c[0], "q", f"before-{i}", "REPLICATE", 3, timeout=5000)
        assert len(c.job_holders(job_id)) == 3
    c.restart(1)
    c.wait_mesh()
    for i in range(5):
        job_id = addjob(c[0], "q", f"after-{i}", "REPLICATE", 3, timeout=5000)
        assert len(c.job_holders(job_id)) == 3
        assert c[1].execute_command("SHOW", job_id) is not None
