"""Queries decided case by case (verify/proof/obligations.py `Prover` inherits `Cases`).

Why: an exactness query says "no candidate instance supplies the threshold", with the
threshold and the candidates' local indices as closed forms full of if-then-else
(`min`, the planner's `if ... then ... else`, the counts' guards). In each branch the
two sides are usually the same polynomial, but Z3 looks for a model of the whole
non-linear query and gives up (matmul_fully_optimized's `ld_lhs` at 2M units; flash
attention's `ld_k`, `qscale`, `tr` at 40M). So:
- split on the conditions of the terms that choose the case (the threshold, the
  candidates' loop indices: `focus`), substituting each condition's truth value;
- in each branch, replace every comparison inside a remaining condition that the
  branch decides (its facts imply it or its negation: the counts' guards such as
  `TP >= 1`) by its value, and normalise every arithmetic atom to a sum of monomials
  (Z3's `som` simplification): the differences that are identities cancel, and what
  is left is mostly linear;
- a branch Z3 still leaves unknown is split on its most frequent remaining condition,
  up to `MAX_SPLITS` conditions deep.
The soundness obligations use it without a focus, for a chain through a candidate
instance (flash attention's `sel` after `cmax`).

Sound by construction: every branch adds its condition (or its negation) as a fact and
substitutes that truth value for it (equivalent under the fact); a comparison is
replaced only where a query showed that the branch's facts imply its value; Z3's
rewriting preserves equivalence. The branches of one split cover every case, and a
branch whose conditions contradict the query's base facts (a small query, unsat) has
no model. So the query is unsat when every branch is, and a model of a branch is a
model of the query. Unknown when a branch stays unknown or the splits reach
`MAX_CASES` branches. The splits come in a fixed order (conditions as first met in the
terms, then the most frequent first), so a query is split the same way every time.
"""

from __future__ import annotations

import z3

from verify.verdicts import ProofStatus

MAX_CASES = 64  # branches queried per call
MAX_SPLITS = 24  # conditions fixed along one branch
PRUNE_RLIMIT = 200_000  # for "this branch's conditions contradict the base facts"


def _subterms(terms, into_kinds):
    """The distinct subterms of `terms` (by Z3 id), depth first, left to right, as (raw
    AST, declaration kind), going into an application's arguments only where its
    declaration kind is in `into_kinds` (None: every application's). Through Z3's C
    API, for speed: the Python API's wrapper object and sort checks per child cost
    several times the walk itself on the large terms of a case split (reads only: no
    term is made)."""
    if not terms:
        return
    ref = terms[0].ctx.ref()
    seen: set[int] = set()
    stack = [t.as_ast() for t in reversed(terms)]
    while stack:
        ast = stack.pop()
        key = z3.Z3_get_ast_id(ref, ast)
        if key in seen:
            continue
        seen.add(key)
        if z3.Z3_get_ast_kind(ref, ast) != z3.Z3_APP_AST:  # numerals, variables, quantifiers
            yield ast, None
            continue
        kind = z3.Z3_get_decl_kind(ref, z3.Z3_get_app_decl(ref, ast))
        yield ast, kind
        if into_kinds is None or kind in into_kinds:
            stack.extend(z3.Z3_get_app_arg(ref, ast, k) for k in reversed(range(z3.Z3_get_app_num_args(ref, ast))))


def _int_sorted(ref, ast) -> bool:
    return z3.Z3_get_sort_kind(ref, z3.Z3_get_sort(ref, ast)) == z3.Z3_INT_SORT


def ite_conditions(terms, by_count: bool = False) -> list:
    """The distinct conditions of the integer if-then-else subterms of `terms`, in the
    order first met (depth first, left to right), or the most frequent first."""
    found: dict[int, list] = {}
    ref = terms[0].ctx.ref() if terms else None
    for ast, kind in _subterms(terms, None):
        if kind == z3.Z3_OP_ITE and _int_sorted(ref, ast):
            cond = z3.Z3_get_app_arg(ref, ast, 0)
            found.setdefault(z3.Z3_get_ast_id(ref, cond), [cond, 0])[1] += 1
    conds = list(found.values())
    if by_count:
        conds.sort(key=lambda pair: -pair[1])  # stable: first met among equals
    ctx = terms[0].ctx if terms else None
    return [z3.BoolRef(cond, ctx) for cond, _ in conds]  # kept alive by `terms`


_CONNECTIVES = frozenset((z3.Z3_OP_AND, z3.Z3_OP_OR, z3.Z3_OP_NOT))
_COMPARISONS = frozenset((z3.Z3_OP_LE, z3.Z3_OP_GE, z3.Z3_OP_LT, z3.Z3_OP_GT, z3.Z3_OP_EQ))


def comparisons(conds) -> list:
    """The distinct integer comparisons (atoms) the conditions are made of."""
    if not conds:
        return []
    ctx = conds[0].ctx
    ref = ctx.ref()
    return [z3.BoolRef(ast, ctx) for ast, kind in _subterms(conds, _CONNECTIVES)
            if kind in _COMPARISONS and _int_sorted(ref, z3.Z3_get_app_arg(ref, ast, 0))]


class Cases:
    """Case splits with the prover's solver budgets and deadline (`self._solver`,
    `self._valuation`, `self.deadline`), in a Z3 context of their own."""

    def by_cases(self, base: list, facts: list, focus: list):
        """Decide base + facts (see the module docstring): (PROVED, None) when every
        branch is unsat, (FAILED, valuation) from a branch's model, (UNKNOWN, reason).
        `focus`: the terms whose conditions are split first (queried only through
        facts); `base`: facts that hold in every branch (domain, lower bounds)."""
        # In a context of its own: the answers depend on the query only, not on what the
        # prover asked before (flash attention's `ld_q`: proved alone, unknown when asked
        # after 40 other obligations in the prover's context).
        ctx = z3.Context()
        base, facts, focus = ([t.translate(ctx) for t in terms] for terms in (base, facts, focus))
        true, false = z3.BoolVal(True, ctx), z3.BoolVal(False, ctx)
        chosen = list({t.get_id(): t for t in focus if ite_conditions([t])}.values())  # those that choose
        todo = [((), list(facts), chosen)]  # (conditions fixed, facts, focus terms)
        queried = 0
        while todo:
            if self.deadline.passed():
                return ProofStatus.UNKNOWN, "the proof's time budget ran out while splitting cases"
            case, now, chosen = todo.pop()
            conds = ite_conditions(chosen)
            if not conds:
                if queried >= MAX_CASES:
                    return ProofStatus.UNKNOWN, f"more than {MAX_CASES} cases"
                queried += 1
                now = [z3.simplify(f, som=True, arith_lhs=True) for f in self._decided(ctx, base, case, now)]
                solver = self._solver(ctx, 0)
                solver.add(*base, *case, *now)
                answer = solver.check()
                if answer == z3.unsat:
                    continue
                if answer == z3.sat:
                    return ProofStatus.FAILED, self._valuation(solver)
                more = ite_conditions(now, by_count=True) if len(case) < MAX_SPLITS else []
                if not more:
                    return ProofStatus.UNKNOWN, f"Z3 answered unknown in a case: {solver.reason_unknown()}"
                chosen = [z3.If(more[0], z3.IntVal(1, ctx), z3.IntVal(0, ctx))]
                conds = more[:1]
            cond = conds[0]
            # Pushed so that the branch where the condition holds is asked first.
            for value, fact in ((false, z3.Not(cond)), (true, cond)):
                if self._contradicts(ctx, base, case + (fact,)):
                    continue
                rest = [z3.simplify(z3.substitute(f, (cond, value))) for f in chosen]
                todo.append((case + (fact,), [z3.simplify(z3.substitute(f, (cond, value))) for f in now],
                             [t for t in rest if ite_conditions([t])]))
        return ProofStatus.PROVED, None

    def _decided(self, ctx: z3.Context, base: list, case: tuple, facts: list) -> list:
        """`facts` with every comparison inside an if-then-else condition that the case
        decides (base + case imply it or its negation) replaced by its truth value: the
        counts' guards (`TP >= 1`, `j >= 2`) then select their branch, and the branch's
        polynomials can cancel. Each model found rules out, for every comparison at
        once, the value it shows: far fewer queries than two per comparison."""
        atoms = comparisons(ite_conditions(facts))
        if not atoms:
            return facts
        solver = z3.Solver(ctx=ctx)
        solver.set("rlimit", PRUNE_RLIMIT * (len(atoms) + 1))
        solver.add(*base, *case)
        seen = [set() for _ in atoms]  # truth values some model of base + case gives each atom

        def record(answer) -> None:
            if answer == z3.sat:
                model = solver.model()
                for n, atom in enumerate(atoms):
                    seen[n].add(z3.is_true(model.eval(atom, model_completion=True)))

        record(solver.check())
        true, false = z3.BoolVal(True, ctx), z3.BoolVal(False, ctx)
        pairs = []
        for n, atom in enumerate(atoms):
            for value in (True, False):
                if value in seen[n]:
                    continue
                solver.push()
                solver.add(atom if value else z3.Not(atom))
                answer = solver.check()
                record(answer)
                solver.pop()
                if answer == z3.unsat:  # the atom never takes this value
                    pairs.append((atom, false if value else true))
                    break
        if not pairs:
            return facts
        return [z3.simplify(z3.substitute(f, *pairs)) for f in facts]

    def _contradicts(self, ctx: z3.Context, base: list, case: tuple) -> bool:
        solver = z3.Solver(ctx=ctx)
        solver.set("rlimit", PRUNE_RLIMIT)
        solver.add(*base, *case)
        return solver.check() == z3.unsat
