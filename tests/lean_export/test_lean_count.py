"""`count(F)` in the Lean export: the printer emits `.count "F"`, the Lean definitions
evaluate it like `iters` (the engine's counted instances so far, looked up under
`countKey F`), and the mirror of those definitions agrees with the reference semantics on
kernels whose waits use it. Teeth: a Lean `count` that reads the wrong tracked value is
caught by the digest gate and by the agreement check."""

from __future__ import annotations

import pytest

import tests.lean_export.lean_machines as machines
import tests.lean_export.lean_mirror as mirror
from lean_export.export import export_files, library_text
from lean_export.printer import lean_expr
from semantics.ir import BinOp, Const, Count
from semantics.parser import parse
from verify.api.lean import plan_instances

from tests.lean_export.agreement import agree
from tests.lean_export.lean_terms import MIRRORED_MODULES, library_digests, read_module

# A DMA queue, an if/else and a double buffer: count(DVE) - 1 is exactly the DVE op two
# iterations back (the last reader of the slot the load overwrites), count(Q) the load
# of this iteration (its transfer is the Q-instance just before the DVE op).
EXACT = """\
kernel countq
engines PE DVE
queue Q
param N = 2
for i in 0..N {
  PE load writes t[i % 2] via Q wait DVE >= count(DVE) - 1
  if i % 2 == 0 {
    DVE add reads t[i % 2] writes o[i] wait Q >= count(Q)
  } else {
    DVE mul reads t[i % 2] writes o[i] wait Q >= count(Q)
  }
}
"""

# count(PE) counts both PE ops of every iteration before the consumer.
NESTED = """\
kernel countnest
engines PE ACT
param N = 2, M = 2
for i in 0..N {
  for j in 0..M {
    PE a writes x[i, j]
    PE b writes y[i, j]
    ACT c reads x[i, j] wait PE >= count(PE) - 1
  }
}
"""


def _exported(text: str):
    program = parse(text)
    files = export_files(program, "k.sync", "manual", 2, planner=plan_instances)
    text = next(body for rel, body in files.items() if rel.startswith("Kernels/"))
    module = read_module(text)
    (term,) = module.programs.values()
    return program, term, module, text


def test_count_is_printed_as_the_count_constructor():
    assert lean_expr(Count("DVE")) == '.count "DVE"'
    assert lean_expr(BinOp("-", Count("Q"), Const(1))) == '.sub (.count "Q") (.const 1)'


@pytest.mark.parametrize("text", [EXACT, NESTED], ids=["dma-if", "nested"])
def test_mirror_agrees_with_the_reference_on_count_thresholds(text):
    program, term, module, lean = _exported(text)
    assert '.count "' in lean
    result = agree(program, term, max_param=2)
    assert result.disagreement is None, result.disagreement
    assert result.valuations >= 1 and result.states > 0 and not result.capped
    for claim in module.claims:
        assert machines.check(module.programs[claim.program], claim.valuation) == claim.expected, claim.theorem


def test_claims_of_an_off_by_one_count_threshold_are_replayed_false():
    program, term, module, _ = _exported(EXACT.replace("count(Q)", "count(Q) - 1"))
    failing = [c for c in module.claims if not c.expected]
    assert failing and all(not machines.check(module.programs[c.program], c.valuation) for c in failing)


def test_a_lean_count_reading_the_wrong_value_is_caught(monkeypatch):
    """Lean's `count F` looked up under `F` (a loop variable's key: 0 here) instead of
    `countKey F`: the digest gate sees the text change, and the transliterated mirror
    disagrees with the reference semantics."""
    library = {m: library_text(m) for m in MIRRORED_MODULES}
    old, new = "lookup? counts (countKey f)", "lookup? counts f"
    assert library["Semantics"].count(old) == 1, "the mutation no longer applies to the Lean text"
    mutated = {**library, "Semantics": library["Semantics"].replace(old, new)}
    assert library_digests(mutated) != mirror.LEAN_SOURCE
    program, term, _, _ = _exported(EXACT)
    assert agree(program, term).disagreement is None
    original = mirror.evalExpr

    def wrong(env, iters, e):
        if e[0] == "count":
            return original(env, iters, ("iters", e[1]))
        return original(env, iters, e)

    monkeypatch.setattr(mirror, "evalExpr", wrong)
    assert agree(program, term).disagreement is not None
