"""Seeds and sizes of the long campaigns: a representative share in ``make
test`` (the suite must stay short on 2 cores), everything with ``make
campaigns`` (TRISQUE_CAMPAIGNS=1), which runs the same tests over every
seed (docs/testing.md lists what each runs)."""

import os

FULL = os.environ.get("TRISQUE_CAMPAIGNS") == "1"


def seeds(short, full):
    """``short`` in make test, ``full`` (which includes them) in a campaign."""
    return list(full) if FULL else list(short)
