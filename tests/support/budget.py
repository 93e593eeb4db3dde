"""Hypothesis budgets relative to the active profile (tests/conftest.py), so that a test
that needs fewer (costly examples) or can afford more (cheap ones) examples than the
profile's default still scales with it: `HYPOTHESIS_PROFILE=dev` raises every budget."""

from __future__ import annotations

from hypothesis import settings


def scaled(factor: float, **extra) -> settings:
    """Settings with `factor` times the active profile's max_examples (at least 1)."""
    return settings(max_examples=max(1, round(settings.default.max_examples * factor)), **extra)
