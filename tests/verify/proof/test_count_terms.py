"""The count terms of the all-values proof are built through Z3's C API
(verify/proof/counts.py `_Raw`) with the same Z3 calls, in the same order, as z3's Python
operators would make them: the same terms with the same ids. The ids matter beyond
equality: Z3's effort on the proof's non-linear queries depends on them
(docs/proofs.md, "Known defect"), so a builder that made equal terms in another order
would change which queries end unknown.

The reference below is the builder as it was written with z3's operators."""

from __future__ import annotations

import hashlib

import pytest
import z3

from algorithm.registry import get_strategy
from semantics.parser import parse_file
from semantics.symbolic import py_floordiv, py_mod
from verify.proof import counts
from verify.proof.obligations import ProofOptions, Prover

from tests.support.corpus import ROOT

KERNELS = sorted((ROOT / "kernels" / "suite").glob("*.sync")) + [ROOT / "kernels" / "ring_buffer.sync",
                                                               ROOT / "kernels" / "triangular_attention.sync"]


def _operators(plan, names, ctx):
    match plan:
        case ("int", value):
            return z3.IntVal(value, ctx)
        case ("name", name):
            return names[name]
        case ("fd" | "mod", dividend, divisor):
            x = _operators(dividend, names, ctx)
            return (py_floordiv if plan[0] == "fd" else py_mod)(x, z3.IntVal(divisor, ctx))
        case ("add", parts):
            return z3.Sum(*[_operators(a, names, ctx) for a in parts])
        case ("mul", factors):
            out = z3.IntVal(1, ctx)
            for a in factors:
                out = out * _operators(a, names, ctx)
            return out
        case ("pow", base, exponent):
            out = base = _operators(base, names, ctx)
            for _ in range(exponent - 1):
                out = out * base
            return out
    raise TypeError(plan)


def reference_count(plan, names, ctx):
    terms = []
    for guard_plans, body_plan, den_value in plan:
        body = _operators(body_plan, names, ctx)
        if den_value != 1:
            body = body / den_value
        guard = []
        for kind, poly in guard_plans:
            term = _operators(poly, names, ctx)
            guard.append(term >= 0 if kind == "ge" else term == 0)
        terms.append(z3.If(z3.And(*guard), body, z3.IntVal(0, ctx)) if guard else body)
    return z3.Sum(*terms) if terms else z3.IntVal(0, ctx)


def shape_with_ids(term) -> tuple[str, str]:
    """Digests of the term's structure and of its nodes' ids (each node: its id, its
    declaration's name and its children's ids; the DAG walked once per node)."""
    seen, nodes, stack = set(), [], [term]
    while stack:
        t = stack.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        children = t.children()
        nodes.append((t.get_id(), t.decl().name() if z3.is_app(t) else "", tuple(c.get_id() for c in children)))
        stack.extend(children)
    nodes.sort()
    return (hashlib.sha1(term.sexpr().encode()).hexdigest(), hashlib.sha1(repr(nodes).encode()).hexdigest())


def built_terms(program, monkeypatch, builder) -> list:
    """(id, digest of the S-expression) of every count term a fresh prover builds for the
    local index of every op on every engine, and for every wait's value, in that order."""
    record = []

    def build(plan, names, ctx):
        term = builder(plan, names, ctx)
        record.append(shape_with_ids(term))
        return term

    monkeypatch.setattr(counts, "_build_count", build)
    prover = Prover(program, ProofOptions(timeout=None))
    terms = prover.terms
    for y in terms.sites.values():
        env = terms.env(y, "r")
        for engine in program.engines:
            terms.local(y, engine, env)
        for wait in y.op.waits:
            terms.wait_term(y, wait, env)
    monkeypatch.undo()
    return record


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_count_terms_through_the_c_api_are_the_operators_terms_with_their_ids(monkeypatch, path):
    program = get_strategy("threshold")(parse_file(str(path))).program
    raw = built_terms(program, monkeypatch, counts._build_count)
    assert raw, "no count was built"
    assert raw == built_terms(program, monkeypatch, reference_count)


def test_a_builder_that_makes_the_same_terms_in_another_order_is_told_apart(monkeypatch):
    # Teeth: the guard built before the body gives equal terms with other ids.
    def guard_first(plan, names, ctx):
        terms = []
        for guard_plans, body_plan, den_value in plan:
            guard = []
            for kind, poly in guard_plans:
                term = _operators(poly, names, ctx)
                guard.append(term >= 0 if kind == "ge" else term == 0)
            body = _operators(body_plan, names, ctx)
            if den_value != 1:
                body = body / den_value
            terms.append(z3.If(z3.And(*guard), body, z3.IntVal(0, ctx)) if guard else body)
        return z3.Sum(*terms) if terms else z3.IntVal(0, ctx)

    program = get_strategy("threshold")(parse_file(str(ROOT / "kernels" / "triangular_attention.sync"))).program
    reference = built_terms(program, monkeypatch, reference_count)
    other = built_terms(program, monkeypatch, guard_first)
    assert [shape for shape, _ in other] == [shape for shape, _ in reference]  # the same terms
    assert other != reference  # other ids
