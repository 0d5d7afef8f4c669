"""Membership: MEET chain to full mesh, failure detection, nodes.conf,
FORGET, RESET, LEAVING, cluster-join."""

import os
import signal
import socket
import threading
import time

import pytest
import redis

from tests.harness import Server, wait_for

from .conftest import (addjob, cluster_info, cluster_nodes,
                       hello, reachable, start_servers, Cluster)


def test_meet_chain_of_five_becomes_full_mesh(make_cluster):
    c = make_cluster(5)  # chain MEETs; make_cluster waits for the mesh
    ids = c.ids()
    # Links come up with the mesh (one may be reconnecting at any instant on
    # a loaded machine, so wait for all of them rather than sample once).
    wait_for(lambda: all(v["link"] == "connected" for i in range(5)
                         for v in cluster_nodes(c[i]).values()), 10,
             message="every link connected")
    assert len(set(ids)) == 5
    for i in range(5):
        nodes = cluster_nodes(c[i])
        assert set(nodes) == set(ids), "every node knows every other"
        me = [n for n, v in nodes.items() if "myself" in v["flags"]]
        assert me == [ids[i]]
        for node_id, v in nodes.items():
            if node_id != ids[i]:
                assert v["flags"] == {"noflags"}, v
                port = c.servers[ids.index(node_id)].port
                assert v["addr"] == f"127.0.0.1:{port}"
        ci = cluster_info(c[i])
        assert ci["cluster_reachable_nodes"] == "4"
        assert ci["cluster_known_nodes"] == "5"
        reply = c[i].execute_command("HELLO")
        assert reply[0] == 1 and reply[1].decode() == ids[i]
        assert reply[2][0].decode() == ids[i], "myself first"
        assert hello(c[i]) == {node_id: 1 for node_id in ids}


def _flags(client):
    return {node_id: v["flags"] for node_id, v in cluster_nodes(client).items()}


def test_kill_two_of_five_flags_exactly_them_then_restart_clears(make_cluster):
    c = make_cluster(5)
    ids = c.ids()
    victims = [1, 3]
    survivors = [0, 2, 4]
    for i in victims:
        c.kill(i)
    # First the link is gone (HELLO priority 5), then PFAIL (10), then FAIL.
    seen_prio = set()

    def suspected():
        prio = hello(c[0])[ids[1]]
        seen_prio.add(prio)
        return prio >= 10
    wait_for(suspected, 10, interval=0.01, message="victim suspected")
    assert 5 in seen_prio, seen_prio
    seen_pfail = set()

    def all_failed():
        for s in survivors:
            flags = _flags(c[s])
            for v in victims:
                if "fail?" in flags[ids[v]]:
                    seen_pfail.add((s, v))
            if not all(flags[ids[v]] == {"fail"} for v in victims):
                return False
        return True
    wait_for(all_failed, 15, interval=0.05, message="victims flagged fail")
    for s in survivors:
        flags = _flags(c[s])
        for j in survivors:
            if j != s:
                assert flags[ids[j]] == {"noflags"}, (s, j, flags)
        assert reachable(c[s]) == 2
        prio = hello(c[s])
        assert prio[ids[1]] == 100 and prio[ids[3]] == 100
        assert prio[ids[survivors[(survivors.index(s) + 1) % 3]]] == 1
    # At least one survivor saw its own suspicion (fail?) before FAIL.
    assert seen_pfail, "no fail? observed before fail"

    for i in victims:
        c.restart(i)
    assert c.ids() == ids, "restarted nodes kept their IDs (nodes.conf)"
    c.wait_mesh(timeout=20)
    for s in range(5):
        flags = _flags(c[s])
        assert len(flags) == 5
        for j in range(5):
            if j != s:
                assert flags[ids[j]] == {"noflags"}, (s, j, flags)


def test_restarted_node_is_cleared_even_if_killed_at_once(make_cluster):
    """A restarting node greets its peers before it serves clients, so its
    PONG is already on its way to them when a client first reaches it:
    even if it is killed right then (as Disque's suite does), the peers
    clear its FAIL flag (until the new failure is detected)."""
    c = make_cluster(3)
    ids = c.ids()
    c.kill(2)
    wait_for(lambda: all(_flags(c[s])[ids[2]] == {"fail"} for s in (0, 1)), 15,
             message="node 2 flagged fail")
    c.restart(2)  # returns as soon as it answers PING
    c.kill(2)
    cleared = set()

    def seen_cleared():
        for s in (0, 1):
            if "fail" not in _flags(c[s])[ids[2]]:
                cleared.add(s)
        return cleared == {0, 1}
    greeting = [line for line in c.servers[2].log().splitlines() if "Greeted" in line][-1:]
    wait_for(seen_cleared, 1.5, interval=0.01,
             message=f"FAIL cleared (seen on {cleared}; {greeting})")


def test_restarted_node_answers_its_first_ping_ready(make_cluster):
    """Disque's suite takes a node as up at its first reply to PING, even
    -LOADING, and sends it commands at once: a restarted node answers
    -LOADING only while its AOF loads; while it then greets its peers,
    requests wait, and the first answer is +PONG.  A stopped peer (it
    accepts the link but never answers) makes the greeting last its full
    second."""
    c = make_cluster(3)
    ids = c.ids()
    nodes_conf = os.path.join(c.servers[2].dir, "nodes.conf")

    def peers_saved():
        with open(nodes_conf) as f:
            text = f.read()
        return ids[0] in text and ids[1] in text
    wait_for(peers_saved, 10, message="the peers saved in nodes.conf (the node greets them)")
    c.kill(2)
    stopped = c.servers[1].proc.pid
    os.kill(stopped, signal.SIGSTOP)
    try:
        c.servers[2].start(wait=False)
        first = []

        def answered():
            try:
                with socket.create_connection(("127.0.0.1", c.servers[2].port),
                                              timeout=5) as sock:
                    sock.sendall(b"PING\r\n")
                    first.append(sock.recv(100))
                    return True
            except OSError:
                return False
        wait_for(answered, 15, message="the restarted node to answer")
    finally:
        os.kill(stopped, signal.SIGCONT)
    assert first == [b"+PONG\r\n"]
    assert "Greeted the cluster: 1 of 2" in c.servers[2].log()


def test_fail_needs_a_majority(make_cluster):
    """With 3 nodes, one survivor alone cannot mark FAIL... two can."""
    c = make_cluster(3)
    ids = c.ids()
    c.kill(2)
    wait_for(lambda: all("fail" in _flags(c[s])[ids[2]] for s in (0, 1)), 15,
             message="fail with a majority of 2 of 3")
    # Now kill a second one: the last survivor sees it PFAIL, never FAIL
    # (1 of 3 is no majority).
    c.kill(1)
    wait_for(lambda: "fail?" in _flags(c[0])[ids[1]], 10, message="pfail")
    time.sleep(1.5)
    assert "fail" not in _flags(c[0])[ids[1]]
    assert "fail?" in _flags(c[0])[ids[1]]
    assert hello(c[0])[ids[1]] == 10


def test_nodes_conf_atomic_and_identity_survives_restart(make_cluster):
    c = make_cluster(3)
    ids = c.ids()
    server = c.servers[0]
    path = os.path.join(server.dir, "nodes.conf")

    def conf_lines():
        with open(path) as f:
            return f.read().splitlines()
    # Saved within a cron tick of the change that made it dirty.
    lines = wait_for(lambda: len(conf_lines()) == 3 and conf_lines(), 2,
                     message="nodes.conf lists the 3 nodes")
    mine = [line for line in lines if "myself" in line]
    assert mine and mine[0].startswith(ids[0])
    assert not os.path.exists(path + ".tmp")
    c[0].execute_command("CLUSTER", "SAVECONFIG")
    with open(path) as f:
        assert len(f.read().splitlines()) == 3
    # A stale temp file from an interrupted save does not matter.
    with open(path + ".tmp", "w") as f:
        f.write("garbage")
    c.kill(0)
    c.restart(0)
    assert c[0].execute_command("CLUSTER", "MYID").decode() == ids[0]
    # It knows its peers without any MEET.
    c.wait_mesh()
    assert set(cluster_nodes(c[0])) == set(ids)


def test_kill_9_while_saving_nodes_conf_never_loses_identity(make_cluster):
    """nodes.conf is replaced atomically: a kill -9 at any moment of a save
    leaves the old or the new file, never a torn one."""
    c = make_cluster(3)
    ids = c.ids()
    for delay in (0.1, 0.3):
        stop = threading.Event()

        def hammer(port=c.servers[0].port):
            client = redis.Redis(port=port, socket_timeout=2, retry=None)
            try:
                while not stop.is_set():
                    client.execute_command("CLUSTER", "SAVECONFIG")
            except (redis.ConnectionError, redis.TimeoutError):
                pass
            finally:
                client.close()
        threads = [threading.Thread(target=hammer) for _ in range(3)]
        for t in threads:
            t.start()
        time.sleep(delay)
        c.kill(0)
        stop.set()
        for t in threads:
            t.join()
        c.restart(0)
        assert c[0].execute_command("CLUSTER", "MYID").decode() == ids[0]
        assert set(cluster_nodes(c[0])) == set(ids)


def test_corrupted_nodes_conf_refuses_to_start(tmp_path):
    server = Server(directory=str(tmp_path))
    with open(os.path.join(server.dir, "nodes.conf"), "w") as f:
        f.write("this is not a nodes.conf\n")
    server.start(wait=False)
    try:
        server.proc.wait(15)
        assert server.proc.returncode != 0
    finally:
        server.cleanup()


def test_forget_bans_the_node(make_cluster):
    c = make_cluster(3)
    ids = c.ids()
    with pytest.raises(redis.ResponseError, match="Unknown node"):
        c[0].execute_command("CLUSTER", "FORGET", "f" * 40)
    with pytest.raises(redis.ResponseError, match="forget myself"):
        c[0].execute_command("CLUSTER", "FORGET", ids[0])
    with pytest.raises(redis.ResponseError, match="Invalid node"):
        c[0].execute_command("CLUSTER", "FORGET", "abc")
    # Forget node 2 on both others: gossip must not bring it back while
    # the ban lasts, even though node 2 still knows them.
    c[0].execute_command("CLUSTER", "FORGET", ids[2])
    c[1].execute_command("CLUSTER", "FORGET", ids[2])
    assert ids[2] not in cluster_nodes(c[0])
    time.sleep(2.5)  # several gossip rounds and node 2's pings
    for i in (0, 1):
        assert ids[2] not in cluster_nodes(c[i]), "banned node came back"
        assert reachable(c[i]) == 1


def test_reset_soft_and_hard(make_cluster):
    c = make_cluster(3)
    ids = c.ids()
    c[0].execute_command("ADDJOB", "q", "body", 0, "REPLICATE", 1)
    assert c[0].execute_command("QLEN", "q") == 1
    c[0].execute_command("CLUSTER", "RESET", "SOFT")
    assert c[0].execute_command("CLUSTER", "MYID").decode() == ids[0]
    assert set(cluster_nodes(c[0])) == {ids[0]}
    assert c[0].execute_command("QLEN", "q") == 0, "reset flushes the jobs"
    c[1].execute_command("CLUSTER", "RESET", "HARD")
    new_id = c[1].execute_command("CLUSTER", "MYID").decode()
    assert new_id != ids[1] and len(new_id) == 40
    int(new_id, 16)
    assert set(cluster_nodes(c[1])) == {new_id}
    with open(os.path.join(c.servers[1].dir, "nodes.conf")) as f:
        assert f.read().split()[0] == new_id
    with pytest.raises(redis.ResponseError, match="syntax"):
        c[1].execute_command("CLUSTER", "RESET", "MEDIUM")
    # The reset nodes can be met again and the cluster heals.
    c[0].execute_command("CLUSTER", "MEET", "127.0.0.1", c.servers[2].port)
    c[1].execute_command("CLUSTER", "MEET", "127.0.0.1", c.servers[2].port)
    c.wait_mesh()
    assert c.ids()[1] == new_id
    with pytest.raises(redis.ResponseError):
        c[1].execute_command("CLUSTER", "NOSUCH")


def test_leaving_node(make_cluster):
    c = make_cluster(4)
    ids = c.ids()
    assert c[0].execute_command("CLUSTER", "LEAVING") == b"no"
    with pytest.raises(redis.ResponseError, match="yes"):
        c[0].execute_command("CLUSTER", "LEAVING", "maybe")
    c[0].execute_command("CLUSTER", "LEAVING", "yes")
    assert c[0].execute_command("CLUSTER", "LEAVING") == b"yes"
    # Every node learns it and stops counting it as reachable.
    wait_for(lambda: all("leaving" in cluster_nodes(c[i])[ids[0]]["flags"]
                         for i in range(4)), 10, message="leaving spreads")
    for i in (1, 2, 3):
        wait_for(lambda: reachable(c[i]) == 2, 5, message="leaving not reachable")
        assert hello(c[i])[ids[0]] == 100
    assert hello(c[0])[ids[0]] == 100
    # ADDJOB on a leaving node: no local copy, replicated to 3 others.
    job_id = addjob(c[0], "q", "body", "REPLICATE", 3)
    assert c.job_holders(job_id) == [1, 2, 3]
    # ... and one of them queues it.
    wait_for(lambda: sum(c[i].execute_command("QLEN", "q") for i in (1, 2, 3)) == 1,
             5, message="one holder queues the externally replicated job")
    assert c[0].execute_command("QLEN", "q") == 0
    # REPLICATE 4 needs 4 other nodes: impossible.
    with pytest.raises(redis.ResponseError, match="NOREPL.*leaving"):
        addjob(c[0], "q", "body", "REPLICATE", 4)
    # GETJOB that would block gets -LEAVING; NOHANG still answers.
    with pytest.raises(redis.ResponseError, match="^LEAVING"):
        c[0].execute_command("GETJOB", "TIMEOUT", 100, "FROM", "q")
    assert c[0].execute_command("GETJOB", "NOHANG", "FROM", "q") is None
    # The leaving state survives a restart (nodes.conf).
    c.kill(0)
    c.restart(0)
    assert c[0].execute_command("CLUSTER", "LEAVING") == b"yes"
    c[0].execute_command("CLUSTER", "LEAVING", "no")
    wait_for(lambda: all(reachable(c[i]) == 3 for i in range(4)), 10,
             message="back from leaving")
    assert hello(c[1])[ids[0]] == 1


def test_cluster_join_directive_forms_a_cluster():
    first = start_servers(1)[0]
    others = []
    try:
        others = start_servers(2, config=f"cluster-join 127.0.0.1:{first.port}\n")
        c = Cluster([first] + others)
        c.wait_mesh(timeout=20)
        # The join state is not required after a restart: nodes.conf has it.
        assert len(cluster_nodes(c[0])) == 3
    finally:
        for s in [first] + others:
            s.cleanup()


def test_cluster_join_on_command_line_with_a_name():
    first = start_servers(1)[0]
    second = Server(config="cluster-node-timeout 1000\n",
                    args=["--cluster-join", f"localhost:{first.port}"])
    try:
        second.start()
        c = Cluster([first, second])
        c.wait_mesh(timeout=20)
    finally:
        first.cleanup()
        second.cleanup()


def test_meet_errors(make_cluster):
    c = make_cluster(1, meet=False)
    with pytest.raises(redis.ResponseError, match="Invalid TCP port"):
        c[0].execute_command("CLUSTER", "MEET", "127.0.0.1", "abc")
    with pytest.raises(redis.ResponseError, match="Invalid node address"):
        c[0].execute_command("CLUSTER", "MEET", "not-an-ip", "7711")
    with pytest.raises(redis.ResponseError, match="Invalid node address"):
        c[0].execute_command("CLUSTER", "MEET", "127.0.0.1", "70000")
    # MEET of a port where nobody listens: the handshake expires.
    c[0].execute_command("CLUSTER", "MEET", "127.0.0.1", "11")
    assert any("handshake" in v["flags"] for v in cluster_nodes(c[0]).values())
    wait_for(lambda: len(cluster_nodes(c[0])) == 1, 5, message="handshake expiry")
    assert c[0].execute_command("PING") is True


def test_nodes_conf_that_cannot_be_written(make_cluster):
    """CLUSTER commands that must save nodes.conf answer an error when it
    cannot be written; the node keeps working and saves once it can."""
    c = make_cluster(2)
    blocker = os.path.join(c.servers[0].dir, "nodes.conf.tmp")

    def block():  # the atomic save writes this file first
        try:
            os.mkdir(blocker)
            return True
        except FileExistsError:  # the node is saving right now: its .tmp is there
            return False
    wait_for(block, 5, interval=0.01, message="nodes.conf.tmp blocked")
    try:
        with pytest.raises(redis.ResponseError, match="error saving the cluster node config"):
            c[0].execute_command("CLUSTER", "SAVECONFIG")
        with pytest.raises(redis.ResponseError, match="error saving the cluster node config"):
            c[0].execute_command("CLUSTER", "LEAVING", "yes")
        assert c[0].execute_command("CLUSTER", "LEAVING") == b"yes", "in effect anyway"
        assert c[0].execute_command("PING") is True
    finally:
        os.rmdir(blocker)
    # The cron saves the pending change once it can.
    path = os.path.join(c.servers[0].dir, "nodes.conf")
    wait_for(lambda: "myself,leaving" in open(path).read(), 5, message="saved later")
    c[0].execute_command("CLUSTER", "SAVECONFIG")


def test_unwritable_nodes_conf_at_start_is_a_clean_error(tmp_path):
    server = Server(directory=str(tmp_path))
    os.mkdir(os.path.join(server.dir, "nodes.conf.tmp"))
    server.start(wait=False)
    try:
        assert server.proc.wait(15) != 0
        assert "Could not write the cluster config file" in server.log()
        assert b"Traceback" not in server.proc.stderr.read()
    finally:
        server.cleanup()
