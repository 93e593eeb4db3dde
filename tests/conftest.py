"""Shared test configuration: Hypothesis profiles.

`ci` (the default; selected by .ci/run too): derandomized, no deadline, a bounded
number of examples, so the suite is reproducible and stays within its time budget.
`dev`: more examples, random seeds, for local bug hunting:
    HYPOTHESIS_PROFILE=dev pytest -m slow
"""

import os

from hypothesis import HealthCheck, settings

from tests.support.project import load_all

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

# Hypothesis draws some values from a pool of constants it collects from the local
# modules loaded so far (not libraries, not tests; see Hypothesis's changelog). If the
# pool grew as tests imported more of the project, a derandomized test's examples
# depended on which tests ran before it in the process (one teeth test shrank for over
# an hour in the suite and took 2 s alone). Every module of the project is imported
# here, before any test, so the pool is complete and the same for every test: alone, in
# any worker, in any order. Nothing of Hypothesis is touched; tests/test_reproducible.py
# fails if a test could still see another pool.
load_all()
