"""Authenticated bus links (protocol/bus.py's hello, seal, unseal; the
link state of cluster/tcp/link_auth.py; cluster/bus_guard.py's counts
and log pacing), without sockets."""

import os

import pytest

from trisque.cluster import bus_guard
from trisque.protocol import bus
from trisque.cluster.tcp.link_auth import LinkAuth

SECRET = b"s3cret"
HEADER = bus.Header("ab" * 20, 7711, 17711)


def _frames():
    return [bus.gossip(HEADER, bus.PING, []), bus.fail(HEADER, "cd" * 20)]


def _mac(nonce, secret=SECRET):
    return bus.link_mac(secret, nonce)


def test_a_sealed_envelope_opens_with_the_receivers_nonce():
    nonce = os.urandom(bus.NONCE_LEN)
    frames = _frames()
    data, next_seq = bus.seal_frames(_mac(nonce), 0, frames)
    assert next_seq == 1
    assert bus.sealed_length(data) == len(data) == sum(map(len, frames)) + bus.SEAL_OVERHEAD
    assert bus.unseal(_mac(nonce), data, 0) == frames
    assert [bus.decode(f).type for f in bus.unseal(_mac(nonce), data, 0)] == [bus.PING, bus.FAIL]


@pytest.mark.parametrize("what", ["other nonce", "other secret", "tag", "body", "seq"])
def test_anything_changed_fails_the_tag(what):
    nonce = os.urandom(bus.NONCE_LEN)
    data = bytearray(bus.seal(_mac(nonce), 5, b"".join(_frames())))
    mac = _mac(nonce)
    if what == "other nonce":
        mac = _mac(os.urandom(bus.NONCE_LEN))
    elif what == "other secret":
        mac = _mac(nonce, b"another")
    elif what == "tag":
        data[-1] ^= 1
    elif what == "body":
        data[bus.SEAL_PREFIX.size + 10] ^= 1
    else:
        data[8] = 6  # the sequence number is covered by the tag too
    with pytest.raises(bus.AuthError, match="bad tag"):
        bus.unseal(mac, bytes(data), 5)


def test_an_envelope_out_of_its_turn_is_refused():
    nonce = os.urandom(bus.NONCE_LEN)
    data = bus.seal(_mac(nonce), 3, b"".join(_frames()))
    assert len(bus.unseal(_mac(nonce), data, 3)) == 2
    for expected in (2, 4):
        with pytest.raises(bus.AuthError, match="replayed or reordered"):
            bus.unseal(_mac(nonce), data, expected)


def test_big_batches_are_split_into_envelopes_in_order():
    nonce = os.urandom(bus.NONCE_LEN)
    big = bus.queue_op(HEADER, bus.NEEDJOBS, b"q" * (bus.SEAL_BODY_MAX // 3), 1)
    frames = [big] * 7 + [bus.gossip(HEADER, bus.PING, [])]
    data, next_seq = bus.seal_frames(_mac(nonce), 10, frames)
    assert next_seq > 11  # several envelopes
    got, pos, seq = [], 0, 10
    while pos < len(data):
        length = bus.sealed_length(data, pos)
        assert length - bus.SEAL_OVERHEAD <= bus.SEAL_BODY_MAX
        got += bus.unseal(_mac(nonce), data[pos:pos + length], seq)
        pos += length
        seq += 1
    assert seq == next_seq and got == frames


def test_hello_and_what_is_not_one():
    nonce = os.urandom(bus.NONCE_LEN)
    hello = bus.hello(nonce)
    assert len(hello) == bus.HELLO.size
    assert bus.read_hello(hello) == nonce
    assert bus.read_hello(hello[:10]) is None
    with pytest.raises(bus.AuthError, match="unauthenticated"):
        bus.read_hello(_frames()[0])
    with pytest.raises(bus.AuthError, match="no hello"):
        bus.read_hello(b"GET / HTTP/1.1\r\n")
    # ...and a node without a secret names the reason for a hello it gets.
    with pytest.raises(bus.BusError, match="no cluster-secret"):
        bus.frame_length(hello)


def test_sealed_length_bounds():
    nonce = os.urandom(bus.NONCE_LEN)
    frame = bus.queue_op(HEADER, bus.NEEDJOBS, b"q" * 1000, 1)
    data = bus.seal(_mac(nonce), 0, frame)
    assert bus.sealed_length(data[:7]) is None
    assert bus.sealed_length(data, 0, max_frame=len(frame)) == len(data)
    with pytest.raises(bus.FrameTooBig):
        bus.sealed_length(data, 0, max_frame=len(frame) - 1)
    with pytest.raises(bus.AuthError, match="unauthenticated"):
        bus.sealed_length(frame)
    with pytest.raises(bus.AuthError, match="second hello"):
        bus.sealed_length(bus.hello(nonce))
    # frames inside must add up to the envelope, each within the bound
    with pytest.raises(bus.FrameTooBig):
        bus.unseal(_mac(nonce), data, 0, max_frame=len(frame) - 1)
    short = bus.seal(_mac(nonce), 0, frame[:-1])
    with pytest.raises(bus.BusError, match="do not add up"):
        bus.unseal(_mac(nonce), short, 0)


def test_frame_length_takes_its_bound():
    frame = bus.queue_op(HEADER, bus.NEEDJOBS, b"q" * 100, 1)
    assert bus.frame_length(frame, 0, len(frame)) == len(frame)
    with pytest.raises(bus.FrameTooBig, match="over cluster-bus-max-frame"):
        bus.frame_length(frame, 0, len(frame) - 1)


class _Link:
    closed = False


def test_two_link_ends_talk_and_a_replay_fails():
    a = LinkAuth(SECRET, os.urandom(bus.NONCE_LEN))
    b = LinkAuth(SECRET, os.urandom(bus.NONCE_LEN))
    got = []

    def receive(frame, link):
        got.append(frame)
    assert not a.ready()
    # b's hello and a's first envelope arrive in one read
    assert b.read(_Link(), a.hello(), bus.MAX_FRAME, receive) == bus.HELLO.size
    assert a.read(_Link(), b.hello(), bus.MAX_FRAME, receive) == bus.HELLO.size
    assert a.ready() and b.ready()
    first = a.seal(_frames())
    second = a.seal(_frames())
    assert b.read(_Link(), first + second[:20], bus.MAX_FRAME, receive) == len(first)
    assert len(got) == 2
    assert b.read(_Link(), second, bus.MAX_FRAME, receive) == len(second)
    assert len(got) == 4
    with pytest.raises(bus.AuthError, match="replayed or reordered"):
        b.read(_Link(), first, bus.MAX_FRAME, receive)
    # a's envelopes are keyed to b's nonce: sent back to a, they fail.
    with pytest.raises(bus.AuthError, match="bad tag"):
        a.read(_Link(), first, bus.MAX_FRAME, receive)


def test_own_hello_sent_back_is_refused():
    a = LinkAuth(SECRET, os.urandom(bus.NONCE_LEN))
    with pytest.raises(bus.AuthError, match="own hello"):
        a.read(_Link(), a.hello(), bus.MAX_FRAME, lambda f, link: None)


def test_guard_counts_everything_and_paces_its_lines():
    guard = bus_guard.BusGuard()
    lines = [guard.refused(bus_guard.AUTH, 1000) for _ in range(bus_guard.LOG_LINES + 5)]
    assert lines[:bus_guard.LOG_LINES] == [""] * bus_guard.LOG_LINES
    assert lines[bus_guard.LOG_LINES:] == [None] * 5
    # another kind has its own allowance
    assert guard.refused(bus_guard.TOO_BIG, 1000) == ""
    # the next period's first line says how many were not logged
    assert guard.refused(bus_guard.AUTH, 1000 + bus_guard.LOG_PERIOD_MS) == \
        " (5 more not logged before this)"
    assert dict(guard.info_fields()) == {
        "cluster_stats_bus_auth_failures": bus_guard.LOG_LINES + 6,
        "cluster_stats_bus_frames_too_big": 1,
        "cluster_stats_bus_slow_peer_disconnections": 0,
    }


def test_secret_key():
    assert bus_guard.secret_key("") is None
    assert bus_guard.secret_key("pässword") == "pässword".encode()


def test_a_second_accepted_secret_opens_too():
    """cluster-secret-accept while rotating: tags by either secret pass."""
    nonce = os.urandom(bus.NONCE_LEN)
    by_old = bus.seal(_mac(nonce), 0, b"".join(_frames()))
    by_new = bus.seal(_mac(nonce, b"new"), 0, b"".join(_frames()))
    assert bus.unseal(_mac(nonce), by_new, 0, alt_mac=_mac(nonce, b"new")) == _frames()
    assert bus.unseal(_mac(nonce), by_old, 0, alt_mac=_mac(nonce, b"new")) == _frames()
    with pytest.raises(bus.AuthError, match="bad tag"):
        bus.unseal(_mac(nonce), bus.seal(_mac(nonce, b"third"), 0, b"".join(_frames())), 0,
                   alt_mac=_mac(nonce, b"new"))
    receiver = LinkAuth(SECRET, nonce, b"new")
    receiver.read(_Link(), bus.hello(os.urandom(bus.NONCE_LEN)) + by_new, bus.MAX_FRAME,
                  lambda f, link: None)
    assert receiver.seq_in == 1
