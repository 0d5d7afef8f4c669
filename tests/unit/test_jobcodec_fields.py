"""A job record's fixed fields decode to what was encoded over each
field's whole range (protocol/jobcodec.py reads them byte by byte: a
shift or sign wrong at a byte boundary shows here), and agree with the
layout's struct read of the same bytes."""

import struct

from hypothesis import given, strategies as st

from tests.fuzz_settings import FUZZ
from trisque.protocol import jobcodec

_IN_PLACE = jobcodec.IN_PLACE

HEX = "0123456789abcdef"
U32 = st.integers(0, 2**32 - 1)
job_ids = st.builds(lambda rand: b"D-0123abcd-" + rand + b"-0a0b",
                    st.binary(min_size=24, max_size=24))
fields = st.tuples(
    job_ids, st.integers(0, 3), st.sampled_from([0, 1, 2, 4, 8, 16, 32, 128, 255 & ~64]),
    st.integers(0, 2**16 - 1),
    st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 2**62 - 1, 2**62, 2**63, 2**64 - 1])),
    st.one_of(st.integers(-2**63, 2**63 - 1), st.sampled_from([-2**63, -1, 0, 2**63 - 1])),
    U32, U32, U32, U32,
    st.binary(max_size=12), st.binary(max_size=40),
    st.lists(st.text(HEX, min_size=40, max_size=40), max_size=4),
    st.sampled_from([b"", b"\x01policy"]))


@FUZZ
@given(fields, st.binary(max_size=7))
def test_fixed_fields_read_back_over_their_whole_range(values, before):
    (job_id, state, flags, repl, ctime, etime_ms, delay_s, retry_s, nacks, deliveries,
     queue, body, nodes, policy) = values
    record = jobcodec.encode(job_id, state, flags, repl, ctime, etime_ms, delay_s, retry_s,
                             nacks, deliveries, queue, body, nodes, policy)
    # Both ways interpreted (compiled, IN_PLACE is a constant: read in place)
    for in_place in (True, False):
        jobcodec.IN_PLACE = in_place
        try:
            decoded, end = jobcodec.decode(before + record + b"tail", len(before))
        finally:
            jobcodec.IN_PLACE = _IN_PLACE
        assert end == len(before) + len(record)
        assert decoded == (job_id, state, flags, repl, ctime, etime_ms, delay_s, retry_s, nacks,
                           deliveries, queue, body, tuple(nodes), policy)
        unpacked = struct.unpack_from("<40sBBHQqIIIIIIH", record)
        assert decoded[:10] == (unpacked[:2] + (unpacked[2] & ~jobcodec.HAS_POLICY,)
                                + unpacked[3:10])
