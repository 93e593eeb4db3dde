"""The output rule as a function: is a changed `sync` output verified and no worse than
the recorded one (verify/cost.py)? Used by tests/algorithm/test_sync_outputs.py and by
bench/record_sync_outputs.py when it re-records."""

from __future__ import annotations

import attrs

from semantics.parser import parse
from semantics.printer import print_program
from verify.cost import cost_of
from verify.engines.select import check
from verify.proof.prove import PROVED, ProofOptions, prove
from verify.search.generators import param_bounds
from verify.verdicts import CheckOptions

HI = 3  # every parameter checked over its lower bound .. 3

# The all-values proof the manifest's `all_values` verdicts were given under: its default
# deterministic budget on two workers (the answer is the same for any load).
PROOF = ProofOptions(jobs=2)


def proof_property(result) -> str:
    """What a threshold output must be: bisimilar when fully exact, else sound."""
    exact = result.stats.strategy == "threshold" and not result.stats.conservative and not result.stats.fallback
    return "bisimulation" if exact else "soundness"


def all_values(result) -> str | None:
    """The all-values proof's status for a threshold output without barriers (`proved`,
    `unknown`, `refuted`), or None where the proof does not apply."""
    if result.stats.strategy != "threshold" or result.stats.barriers:
        return None
    return str(prove(result.program, attrs.evolve(PROOF, property=proof_property(result))).status)


def judge(golden: dict, golden_text: str | None, program, result) -> str | None:
    """Why `result` (a SyncResult for `program`) breaks the rule against the golden
    entry, or None when it keeps it. An unchanged output keeps it (every check of the
    rule is deterministic). A changed output is checked on every valuation within the
    bounds and, where the recorded output was proved for every parameter value
    (`all_values`), proved too."""
    text = print_program(result.program)
    if golden["status"] == "ok" and text == golden_text:
        return None
    conservative = result.stats.conservative or 0
    if golden["status"] == "ok":
        before = cost_of(parse(golden_text), golden["conservative"])
        after = cost_of(result.program, conservative)
        worse = after.worse_than(before)
        if worse:
            return f"changed and worse than the recorded output: {worse} ({before} -> {after})"
    prop = proof_property(result)
    verdict = check(result.program, param_bounds(program, HI), CheckOptions(property=prop))
    if verdict.holds is not True:
        return f"changed output is not {prop}-correct: {verdict.verdict.value}"
    if golden.get("all_values") == PROVED:
        status = all_values(result)
        if status != PROVED:
            return f"changed output is not proved for every parameter value ({status}), where the recorded one is"
    return None
