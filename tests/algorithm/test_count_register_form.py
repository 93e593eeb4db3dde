"""A wait whose engine's every earlier instance conflicts with the op is `count(F)`
(algorithm/threshold/thresholds.py `every_earlier_instance_conflicts`): the last
conflicting instance is then the last instance, whatever the threshold's closed form.
Expected verdicts come from the happens-before engine over the kernels' bounds."""

from __future__ import annotations

import importlib

from algorithm.registry import get_strategy, sync_threshold
from algorithm.threshold.options import PlannerOptions
from semantics.ir import Count, Op, walk_stmts
from semantics.parser import parse_file
from verify.engines.select import check
from verify.search.generators import param_bounds
from verify.verdicts import CheckOptions

from tests.support.corpus import DATA_DIR, ROOT

thresholds_mod = importlib.import_module("algorithm.threshold.thresholds")
# tiled_matmul is a rectangular nest, which the nest stage plans first: these tests are
# about the general stage's rule.
GENERAL = PlannerOptions(stages=("general",))


def _waits(program) -> dict:
    return {(s.name, w.engine): w.threshold for s in walk_stmts(program.body) if isinstance(s, Op) for w in s.waits}


def _bisimilar(program, source) -> bool:
    return check(program, param_bounds(source, 3), CheckOptions(property="bisimulation")).holds is True


def test_a_scalar_every_earlier_writer_touches_is_waited_for_with_the_count_register():
    """else_of_disjunction: every PE op before `r` writes the scalar `r` reads, and every
    LD op before `w` reads what `w` writes. Both waits are the registers (the closed
    form of the first has 115 operations of arithmetic)."""
    source = parse_file(DATA_DIR / "threshold_cases" / "else_of_disjunction.sync")
    synced = get_strategy("threshold")(source).program
    waits = _waits(synced)
    assert waits[("r", "PE")] == Count("PE") and waits[("w", "LD")] == Count("LD")
    assert _bisimilar(synced, source)


def test_a_buffer_element_some_earlier_instances_miss_keeps_its_closed_form():
    """tiled_matmul's loads wait for the matmul two k-steps back (double buffering by
    `k % 2`): the last PE instance does not touch the load's slot, so no `count(PE)`."""
    source = parse_file(ROOT / "kernels" / "suite" / "tiled_matmul.sync")
    for synced in (get_strategy("threshold")(source).program, sync_threshold(source, options=GENERAL).program):
        assert _waits(synced)[("ld_lhsT", "PE")] != Count("PE")


def test_teeth_claiming_every_pair_always_meets_over_synchronizes(monkeypatch):
    """Broken: accesses of one buffer taken to meet at every instance pair. tiled_matmul's
    loads then wait for every earlier matmul, one more than they need: the
    happens-before engine finds the output not bisimilar."""
    monkeypatch.setattr(thresholds_mod, "_always_meet", lambda a, b: True)
    source = parse_file(ROOT / "kernels" / "suite" / "tiled_matmul.sync")
    synced = sync_threshold(source, options=GENERAL).program
    assert _waits(synced)[("ld_lhsT", "PE")] == Count("PE")
    assert not _bisimilar(synced, source)
