"""Shared test configuration: Hypothesis profiles.

`ci` (the default; selected by .ci/run too): derandomized, no deadline, a bounded
number of examples, so the suite is reproducible and stays within its time budget.
`dev`: more examples, random seeds, for local bug hunting:
    HYPOTHESIS_PROFILE=dev pytest -m slow
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=60,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=1000,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
