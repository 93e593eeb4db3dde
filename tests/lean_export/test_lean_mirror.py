"""The mirror of the Lean definitions is the gate of the Lean export (no Lean toolchain
runs here): run on the program term the export emitted (read back from the text), it
must agree with the reference semantics in every reachable state of every valuation
within 0..2, and every `native_decide` claim of the export must evaluate as claimed on
it. Teeth: a wrong Lean definition of ranges, DMA queues, counter increments, replica
groups or the 32-bit range is caught twice, by the digest of the Lean text and by the
agreement check."""

from __future__ import annotations

import functools
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tests.lean_export.lean_machines as machines
import tests.lean_export.lean_mirror as mirror
from algorithm.registry import get_strategy
from lean_export.export import export_files, library_text
from lean_export.printer import lean_program
from semantics.ir import map_ops, ops
from semantics.parser import parse_file
from verify.api.lean import plan_instances
from verify.search.rich import rich_programs

from tests.lean_export.agreement import agree
from tests.lean_export.lean_terms import MIRRORED_MODULES, library_digests, parse_term, read_module
from tests.support.budget import scaled
from tests.support.corpus import DATA_DIR, ROOT

SUITE = ROOT / "kernels" / "suite"
SLOW_SUITE = ("flash_attention_causal", "matmul_fully_optimized")  # 10^5 to 10^6 states per valuation
KERNELS = (sorted((ROOT / "kernels").glob("*.sync")) + sorted((ROOT / "kernels" / "bugs").glob("*.sync"))
           + [p for p in sorted(SUITE.glob("*.sync")) if p.stem not in SLOW_SUITE]
           + sorted((DATA_DIR / "lean_cases").glob("*.sync")))
REPLICA_RANGES = DATA_DIR / "lean_cases" / "replica_ranges.sync"
DMA = DATA_DIR / "lean_cases" / "dma_handoff.sync"
INT32 = DATA_DIR / "lean_cases" / "int32_threshold.sync"


def _strategy(path: Path) -> str:
    text = path.read_text()
    return "manual" if " wait " in text or "barrier" in text else "threshold"


@functools.lru_cache(maxsize=None)
def _exported_once(path: Path):
    """`_exported`, once per kernel for the tests that only read the result."""
    return _exported(path)


def _exported(path: Path, strategy: str | None = None):
    """(synchronized program, its emitted Program term read back from the export's text,
    the kernel module read back)."""
    program = parse_file(str(path))
    strategy = strategy or _strategy(path)
    files = export_files(program, path.name, strategy, 2, planner=plan_instances)
    module = read_module(next(text for rel, text in files.items() if rel.startswith("Kernels/")))
    (term,) = module.programs.values()
    return get_strategy(strategy)(program).program, term, module


def _library() -> dict[str, str]:
    return {m: library_text(m) for m in MIRRORED_MODULES}


# ------------------------------------------------------------------ the gate


def test_every_mirrored_lean_definition_is_the_one_in_the_library():
    assert library_digests(_library()) == mirror.LEAN_SOURCE, (
        "a Lean declaration changed (or was added): review its transliteration in "
        "tests/lean_export/lean_mirror.py / lean_machines.py, then record its digest in LEAN_SOURCE")


@pytest.mark.parametrize("path", KERNELS, ids=[p.stem for p in KERNELS])
def test_mirror_agrees_with_the_reference_semantics(path):
    program, term, _ = _exported_once(path)
    result = agree(program, term, max_param=2)
    assert result.disagreement is None, result.disagreement
    assert result.valuations >= 1 and result.states > 0 and not result.capped


@pytest.mark.slow
def test_mirror_agrees_on_flash_attention_causal():
    program, term, _ = _exported_once(SUITE / "flash_attention_causal.sync")
    result = agree(program, term, max_param=2)
    assert result.disagreement is None, result.disagreement
    assert not result.capped and result.states > 100_000


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in KERNELS] + [
    pytest.param(SUITE / "flash_attention_causal.sync", marks=pytest.mark.slow, id="flash_attention_causal")])
def test_every_native_decide_claim_is_replayed(path):
    """Each `check p v = true/false := by native_decide` of the emitted module holds on
    the mirror, and the module contains no `decide` that is not such a claim.
    (matmul_fully_optimized, whose export alone takes about 40 s: bench/lean_coverage.py
    --mirror.)"""
    _, term, module = _exported_once(path)
    assert module.claims, "the export claims no bounded instance"
    assert module.decide_count == len(module.claims)
    for claim in module.claims:
        assert machines.check(module.programs[claim.program], claim.valuation) == claim.expected, claim.theorem
    assert term is module.programs[module.claims[0].program]


def test_claims_of_a_failing_kernel_are_replayed_false():
    _, _, module = _exported(ROOT / "kernels" / "bugs" / "ring_off_by_one.sync")
    failing = [c for c in module.claims if not c.expected]
    assert failing and all(not machines.check(module.programs[c.program], c.valuation) for c in failing)


@scaled(1 / 6)
@given(rich_programs(max_queues=2), st.sampled_from(["manual", "threshold", "barrier"]), st.data())
def test_mirror_agrees_on_generated_kernels(program, strategy, data):
    """Generated kernels with ranges, lower bounds, DMA queues, triggers and increments,
    some ops put in replica groups, unsynchronized or synchronized, printed as Lean and
    read back."""
    groups = data.draw(st.lists(st.sampled_from([None, "g", "h"]), min_size=len(ops(program)),
                                max_size=len(ops(program))))
    tags = iter(groups)
    program = attrs.evolve(program, body=map_ops(program.body, lambda op: attrs.evolve(op, replica=next(tags))))
    synced = get_strategy(strategy)(program).program
    term = parse_term(lean_program(synced, "k", "k").split(":=", 1)[1])
    result = agree(synced, term, max_param=2, cap=5_000)
    assert result.disagreement is None, result.disagreement


# ------------------------------------------------------------------ teeth

# Each: a wrong Lean definition (the text replaced in the library) and its
# transliteration (the mirror function it becomes), and a kernel that tells them apart.
WRONG = {
    "ranges: an empty interval still overlaps": (
        "Semantics", "decide (a < b) && decide (c < d) && decide (a < d)", "decide (a < d)",
        machines, "overlaps", lambda r1, r2: _overlaps_ignoring_emptiness(r1, r2), REPLICA_RANGES),
    "queues: a trigger waits for its own producers, not its transfer's": (
        "Semantics", "    | some t, _ => some t\n", "    | some _, _ => some y\n",
        machines.Machines, "guarded",
        lambda self, y: y if (i := mirror.nth_opt(self.u.insts, y)) is None or i.trigger is None else None,
        DMA),
    "increments: every counter steps by one": (
        "Semantics", "  | some k => k\n  | none => 1", "  | some _ => 1\n  | none => 1",
        mirror, "incrementOf", lambda p, e: 1, DMA),
    "the 32-bit range: thresholds unchecked": (
        "Semantics", "&&\n  u.insts.all (fun i => i.waits.all (fun w => decide (int32Min ≤ w.2) && decide (w.2 ≤ int32Max)))",
        "", machines.Machines, "inInt32Range",
        lambda self: all(self.maxCounter(f) <= machines.INT32_MAX for f in range(self.engineCount())), INT32),
    "replica groups: replicas conflict": (
        "Semantics", "  | some g, some h => decide (g = h)", "  | some _, some _ => false",
        machines, "sameReplica", lambda x, y: False, REPLICA_RANGES),
}


def _overlaps_ignoring_emptiness(r1, r2):
    if not r1 or not r2:
        return not r1 and not r2
    (a, b), (c, d) = r1[0], r2[0]
    return a < d and c < b and _overlaps_ignoring_emptiness(r1[1:], r2[1:])


@pytest.mark.parametrize("case", list(WRONG))
def test_a_wrong_lean_definition_is_caught(case, monkeypatch):
    module, old, new, owner, name, wrong, kernel = WRONG[case]
    library = _library()
    assert library[module].count(old) == 1, "the mutation no longer applies to the Lean text"
    mutated = {**library, module: library[module].replace(old, new)}
    assert library_digests(mutated) != mirror.LEAN_SOURCE  # the digest gate sees the change
    program, term, _ = _exported(kernel)
    assert agree(program, term).disagreement is None  # the right definition agrees
    monkeypatch.setattr(owner, name, wrong)
    assert agree(program, term).disagreement is not None  # the wrong one is caught


def test_a_wrong_printer_for_ranges_is_caught(monkeypatch):
    """The printer, not the library, wrong: a range printed with an inclusive bound."""
    import lean_export.printer as printer
    from semantics.ir import Range

    original = printer.lean_index

    def inclusive(node):
        if isinstance(node, Range):
            return f".range ({printer.lean_expr(node.lo)}) (.add ({printer.lean_expr(node.hi)}) (.const 1))"
        return original(node)

    monkeypatch.setattr(printer, "lean_index", inclusive)
    program, term, _ = _exported(REPLICA_RANGES)
    assert agree(program, term).disagreement is not None
