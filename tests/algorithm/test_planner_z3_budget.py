"""The general stage's Z3 work on a question Z3 cannot decide is bounded: each query gets
its one resource budget (`PlannerOptions.candidate_rlimit`, after short seeded tries), and
an exhausted budget is the answer (the wait stays conservative, reported), never a larger
budget after it."""

from __future__ import annotations

from pathlib import Path

from algorithm.registry import sync_threshold
from algorithm.threshold.facts import Session
from algorithm.threshold.options import PlannerOptions
from syncproof import load

ROOT = Path(__file__).resolve().parents[2]
BUDGET = 1_000_000  # (small: the question is undecided at any budget)


def test_a_candidate_query_z3_leaves_unknown_gets_no_budget_past_its_own(monkeypatch):
    """Regression: such a query was asked again with ten times the budget, twice over
    (check_alone's fresh-context retry): minutes of CPU for this two-op kernel, whose wait
    of r on A is conservative either way."""
    asked = []
    check_alone, check_seeded = Session.check_alone, Session.check_seeded

    def alone(self, assertions, rlimit):
        asked.append(rlimit)
        return check_alone(self, assertions, rlimit)

    def seeded(self, assertions, rlimit, seed):
        asked.append(rlimit)
        return check_seeded(self, assertions, rlimit, seed)

    monkeypatch.setattr(Session, "check_alone", alone)
    monkeypatch.setattr(Session, "check_seeded", seeded)
    program = load(str(ROOT / "tests/data/nest/range_on_flattened_inner.sync"))
    result = sync_threshold(program, options=PlannerOptions(candidate_rlimit=BUDGET))
    assert BUDGET in asked and max(asked) <= max(BUDGET, PlannerOptions().facts_rlimit)  # (the tidy's claims)
    assert result.stats.conservative == 1  # r on A: reported, not exact
    assert any("escapes the case analysis" in note for note in result.stats.notes)
