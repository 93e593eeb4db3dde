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


def _import_every_module() -> None:
    # Hypothesis draws some values from constants found in the local modules loaded so
    # far (hypothesis.internal.conjecture.providers): without this, a derandomized test
    # generates different examples depending on which tests ran before it in the same
    # process (a teeth test shrank for over an hour in the suite and took 2 s alone).
    # Loading every module of the project up front makes the examples the same in any
    # order, any worker and alone.
    import importlib
    import pkgutil

    for name in ("semantics", "algorithm", "verify", "lean_export"):
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{name}."):
            if not info.name.endswith("__main__"):  # running it is what importing it does
                importlib.import_module(info.name)


_import_every_module()
