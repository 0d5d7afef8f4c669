"""Bus robustness: whatever arrives on the bus port, a bad frame drops only
that link, and the node and its cluster keep working."""

import os
import signal
import socket
import struct
import time

import pytest

from tests.harness import wait_for
from trisque.protocol import bus, jobcodec

from .conftest import addjob, cluster_nodes, reachable


def _bus_conn(c, i):
    sock = socket.create_connection(("127.0.0.1", c.servers[i].port + 10000), timeout=5)
    return sock


def _closed_by_peer(sock, timeout=5):
    """True once the node closed the connection (reads return EOF)."""
    sock.settimeout(timeout)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def _healthy(c):
    assert all(c[i].execute_command("PING") is True for i in range(len(c)))
    assert all(reachable(c[i]) == len(c) - 1 for i in range(len(c)))
    job_id = addjob(c[0], "q", "body", "REPLICATE", len(c))
    assert len(c.job_holders(job_id)) == len(c)
    assert c[0].execute_command("FASTACK", job_id) == 1


def _header(sender_id, port=1, bus_port=10001):
    return bus.Header(sender_id, port, bus_port)


BAD_INPUTS = {
    "http": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    "resp": b"*1\r\n$4\r\nPING\r\n",
    "zeros": b"\0" * 4096,
    "bad-version": bus.MAGIC + bytes([99]) + struct.pack("<I", 200) + b"x" * 192,
    "short-length": bus.MAGIC + bytes([bus.VERSION]) + struct.pack("<I", 10) + b"x" * 100,
    "huge-length": bus.MAGIC + bytes([bus.VERSION]) + struct.pack("<I", 0xFFFFFFFF) + b"x" * 100,
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_garbage_drops_the_link_only(cluster3, name):
    c = cluster3
    sock = _bus_conn(c, 0)
    sock.sendall(BAD_INPUTS[name])
    assert _closed_by_peer(sock), "the node dropped the bad link"
    sock.close()
    _healthy(c)


def test_bad_frames_from_a_known_sender_id(cluster3):
    """Frames claiming to come from a real peer but malformed: dropped with
    their link; the real peer's own links are not affected."""
    c = cluster3
    peer_id = c.ids()[1]
    header = _header(peer_id, c.servers[1].port, c.servers[1].port + 10000)
    good_ping = bus.gossip(header, bus.PING, [])
    frames = {
        "jobids-count-lies": bus.jobids(header, bus.DELJOB, [(b"D" * 40, 0)])[:-44]
        + struct.pack("<I", 1000) + b"x" * 44,
        "repljob-truncated": bus.jobs(header, bus.REPLJOB, [b"\1\2\3"]),
        "gossip-count-lies": bus.gossip(header, bus.PING, [])[:-2] + struct.pack("<H", 500),
        "non-ascii-sender": bytearray(good_ping),
        "bad-job-state": bus.jobs(header, bus.REPLJOB, [jobcodec.encode(
            b"D-0123abcd-0123456789abcdefghijklmn-05a1", 9, 0, 1, 1, 1000, 0, 1, 0, 0,
            b"q", b"b", ())]),
        # A job ID that would break replies listing it (JSCAN status lines).
        "bad-job-id": bus.jobs(header, bus.REPLJOB, [jobcodec.encode(
            b"D-\xff\xff\xff\xff\xff\xff\xff\xff-0123456789abcdef\r\nijklmn-05a1", 1, 0, 1,
            1, 60000, 0, 1, 0, 0, b"q", b"b", ())]),
    }
    frames["non-ascii-sender"][12:14] = b"\xff\xfe"
    for name, frame in frames.items():
        # Fix the length field where the edit changed the size.
        frame = bytearray(frame)
        frame[4:8] = struct.pack("<I", len(frame))
        sock = _bus_conn(c, 0)
        # A good frame first: the link works until the bad one.
        sock.sendall(good_ping)
        sock.settimeout(5)
        assert sock.recv(3) == bus.MAGIC, "PONG to the good PING"
        sock.sendall(bytes(frame))
        assert _closed_by_peer(sock), name
        sock.close()
    assert c[0].info()["registered_jobs"] == 0
    assert c[0].execute_command("JSCAN") == [b"0", []]
    _healthy(c)


def test_unknown_message_type_is_ignored_and_the_link_kept(cluster3):
    """A message type this node does not know (a newer node's) is ignored:
    the link stays up and answers the next PING (before PUBLISH frames,
    nodes dropped the link; docs/pubsub.md, "Mixed versions")."""
    c = cluster3
    peer_id = c.ids()[1]
    header = _header(peer_id, c.servers[1].port, c.servers[1].port + 10000)
    good_ping = bus.gossip(header, bus.PING, [])
    unknown = bytearray(bus.jobids(header, bus.GOTJOB, [(b"D" * 40, 0)]))
    unknown[8:10] = struct.pack("<H", 999)
    sock = _bus_conn(c, 0)
    sock.settimeout(5)
    sock.sendall(good_ping)
    assert sock.recv(3) == bus.MAGIC, "PONG to the first PING"
    sock.sendall(bytes(unknown) + good_ping)
    got = b""
    while bus.MAGIC not in got:  # the second PONG: the link is still up
        data = sock.recv(65536)
        assert data, "the node dropped the link on an unknown message type"
        got += data
    sock.close()
    _healthy(c)


def test_gossip_with_bad_node_ids_or_addresses_is_refused(cluster3):
    """A gossip entry that would corrupt nodes.conf (an ID with a newline,
    an address with spaces) must not get into the node table."""
    c = cluster3
    ids = c.ids()
    header = _header(ids[1], c.servers[1].port, c.servers[1].port + 10000)
    bad_entries = [
        ("x" * 39 + "\n", 0, "127.0.0.1", 7000, 17000, 0),
        ("a" * 40, 0, "127.0.0.1 myself", 7000, 17000, 0),
        ("b" * 40, 0, "127.0.0.1\nzzz", 7000, 17000, 0),
        ("not hex but forty chars long, exactly!!", 0, "127.0.0.1", 7000, 17000, 0),
    ]
    for entry in bad_entries:
        sock = _bus_conn(c, 0)
        sock.sendall(bus.gossip(header, bus.PING, [entry]))
        _closed_by_peer(sock, timeout=1)
        sock.close()
    known = set(cluster_nodes(c[0]))
    assert known == set(ids), known
    # nodes.conf is still loadable: restart node 0 and it is itself.
    c[0].execute_command("CLUSTER", "SAVECONFIG")
    c.restart(0)
    assert c.ids() == ids
    c.wait_mesh()
    _healthy(c)


def test_job_messages_from_strangers_are_ignored(cluster3):
    c = cluster3
    stranger = os.urandom(20).hex()
    header = _header(stranger)
    record = jobcodec.encode(b"D-0123abcd-0123456789abcdefghijklmn-05a1", 1, 0, 1,
                             1, 60000, 0, 1, 0, 0, b"q", b"b", (stranger,))
    sock = _bus_conn(c, 0)
    sock.sendall(bus.jobs(header, bus.REPLJOB, [record])
                 + bus.jobids(header, bus.DELJOB, [(b"D" * 40, 0)])
                 + bus.queue_op(header, bus.PAUSE, b"q", 3)
                 + bus.fail(header, c.ids()[1]))
    # A PING from the stranger is answered, but it is not added (no MEET).
    sock.sendall(bus.gossip(header, bus.PING, []))
    sock.settimeout(5)
    assert sock.recv(3) == bus.MAGIC
    sock.close()
    time.sleep(0.2)
    assert c[0].info()["registered_jobs"] == 0
    assert c[0].execute_command("PAUSE", "q", "state") == b"none"
    assert stranger not in cluster_nodes(c[0])
    assert all("fail" not in v["flags"] for v in cluster_nodes(c[0]).values())
    _healthy(c)


def test_half_frame_then_close_and_many_connections(cluster3):
    c = cluster3
    frame = bus.gossip(_header(c.ids()[1]), bus.PING, [])
    socks = []
    for _ in range(50):
        sock = _bus_conn(c, 0)
        sock.sendall(frame[:len(frame) // 2])
        socks.append(sock)
    for sock in socks:
        sock.close()
    _healthy(c)


def _links_to(pid, port):
    """Established TCP connections of process ``pid`` to 127.0.0.1:port."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            parts = line.split()
            remote, state, inode = parts[2], parts[3], parts[9]
            if state == "01" and inode in inodes and int(remote.split(":")[1], 16) == port:
                count += 1
    return count


def test_stopped_peer_does_not_pile_up_stuck_links(make_cluster):
    """A peer that stops reading (SIGSTOP) while megabytes are on their way
    to it: the node drops the link after node-timeout and must not keep the
    old one (its writer blocked in a send) while it opens new ones."""
    c = make_cluster(3)
    stopped = c.servers[2]
    pid0 = c.servers[0].proc.pid
    bus2 = stopped.port + 10000
    ids = c.ids()
    os.kill(stopped.proc.pid, signal.SIGSTOP)
    try:
        pipe = c[0].pipeline(transaction=False)
        for _ in range(20):
            pipe.execute_command("ADDJOB", "q", b"x" * 1000000, 0, "REPLICATE", 3, "ASYNC")
        pipe.execute(raise_on_error=False)  # some -NOREPL once node 2 is PFAIL
        wait_for(lambda: "fail?" in cluster_nodes(c[0])[ids[2]]["flags"]
                 or "fail" in cluster_nodes(c[0])[ids[2]]["flags"], 10,
                 message="stopped node suspected")
        most = 0
        deadline = time.monotonic() + 3  # several link drops and reconnects
        while time.monotonic() < deadline:
            most = max(most, _links_to(pid0, bus2))
            time.sleep(0.1)
        assert most <= 1, f"{most} links to the stopped node at once"
    finally:
        os.kill(stopped.proc.pid, signal.SIGCONT)
    c.wait_mesh(timeout=15)
    wait_for(lambda: all(cluster_nodes(c[i])[ids[2]]["flags"] == {"noflags"}
                         for i in (0, 1)), 10, message="flags cleared after SIGCONT")
    _healthy(c)
