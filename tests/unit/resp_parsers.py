"""The RESP parser tests read each case both ways: hiredis after the
large-count check (the interpreted default) and the parser's own walk of
plain requests first (the compiled default, resp.PLAIN_WALK)."""

import pytest

from trisque.protocol.resp import RequestParser

_WALK = [False]


@pytest.fixture(autouse=True, params=[False, True], ids=["hiredis", "plain-walk"])
def both_ways(request):
    _WALK[0] = request.param


def new_parser(max_bulk_len=512 * 1024 * 1024):
    return RequestParser(max_bulk_len, plain_walk=_WALK[0])
