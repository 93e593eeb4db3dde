"""Dead code (algorithm/threshold/live.py): statements that run for no parameter value
are planned out and get no wait; the live ones get exact waits (the output bisimilar to
the reference), barriers of a fallback keep their places, and a program without
dead code is planned as before."""

from __future__ import annotations

from pathlib import Path

import attrs

import algorithm.threshold.live as live_mod
from algorithm.registry import get_strategy
from semantics.ir import Barrier, For, Op, walk_stmts
from semantics.parser import parse, parse_file
from semantics.printer import print_program
from verify.engines.explicit import check
from verify.search.generators import param_bounds
from verify.verdicts import CheckOptions

ROOT = Path(__file__).resolve().parents[2]
DEAD = ROOT / "tests/data/threshold_cases/dead_code.sync"


def _bisimilar(program, synced, hi: int = 3) -> bool:
    """The output is bisimilar to the reference at every valuation up to hi (exact
    waits: no instance issues early or waits for more than it needs; a wait implied by
    others may be gone)."""
    return check(synced, param_bounds(program, hi), CheckOptions(property="bisimulation")).holds


def test_dead_statements_get_no_wait_and_live_ones_the_exact_thresholds():
    program = parse_file(str(DEAD))
    result = get_strategy("threshold")(program)
    assert result.stats.conservative == 0 and result.stats.fallback is None
    ops = {op.name: op for op in walk_stmts(result.program.body) if isinstance(op, Op)}
    assert sorted(ops) == sorted(op.name for op in walk_stmts(program.body) if isinstance(op, Op))
    assert all(not op.waits for name, op in ops.items() if name.startswith("dead"))
    assert _bisimilar(program, result.program)


def test_a_pass_that_takes_live_loops_for_dead_is_caught(monkeypatch):
    """Teeth: every loop taken for dead (its ops planned out) leaves live ops without
    the waits brute force asks for."""
    monkeypatch.setattr(live_mod, "proves", lambda facts, claim: True)
    program = parse_file(str(DEAD))
    assert not _bisimilar(program, get_strategy("threshold")(program).program)


def test_a_program_without_dead_code_is_left_to_the_stages_as_it_is():
    for path in sorted((ROOT / "kernels" / "suite").glob("*.sync")):
        assert live_mod.live_program(parse_file(str(path))) is None, path.name


def test_barriers_of_the_fallback_keep_their_places_beside_dead_code():
    """A program the general stage plans with the barrier layout (local barriers), with
    a dead loop added between its statements: the same barriers, the dead op without a
    wait, and sound."""
    text = (ROOT / "tests/data/repro/threshold_refuses_2.sync").read_text()
    with_dead = text.replace("for i3 in 0..N {", "for d in 1..0 {\n  A dead writes a, b, c\n}\nfor i3 in 0..N {")
    plain, dead = (get_strategy("threshold")(parse(t)) for t in (text, with_dead))
    assert plain.stats.fallback == dead.stats.fallback == "barrier"

    def without_dead(program):
        body = tuple(s for s in program.body if not (isinstance(s, For) and s.var == "d"))
        return print_program(attrs.evolve(program, body=body))

    assert without_dead(dead.program) == print_program(plain.program)
    assert sum(isinstance(s, Barrier) for s in walk_stmts(dead.program.body)) >= 1
    (op,) = [s for s in walk_stmts(dead.program.body) if isinstance(s, Op) and s.name == "dead"]
    assert op.waits == ()
    program = parse(with_dead)
    assert check(dead.program, param_bounds(program, 2), CheckOptions(property="soundness")).holds
