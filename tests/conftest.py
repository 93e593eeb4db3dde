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



def _without_local_constants() -> None:
    # Hypothesis draws some values from constants it finds in the local modules loaded so
    # far (hypothesis.internal.conjecture.providers), within a parse-time limit: so a
    # derandomized test's examples depended on which tests ran before it in the process
    # and on the machine's load. One teeth test shrank for over an hour in the suite and
    # took 2 s alone. Without that pool the examples are the same in any order, in any
    # worker, on any load. Internal to Hypothesis: if it moves, this does nothing (the
    # suite still runs, only less reproducibly), and tests/test_reproducible.py says so.
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:
        return
    if hasattr(providers, "_get_local_constants") and hasattr(providers, "Constants"):
        empty = providers.Constants()
        providers._get_local_constants = lambda *args, **kwargs: empty


_without_local_constants()
