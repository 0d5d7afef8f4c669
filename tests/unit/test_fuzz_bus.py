"""Fuzzing the cluster-bus frame decoder (protocol/bus.py): random bytes,
and valid frames of every type mutated, truncated or extended, either decode
or raise BusError (its documented error: the link is dropped); frame_length
never reads past its header nor accepts a length over MAX_FRAME.  The same
for authenticated links (cluster-secret): hellos and sealed envelopes of
valid frames open; mutated, truncated or extended ones, and random bytes,
give frames only if untouched, else AuthError or BusError."""

import os

from hypothesis import given, strategies as st

from tests.fuzz_settings import FUZZ
from trisque.protocol import bus, jobcodec, jobid
from trisque.cluster.tcp.link_auth import LinkAuth

HEX = "0123456789abcdef"
node_ids = st.text(HEX, min_size=40, max_size=40)
job_ids = st.builds(lambda node, rand, ttl: ("D-%s-%s-%04x" % (node[:8], rand, ttl)).encode(),
                    node_ids, st.text("ABCxyz019+/", min_size=24, max_size=24),
                    st.integers(0, 0xFFFF))


@st.composite
def headers(draw):
    return bus.Header(draw(node_ids), draw(st.integers(0, 65535)),
                      draw(st.integers(0, 65535)), draw(st.integers(0, 15)))


@st.composite
def frames(draw):
    header = draw(headers())
    kind = draw(st.sampled_from(["gossip", "fail", "jobs", "jobids", "queue", "publish"]))
    if kind == "gossip":
        entries = draw(st.lists(st.tuples(
            node_ids, st.integers(0, 15), st.sampled_from(["127.0.0.1", "::1", ""]),
            st.integers(0, 65535), st.integers(0, 65535), st.integers(0, 10**6)),
            max_size=4))
        return bus.gossip(header, draw(st.sampled_from(bus.GOSSIP_TYPES)), entries)
    if kind == "fail":
        return bus.fail(header, draw(node_ids))
    if kind == "jobs":
        records = draw(st.lists(st.builds(
            lambda jid, body, nodes: jobcodec.encode(
                jid, 1, 0, 2, 1, 10**12, 0, 60, 0, 0, b"q", body, nodes),
            job_ids, st.binary(max_size=30), st.lists(node_ids, max_size=3)), max_size=3))
        return bus.jobs(header, draw(st.sampled_from(bus.JOBS_TYPES)), records)
    if kind == "jobids":
        items = draw(st.lists(st.tuples(job_ids, st.integers(0, 2**32 - 1)), max_size=4))
        return bus.jobids(header, draw(st.sampled_from(bus.JOBID_TYPES)), items)
    if kind == "publish":
        return bus.publish(header, draw(st.binary(max_size=20)), draw(st.binary(max_size=40)),
                           draw(st.booleans()))
    return bus.queue_op(header, draw(st.sampled_from(bus.QUEUE_TYPES)),
                        draw(st.binary(max_size=20)), draw(st.integers(0, 2**32 - 1)))


def decode_or_bus_error(data):
    try:
        length = bus.frame_length(data)
    except bus.BusError:
        length = None
    if length is not None:
        assert bus.HEADER.size <= length <= bus.MAX_FRAME
    try:
        return bus.decode(data)
    except bus.BusError:
        return None


@FUZZ
@given(frames())
def test_valid_frames_decode(frame):
    assert bus.frame_length(frame) == len(frame)
    message = bus.decode(frame)
    assert message.type < len(bus.NAMES)
    if message.type in bus.JOBS_TYPES:
        assert all(jobid.is_valid(fields[0]) for fields in message.body)


@FUZZ
@given(headers(), st.binary(max_size=40), st.binary(max_size=40), st.booleans())
def test_publish_frames_round_trip(header, channel, message, shard):
    decoded = bus.decode(bus.publish(header, channel, message, shard))
    assert (decoded.type, decoded.body) == (bus.PUBLISH, (channel, message))
    assert bool(decoded.mflags & bus.SHARD) == shard


@FUZZ
@given(headers(), st.integers(len(bus.NAMES), 65535), st.binary(max_size=40))
def test_unknown_types_decode_to_an_ignored_message(header, type_, payload):
    """A newer node's message type is not an error (the link stays up):
    it decodes with no body, and the cluster ignores it."""
    frame = bus._frame(header, type_, payload)
    message = bus.decode(frame)
    assert (message.type, message.body) == (type_, None)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(data):
    decode_or_bus_error(data)
    decode_or_bus_error(bus.MAGIC + bytes([bus.VERSION]) + data)


@FUZZ
@given(frames(), st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)),
                          min_size=1, max_size=8),
       st.integers(min_value=0), st.binary(max_size=8))
def test_mutated_frames(frame, flips, cut, extra):
    data = bytearray(frame)
    for where, value in flips:
        data[where % len(data)] = value
    decode_or_bus_error(bytes(data))
    decode_or_bus_error(bytes(data[:cut % (len(data) + 1)]))
    decode_or_bus_error(bytes(data) + extra)
    # a frame whose header length agrees with a mutated body
    fixed = bytearray(frame[:cut % (len(frame) + 1)] + extra)
    if len(fixed) >= bus.HEADER.size:
        fixed[4:8] = len(fixed).to_bytes(4, "little")
        decode_or_bus_error(bytes(fixed))


# ------------------------------------------------ authenticated links

SECRET = b"fuzz secret"


class _Link:
    closed = False


def _read_all(data, max_frame=bus.MAX_FRAME):
    """A fresh link end (its nonce fixed) reading ``data`` as it arrives
    from a peer: the frames it takes, or the error that closes the link."""
    receiver = LinkAuth(SECRET, b"n" * bus.NONCE_LEN)
    frames = []
    try:
        used = receiver.read(_Link(), data, max_frame, lambda f, link: frames.append(f))
    except bus.BusError:
        return None, frames
    assert 0 <= used <= len(data)
    for frame in frames:
        bus.decode(frame)  # whatever passed the tag is a frame of our own
    return used, frames


def _sealed_stream(frames, seq=0):
    """What a peer with the secret sends to the receiver of _read_all."""
    mac = bus.link_mac(SECRET, b"n" * bus.NONCE_LEN)
    data, _ = bus.seal_frames(mac, seq, frames)
    return bus.hello(os.urandom(bus.NONCE_LEN)) + data


@FUZZ
@given(st.lists(frames(), min_size=1, max_size=4))
def test_sealed_frames_open(frame_list):
    stream = _sealed_stream(frame_list)
    used, got = _read_all(stream)
    assert used == len(stream) and got == frame_list


@FUZZ
@given(st.lists(frames(), min_size=1, max_size=3),
       st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)),
                min_size=1, max_size=8),
       st.integers(min_value=0), st.binary(max_size=8), st.integers(0, 3))
def test_mutated_sealed_frames(frame_list, flips, cut, extra, seq):
    stream = _sealed_stream(frame_list, seq)
    data = bytearray(stream)
    for where, value in flips:
        data[where % len(data)] = value
    # A changed hello nonce only changes how the receiver would answer; a
    # changed envelope, or one out of its turn (seq > 0), never opens.
    refused = bytes(data[bus.HELLO.size:]) != stream[bus.HELLO.size:] or seq > 0
    for candidate in (bytes(data), bytes(data[:cut % (len(data) + 1)]),
                      bytes(data) + extra):
        used, got = _read_all(candidate)
        if refused:
            assert got == []
        else:
            assert got == frame_list[:len(got)]
    # frames over a smaller bound are refused, never misread
    assert _read_all(stream, max_frame=bus.HEADER.size) == (None, [])


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_on_an_authenticated_link(data):
    _read_all(data)
    used, got = _read_all(bus.hello(b"x" * bus.NONCE_LEN) + data)
    assert got == []
    try:
        bus.sealed_length(data)
    except bus.BusError:
        pass
