"""A REPLJOB frame's job IDs are checked all at once (over them joined):
one bad ID anywhere among many good ones refuses the frame, as
the per-ID check did."""

import pytest

from trisque.protocol import bus, jobcodec

GOOD = b"D-3c1b6e0a-Qm0k3G9kV6r5vJx3nq+0yT2w-05a1"


def _frame(ids):
    header = bus.Header("f" * 40, 7711, 17711)
    records = [jobcodec.encode(job_id, 1, 0, 3, 1, 1000, 0, 30, 0, 0, b"q", b"body", ())
               for job_id in ids]
    return bus.jobs(header, bus.REPLJOB, records)


def _allowed(job_id):
    return (job_id[:2] == b"D-" and job_id[10] == 45 and job_id[35] == 45
            and not job_id.translate(None, bus._JOB_ID_CHARS))


def test_good_ids_pass():
    ids = [GOOD[:2] + b"%08x" % i + GOOD[10:] for i in range(100)]
    assert [r[0] for r in bus.decode(_frame(ids)).body] == ids


@pytest.mark.parametrize("where", [0, 1, 49, 99])
def test_one_bad_id_among_many_refuses_the_frame(where):
    for pos in (0, 1, 2, 9, 10, 11, 20, 34, 35, 36, 39):
        for byte in (0, 10, 13, 32, 45, 46, 61, 68, 95, 127, 200, 255):
            job_id = bytearray(GOOD)
            job_id[pos] = byte
            job_id = bytes(job_id)
            ids = [GOOD] * 100
            ids[where] = job_id
            if _allowed(job_id):
                assert bus.decode(_frame(ids)).body[where][0] == job_id
            else:
                with pytest.raises(bus.BusError, match="bad job id"):
                    bus.decode(_frame(ids))
