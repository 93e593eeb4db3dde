"""Counts and proofs under a `%` by a parameter (`if k % K == 0`, blocked accumulation):
the all-values proof's closed forms split the sum by the residue classes a guard
picks (verify/proof/periods.py `class_sum`), sum floors by a parameter by their
antidifference (`floor_sum`), and its last-producer candidates take the last
iteration of that class (verify/proof/terms.py `residue_lasts`).

Expected counts come from unrolling the programs (brute force), never from the code
under test."""

from __future__ import annotations

import itertools

import pytest
import z3

from algorithm.registry import get_strategy
from semantics.context import sites
from semantics.parser import parse, parse_file
from semantics.sequential import unroll
from verify.proof import periods, terms as terms_module
from verify.proof.counts import Counter, Unsupported, to_z3
from verify.proof.terms import Terms, depth, last_candidates, witnesses
from verify.proof.prove import PROVED, ProofOptions, prove

from tests.support.corpus import DATA_DIR

NEST = DATA_DIR / "nest"


def _counts_agree(program, hi: int) -> int:
    """Compare every closed-form count with the unrolled program at every valuation of
    each parameter from its lower bound to `hi` past it; the number compared."""
    counter = Counter(program)
    found = sites(program)
    checked = 0
    names = [p.name for p in program.params]
    for values in itertools.product(*(range(p.lower, p.lower + hi + 1) for p in program.params)):
        valuation = dict(zip(names, values))
        unrolled = unroll(program, valuation)
        for instance in unrolled.instances:
            env = {k: z3.IntVal(v) for k, v in [*valuation.items(), *instance.env]}
            for number, engine in enumerate(program.engines):
                expected = sum(1 for x in unrolled.instances[:instance.index] if x.engine == number)
                pieces = counter.before(found[instance.op.name], ("engine", engine))
                got = z3.simplify(to_z3(pieces, env, counter.atoms)).as_long()
                assert got == expected, (instance.describe(), valuation, engine)
                checked += 1
    return checked


# One residue class of a parameter period, however the guard spells it, in a flat, a
# triangular and an ascending (`j in i..M`, floors of -i) nest, with and without else.
GUARDS = ["j % K == 0", "j % K != 0", "j % K == K - 1", "j % K != K - 1", "j % K < 1", "j % K >= 1",
          "(j + 1) % K == 0", "j % K <= K - 2", "j % K >= K - 1", "j % (D + 1) == D", "j % K < 2",
          "not (j % K == 0)", "j % K == 0 and j % K != 1"]
SHAPES = {
    "flat": "for i in 0..N {{\n  for j in 0..M {{\n    if {g} {{\n      A w writes x\n    }}\n"
            "    B r reads x\n  }}\n}}\n",
    "triangular-else": "for i in 0..N {{\n  for j in 0..i {{\n    if {g} {{\n      A w writes x\n    }} else {{\n"
                       "      B e writes x\n    }}\n  }}\n  B r reads x\n}}\n",
    "ascending": "for i in 0..N {{\n  for j in i..M {{\n    if {g} {{\n      A w writes x\n    }}\n  }}\n"
                 "  B r reads x\n}}\nA z reads x\n",
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("guard", GUARDS)
def test_counts_under_a_residue_of_a_parameter_period_equal_unrolled_counts(guard, shape):
    program = parse("engines A B\nparam N, M, K >= 1, D\n" + SHAPES[shape].format(g=guard))
    assert _counts_agree(program, 3) > 500


@pytest.mark.parametrize("name", ["period_over_parameters", "period_over_parameters_else",
                                  "period_over_parameters_else_only", "period_over_parameters_triangular",
                                  "period_beside_double_buffer"])
def test_counts_of_the_nest_stages_parameter_period_kernels_equal_unrolled_counts(name):
    assert _counts_agree(parse_file(str(NEST / f"{name}.sync")), 3) > 100


@pytest.mark.parametrize("text, why", [
    ("engines A B\nparam N, K\nfor j in 0..N {\n  if j % K == 0 {\n    A w writes x\n  }\n}\nB r reads x\n",
     "may be below 1"),  # K >= 0: no closed form where K = 0 is a valuation
    ("engines A B\nparam N, K >= 1\nfor j in 0..N {\n  if (2 * j) % K == 0 {\n    A w writes x\n  }\n}\n"
     "B r reads x\n", "other than a residue compared"),
    ("engines A B\nparam N, M, K >= 1\nfor j in 0..N {\n  if j % K < M {\n    A w writes x\n  }\n}\n"
     "B r reads x\n", "bounded by"),
])
def test_what_the_class_split_does_not_cover_has_no_closed_form_with_the_reason(text, why):
    program = parse(text)
    with pytest.raises(Unsupported, match=why):
        Counter(program).before(sites(program)["r"], ("engine", "A"))


def test_teeth_a_class_split_that_ignores_the_residue_is_caught(monkeypatch):
    """A broken split (every comparison of the residue read as always true) gives counts
    the unrolled program refutes."""
    monkeypatch.setattr(periods, "_indicator", lambda kind, bound, period: [(1, None, ())])
    program = parse("engines A B\nparam N, M, K >= 1, D\n" + SHAPES["flat"].format(g="j % K != 0"))
    with pytest.raises(AssertionError):
        _counts_agree(program, 3)


def test_teeth_a_floor_sum_off_by_one_is_caught(monkeypatch):
    """The antidifference of `x // P` shifted by one is refuted by the unrolled
    triangular nest (whose outer sum adds up floors by K)."""
    real = periods.antidifference
    monkeypatch.setattr(periods, "antidifference", lambda n, period, atoms: real(n + 1, period, atoms))
    with pytest.raises(AssertionError):
        _counts_agree(parse_file(str(NEST / "period_over_parameters_triangular.sync")), 3)


@pytest.mark.parametrize("name", ["period_over_parameters_else", "period_over_parameters_else_only",
                                  "period_over_parameters_triangular"])
def test_threshold_output_under_a_parameter_period_is_proved_for_every_parameter_value(name):
    program = get_strategy("threshold")(parse_file(str(NEST / f"{name}.sync"))).program
    proof = prove(program, ProofOptions(jobs=1, timeout=600))
    assert proof.status == PROVED, proof.reason


def _last_producers_named(program, x_name: str, y_name: str, hi: int, narrow: bool,
                          chain: bool = False) -> tuple[int, int]:
    """(instances of y with an earlier x instance, those whose last earlier x instance,
    found by unrolling, is among the proof's last-producer candidates, or with `chain`
    among the witnesses a chain through x may take)."""
    t = Terms(program, z3.Context())
    x, y = t.sites[x_name], t.sites[y_name]
    iy = t.env(y, "y")
    candidates = witnesses(t, x, [(y, iy)], depth(program), 256, narrow) if chain else \
        last_candidates(t, x, y, iy, depth(program), narrow=narrow)
    seen = named = 0
    names = [p.name for p in program.params]
    for values in itertools.product(*(range(p.lower, p.lower + hi + 1) for p in program.params)):
        valuation = dict(zip(names, values))
        instances = unroll(program, valuation).instances
        for instance in (i for i in instances if i.op.name == y_name):
            last = [i for i in instances[:instance.index] if i.op.name == x_name][-1:]
            if not last:
                continue
            seen += 1
            at = [(t.params[n], z3.IntVal(v, t.ctx)) for n, v in valuation.items()]
            at += [(iy[n], z3.IntVal(v, t.ctx)) for n, v in instance.env]
            want = dict(last[0].env)
            named += any(all(z3.simplify(z3.substitute(jx[n], *at)).as_long() == v for n, v in want.items())
                         for jx in candidates)
    return seen, named


@pytest.mark.parametrize("name, x, y", [("period_over_parameters_else_only", "reset", "more"),
                                        ("period_over_parameters_triangular", "w", "r"),
                                        ("period_over_parameters", "part", "mm")])
def test_the_last_producer_under_a_parameter_period_is_a_candidate(name, x, y):
    program = parse_file(str(NEST / f"{name}.sync"))
    for narrow in (True, False):
        seen, named = _last_producers_named(program, x, y, 4, narrow)
        assert seen > 20 and named == seen


def test_a_chain_through_the_first_step_of_a_block_has_it_as_a_witness():
    """`more` (k % K != 0) writes acc, which the evacuation of the previous block read;
    `first`, at k - k % K on the same engine, waited for it: the chain's witness."""
    program = parse_file(str(NEST / "period_beside_double_buffer.sync"))
    for narrow in (True, False):
        seen, named = _last_producers_named(program, "first", "more", 3, narrow, chain=True)
        assert seen > 20 and named == seen


def test_teeth_without_the_last_iteration_of_the_class_the_last_producer_is_missed(monkeypatch):
    """`more` waits `ACT >= count(ACT)`: its witness is the reset at k - k % K, which no
    other candidate names (without it the proof of that wait's exactness finds no
    witness); the narrow chain witnesses of the double-buffered kernel lose `first` at
    k - k % K the same way."""
    monkeypatch.setattr(terms_module, "residue_lasts", lambda *args: [])
    seen, named = _last_producers_named(parse_file(str(NEST / "period_over_parameters_else_only.sync")),
                                        "reset", "more", 4, False)
    assert named < seen
    seen, named = _last_producers_named(parse_file(str(NEST / "period_beside_double_buffer.sync")),
                                        "first", "more", 3, True, chain=True)
    assert named < seen
