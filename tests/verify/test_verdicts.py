"""The result vocabulary: one finalisation for every engine, JSON spellings fixed."""

from __future__ import annotations

import json

import pytest

from verify.verdicts import (
    EngineName, MutantStatus, ObligationKind, ProofStatus, Property, Verdict, finalise,
)


@pytest.mark.parametrize("prop", list(Property))
@pytest.mark.parametrize("worst", list(Verdict))
def test_an_incomplete_check_is_never_reported_as_success(worst, prop):
    verdict, holds = finalise(worst, complete=False, prop=prop)
    assert holds is not True
    if holds is None:
        assert verdict == Verdict.UNKNOWN


def test_a_failure_found_before_a_limit_is_still_a_failure():
    assert finalise(Verdict.UNSOUND, complete=False, prop=Property.BISIMULATION) == (Verdict.UNSOUND, False)
    assert finalise(Verdict.DEADLOCK, complete=False, prop=Property.SOUNDNESS) == (Verdict.DEADLOCK, False)


def test_soundness_allows_over_synchronization_but_bisimulation_does_not():
    assert finalise(Verdict.OVER_SYNCHRONIZED, True, Property.SOUNDNESS) == (Verdict.OVER_SYNCHRONIZED, True)
    assert finalise(Verdict.OVER_SYNCHRONIZED, True, Property.BISIMULATION) == (Verdict.OVER_SYNCHRONIZED, False)
    assert finalise(Verdict.BISIMILAR, True, Property.BISIMULATION) == (Verdict.BISIMILAR, True)


def test_vocabulary_keeps_its_json_spelling():
    # documented JSON values (docs/design.md section 6); a rename would break users
    data = {"verdict": Verdict.OVER_SYNCHRONIZED, "property": Property.SOUNDNESS, "engine": EngineName.Z3,
            "status": ProofStatus.PROVED, "kind": ObligationKind.EXACT, "outcome": MutantStatus.EQUIVALENT}
    assert json.loads(json.dumps(data)) == {
        "verdict": "over-synchronized", "property": "soundness", "engine": "z3",
        "status": "proved", "kind": "exact", "outcome": "equivalent"}
