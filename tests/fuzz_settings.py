"""Hypothesis settings shared by the fuzz tests: modest in ``make test``
(60 examples), the former 150 in ``make campaigns`` (tests/campaigns.py);
TRISQUE_FUZZ_EXAMPLES=20000 (and TRISQUE_FUZZ_CAMPAIGN_S=600 for the live
node campaign) for a long run."""

import os

from hypothesis import HealthCheck, settings

from tests.campaigns import FULL

EXAMPLES = int(os.environ.get("TRISQUE_FUZZ_EXAMPLES", "150" if FULL else "60"))
CAMPAIGN_S = float(os.environ.get("TRISQUE_FUZZ_CAMPAIGN_S", "4"))

FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
