"""The output rule as a function: is a changed `sync` output verified and no worse than
the recorded one (verify/cost.py)? Used by tests/algorithm/test_sync_outputs.py and by
bench/record_sync_outputs.py when it re-records."""

from __future__ import annotations

from semantics.parser import parse
from semantics.printer import print_program
from verify.cost import cost_of
from verify.engines.select import check
from verify.search.generators import param_bounds
from verify.verdicts import CheckOptions

HI = 3  # every parameter checked over its lower bound .. 3


def judge(golden: dict, golden_text: str | None, program, result) -> str | None:
    """Why `result` (a SyncResult for `program`) breaks the rule against the golden
    entry, or None when it keeps it."""
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
    exact = result.stats.strategy == "threshold" and not conservative and not result.stats.fallback
    prop = "bisimulation" if exact else "soundness"
    verdict = check(result.program, param_bounds(program, HI), CheckOptions(property=prop))
    if verdict.holds is not True:
        return f"changed output is not {prop}-correct: {verdict.verdict.value}"
    return None
