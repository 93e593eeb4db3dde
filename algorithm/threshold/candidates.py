"""Where is the last conflicting producer instance? Candidates and their proof.

For a consumer op y and a producer op x (one conflicting access pair), the candidate
positions of the last x-instance that y depends on, latest first: x in the same
iteration of all common loops (when x precedes y in their body), then x in an
earlier iteration of the innermost common loop, then of the next outer one. Free loop
indices get the latest value their ranges, the non-emptiness of inner loops, guards
and index equations allow; each candidate carries the exact condition under which it
exists and conflicts. `prove_candidates` asks Z3 whether the case analysis is exact
for every parameter value: each candidate is a conflicting earlier instance when its
condition holds, nothing conflicting lies after it, and nothing exists when no
condition holds.
"""

from __future__ import annotations

import attrs
import z3

from semantics.context import Site, common_depth, static_order
from semantics.ir import (
    And, BinOp, Compare, Const, For, If, Max, Min, Not, Or, Program, Range, Var, index_exprs, walk_expr,
)
from semantics.symbolic import domain, precedes, same_element, to_z3
from algorithm.threshold.counting import Session, as_congruence, as_interval, mentions, subst
from algorithm.threshold.sums import without_extrema
from semantics.simplify import cond as simplify_cond, folded, simplify
from algorithm.threshold.shapes import pair_shape
from algorithm.threshold.cases import conjuncts, project


@attrs.frozen
class Candidate:
    condition: object  # IR condition over y's loop indices and parameters
    values: dict  # x's loop variable -> IR expression
    depth: int  # trail depth of the body y and the candidate share


def _constraints(conds, u: str):
    """Split conditions on free index u into guidance: equalities, congruences (a
    negated congruence counts by its modulus only), bounds."""
    equal, congruent, upper, excluded = [], [], [], []
    for c in conds:
        if isinstance(c, Not) and isinstance(c.operand, Compare):
            c = Compare("!=", c.operand.left, c.operand.right) if c.operand.op == "==" else c
        if isinstance(c, Compare) and c.op == "!=" and mentions(c, u):
            cong = as_congruence(Compare("==", c.left, c.right), u)
            if cong is not None:
                congruent.append((cong[0], None, None))  # excluded residue: fan out over the period
                continue
            point = as_interval(Compare("==", c.left, c.right), u)
            if point is not None and point[0] is not None and point[1] is not None \
                    and simplify(BinOp("-", point[1], point[0])) == Const(1):
                excluded.append(point[0])  # one excluded value (`j != i` of an else branch)
            continue
        if not isinstance(c, Compare) or not mentions(c, u):
            continue
        interval = as_interval(c, u)
        if interval is not None:
            lo, hi = interval
            if lo is not None and hi is not None and simplify(BinOp("-", hi, lo)) == Const(1):
                equal.append(lo)
            elif hi is not None:  # the lower end is checked by the candidate's condition
                upper.append(simplify(BinOp("-", hi, Const(1))))
            continue
        cong = as_congruence(c, u)
        if cong is not None:
            congruent.append(cong)
    return equal, congruent, upper, excluded




def _latest(loop: For, u: str, hi, conds, env, limit: int) -> list:
    """The latest indices u < hi suggested by the conditions, latest first (checked
    later): one value, or, for several congruences, one per residue of their period.
    Under a disjunction (`if i == 1 or i == 3`): first the `max` of each side's latest
    when each side suggests one value (the latest instance is the latest side's), then
    the values suggested without the disjunction, then each side's."""
    conds = [part for c in conds for part in conjuncts(without_extrema(c, u) or c)]
    plain = _latest_plain(u, hi, conds, limit)
    for c in conds:
        sides = disjuncts(c) if mentions(c, u) else None
        if sides is None:
            continue
        rest = [d for d in conds if d is not c]
        per_side = [_latest(loop, u, hi, rest + side, env, limit) for side in sides]
        out = []
        if all(len(options) == 1 for options in per_side):
            latest = per_side[0][0]
            for (option,) in per_side[1:]:
                latest = simplify(Max(latest, option))
            out.append(latest)
        for options in [plain, *per_side]:
            out += [o for o in options if o not in out]
        return out[:limit]
    return plain


def _latest_plain(u: str, hi, conds, limit: int) -> list:
    equal, congruent, upper, excluded = _constraints(conds, u)
    if equal:
        return [equal[0]]
    top = simplify(BinOp("-", hi, Const(1)))
    for bound in upper:
        top = simplify(Min(bound, top))
    if excluded and not congruent:
        # Each excluded value can push the latest allowed index one step down; the
        # candidates' conditions and the proof pick the right one.
        return [simplify(BinOp("-", top, Const(back))) for back in range(min(len(excluded), limit - 1) + 1)]
    if len(congruent) == 1 and congruent[0][2] is not None:
        m, _, residue = congruent[0]
        return [_closed_latest(top, residue, m) or simplify(BinOp("-", top, BinOp("%", BinOp("-", top, residue), m)))]
    if congruent:
        period = 1
        for m, _, _ in congruent:
            if not isinstance(m, Const) or m.value <= 0:
                return [top]  # the check below rejects what this misses
            period = period * m.value // _gcd(period, m.value)
        if period <= limit:
            return [simplify(BinOp("-", top, Const(back))) for back in range(period)]
    return [top]


def disjuncts(cond) -> list | None:
    """The sides of a disjunction (`a or b`, or `not (a and b)`), each as its list of
    conjuncts; None for a condition that is no disjunction."""
    match cond:
        case Or(left=a, right=b):
            return (disjuncts(a) or [conjuncts(a)]) + (disjuncts(b) or [conjuncts(b)])
        case Not(operand=And(left=a, right=b)):
            return (disjuncts(Not(a)) or [conjuncts(a, False)]) + (disjuncts(Not(b)) or [conjuncts(b, False)])
    return None


def _closed_latest(top, residue, m):
    """The latest u <= top with u % m == residue, without a `%`, when the residue is
    `L % m` and top - L is 0 or -1: then (top - residue) % m = (top - L) % m is 0, or
    m - 1 (m > 0, as the congruence assumes), and u is top, or top - m + 1. The
    multi-buffered slot `a[i % (D + 1)]` read in an earlier iteration is then
    i - D - 1 rather than `i - 1 - (i - 1 - i % (D + 1)) % (D + 1)`, the same value,
    on which Z3's proof of the candidates took seconds (kernels/ring_buffer.sync)."""
    if isinstance(m, Const) or not (isinstance(residue, BinOp) and residue.op == "%" and residue.right == m):
        return None  # (a constant modulus is linear to Z3: the `%` form costs it nothing)
    while isinstance(residue.left, BinOp) and residue.left.op == "%" and residue.left.right == m:
        residue = residue.left  # (L % m) % m = L % m
    gap = simplify(BinOp("-", top, residue.left))
    if gap == Const(0):
        return top
    if gap == Const(-1):
        return simplify(BinOp("+", BinOp("-", top, m), Const(1)))
    return None


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def candidates_of(program: Program, x: Site, y: Site, pair, limit: int, where: tuple = (), project: bool = False) -> list[Candidate]:
    """The candidates for the last x-instance conflicting with y through `pair`, latest
    first. `where`: conditions on x's own indices that the x-instances must meet (a case
    of a piecewise index, cases.py); `project`: also bound each free index by what the
    loops and guards below it imply (cases.project). The plan uses both only where the
    plain analysis failed."""
    ax, ay = pair
    if never_meet(program, pair):
        return []
    depth = common_depth(x, y)
    shared = [(n, s.stmt) for n, s in enumerate(x.trail[:depth]) if isinstance(s.stmt, For)]
    plans = []
    if static_order(x, y) == "before":
        plans.append((depth, {}))
    for n, loop in reversed(shared):
        plans.append((n, {loop.var: Var(loop.var)}))  # this loop's index is free below y's
    out = []
    for fixed_depth, bounded in plans:
        values: dict = {}
        env = {p.name: Var(p.name) for p in program.params}
        for step in x.trail[:fixed_depth]:
            if isinstance(step.stmt, For):
                env[step.stmt.var] = Var(step.stmt.var)
                values[step.stmt.var] = Var(step.stmt.var)
        # Partial candidates (env, values, conditions), latest first; free indices fan out.
        partial = [(env, values, [])]
        for n, step in enumerate(x.trail[fixed_depth:-1], fixed_depth):
            stmt = step.stmt
            grown = []
            for env, values, conditions in partial:
                if isinstance(stmt, If):
                    c = subst(stmt.cond, env)
                    grown.append((env, values, conditions + [c if step.branch else Not(c)]))
                    continue
                u = stmt.var
                lo = simplify(subst(stmt.lo, env))
                hi = simplify(subst(stmt.hi, env))
                if u in bounded:
                    hi = bounded[u]  # an earlier iteration than y's own (which is below hi)
                placeholder = Var(f"{u}#free")
                pending = _pending_conditions(x, n, env, placeholder, u, ax, ay, where, project)
                period = _hidden_period(x, n, ax, ay, limit)
                options = _latest(stmt, f"{u}#free", hi, pending, env, limit)
                if project and u not in bounded and isinstance(lo, Const) and isinstance(hi, Const) \
                        and 0 < hi.value - lo.value <= limit:
                    # A short constant range: every value, latest first (the second analysis:
                    # an overlap with a symbolic coefficient, `r * (NK // 2) <= c`, solves for none).
                    options, period = [Const(v) for v in range(hi.value - 1, lo.value - 1, -1)], 1
                for latest in options:
                    for back in range(period):
                        chosen = latest if back == 0 else simplify(BinOp("-", latest, Const(back)))
                        grown.append(({**env, u: chosen}, {**values, u: chosen},
                                      conditions + [Compare("<=", lo, chosen), Compare("<", chosen, hi)]))
            partial = grown[:limit]
        for env, values, conditions in partial:
            conditions = conditions + [subst(w, env) for w in where] + [c for ix, iy in zip(ax.indices, ay.indices)
                                       for c in overlap_conditions(_subst_index(ix, env), iy)]
            condition = conjoin([simplify_cond(c) for c in conditions])
            out.append(Candidate(condition, values, fixed_depth if fixed_depth == depth else _step_depth(x, bounded)))
    return out


def _subst_index(index, env):
    if isinstance(index, Range):
        return Range(subst(index.lo, env), subst(index.hi, env))
    return subst(index, env)


def never_meet(program: Program, pair) -> bool:
    """Some dimension of the pair indexes two points that are expressions of parameters
    alone and differ by a nonzero constant: the accesses are disjoint for every value,
    and the pair needs no candidate and no proof."""
    params = {p.name for p in program.params}
    for ix, iy in zip(pair[0].indices, pair[1].indices):
        if isinstance(ix, Range) or isinstance(iy, Range):
            continue
        if any(isinstance(n, Var) and n.name not in params for e in (ix, iy) for n in walk_expr(e)):
            continue
        d = simplify(BinOp("-", ix, iy))
        if isinstance(d, Const) and d.value != 0:
            return True
    return False


def overlap_conditions(ix, iy) -> list:
    """Conditions (IR) under which index ix and index iy share a value: `ix == iy` for
    two points, `lo <= p < hi` for a point in a range, interval overlap for two ranges
    (the same meaning as semantics.symbolic.index_overlap, which the proof uses)."""
    if not isinstance(ix, Range) and not isinstance(iy, Range):
        return [Compare("==", ix, iy)]
    if not isinstance(ix, Range):
        return [Compare("<=", iy.lo, ix), Compare("<", ix, iy.hi)]
    if not isinstance(iy, Range):
        return [Compare("<=", ix.lo, iy), Compare("<", iy, ix.hi)]
    return [Compare("<", ix.lo, ix.hi), Compare("<", iy.lo, iy.hi), Compare("<", ix.lo, iy.hi), Compare("<", iy.lo, ix.hi)]


def _step_depth(x: Site, bounded: dict) -> int:
    (var,) = bounded
    for n, step in enumerate(x.trail):
        if isinstance(step.stmt, For) and step.stmt.var == var:
            return n
    raise AssertionError(var)


def _hidden_period(x: Site, n: int, ax, ay, limit: int) -> int:
    """The period of a residue (`% p`, constant p) in an index equation that also
    involves a loop below the one at trail step n. The outer index cannot see that
    equation; the matching residue recurs within p outer iterations (the residues an
    iteration covers shift by a fixed amount each time), so the latest p are tried."""
    later = {s.stmt.var for s in x.trail[n + 1:-1] if isinstance(s.stmt, For)}
    period = 1
    for ix, iy in zip(ax.indices, ay.indices):
        parts = [*index_exprs(ix), *index_exprs(iy)]
        if not any(mentions(e, v) for e in index_exprs(ix) for v in later):
            continue
        for node in [n for e in parts for n in walk_expr(e)]:
            if isinstance(node, BinOp) and node.op == "%" and isinstance(node.right, Const) and node.right.value > 1:
                period = period * node.right.value // _gcd(period, node.right.value)
    return period if period <= limit else 1


def _pending_conditions(x: Site, n: int, env, placeholder, u, ax, ay, where=(), deep=False):
    """Conditions that constrain the free index u once outer indices are chosen: the
    guards and the non-emptiness of the loops below it, and the index equations, as
    far as they mention no index that is still free below u. A deeper index that an
    index equation pins down (`k == j`) is replaced by its value, so that its loop's
    range constrains u too (`i <= k` becomes `i <= j`)."""
    deeper = [s.stmt for s in x.trail[n + 1:-1] if isinstance(s.stmt, For)]
    later_vars = {loop.var for loop in deeper}
    env_u = {**env, u: placeholder}
    pinned: dict = {}
    for ix, iy in zip(ax.indices, ay.indices):
        if isinstance(ix, Range) or isinstance(iy, Range):
            continue  # only a point equation pins a deeper index down
        for loop in deeper:
            equation = Compare("==", subst(ix, env_u), iy)
            interval = as_interval(simplify_cond(equation), loop.var)
            if interval and interval[0] is not None and interval[1] is not None \
                    and not any(mentions(interval[0], v) for v in later_vars):
                pinned.setdefault(loop.var, interval[0])
    out = []
    for step in x.trail[n + 1:-1]:
        stmt = step.stmt
        if isinstance(stmt, For):
            nonempty = Compare("<", stmt.lo, stmt.hi)
            if not any(mentions(nonempty, v) for v in later_vars):
                out.append(simplify_cond(subst(nonempty, env_u)))
            if stmt.var in pinned:
                # The pinned value is already over the candidate's names (and y's, which
                # may share a loop variable's name with x's): substitute into the bounds only.
                value, names = pinned[stmt.var], {**env_u, **pinned}
                for c in (Compare("<=", subst(stmt.lo, names), value), Compare("<", value, subst(stmt.hi, names))):
                    if not any(mentions(c, v) for v in later_vars):
                        out.append(simplify_cond(c))
        else:
            out += [simplify_cond(subst(c, env_u)) for c in conjuncts(stmt.cond, step.branch)
                    if not any(mentions(c, v) for v in later_vars)]
    for ix, iy in zip(ax.indices, ay.indices):
        if not any(mentions(e, v) for e in index_exprs(ix) for v in later_vars):
            out += [simplify_cond(c) for c in overlap_conditions(_subst_index(ix, env_u), iy)]
    out += [simplify_cond(subst(w, env_u)) for w in where if not any(mentions(w, v) for v in later_vars)]
    if deep:
        # The second analysis also reads an else branch's negated comparison as the
        # comparison it means (`not j > 0` is `j <= 0`: an upper bound on j that pins it
        # to its loop's lower end); only a guess, proved by Z3 like every other.
        out += [negated(c.operand) for c in out if isinstance(c, Not) and isinstance(c.operand, Compare)
                and c.operand.op != "=="]
        out += _projected(x, n, env_u, u, ax, ay, where, placeholder)
    return out


_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "!=": "=="}


def negated(c: Compare) -> Compare:
    """The comparison that `not c` means over the integers."""
    return Compare(_NEGATED[c.op], c.left, c.right)


def _projected(x: Site, n: int, env_u, u, ax, ay, where, placeholder) -> list:
    """Bounds on the free index u implied by the loops, guards, `where` conditions and
    index equations below it, with the deeper indices eliminated (cases.project). The
    deeper indices are renamed first (`v#deep`): y may use the same loop names."""
    deeper = [s.stmt.var for s in x.trail[n + 1:-1] if isinstance(s.stmt, For)]
    names = {**env_u, **{v: Var(f"{v}#deep") for v in deeper}}
    found = []
    for step in x.trail[n + 1:-1]:
        stmt = step.stmt
        if isinstance(stmt, For):
            var = names[stmt.var]
            found += [Compare("<=", subst(stmt.lo, names), var), Compare("<", var, subst(stmt.hi, names))]
        else:
            found += conjuncts(subst(stmt.cond, names), step.branch)
    found += [subst(w, names) for w in where]
    for ix, iy in zip(ax.indices, ay.indices):
        found += overlap_conditions(_subst_index(ix, names), iy)
    found = [simplify_cond(c) for c in found]
    return [c for c in project(found, [f"{v}#deep" for v in deeper]) if mentions(c, placeholder.name)]


def conjoin(conds):
    conds = [c for c in conds if not (isinstance(c, Compare) and c.left == c.right and c.op in ("==", "<=", ">="))]
    if not conds:
        return Compare("==", Const(0), Const(0))
    result = conds[0]
    for c in conds[1:]:
        result = And(result, c)
    return result


# ------------------------------------------------------------ proof by Z3


# Short tries first, each with another random seed: a candidate proof with a non-linear
# index (`(m * NT + n) % 2`) takes Z3 0.2 s or several seconds by the luck of its
# search; a few short deterministic restarts take the luck out of most of them.
SHORT_TRIES = 3
SHORT_RLIMIT = 500_000


def _check_unsat(session: Session, *assertions) -> str | None:
    """None when Z3 proves the assertions unsat within its resource budget (the session's
    `candidate_rlimit`, after SHORT_TRIES seeded tries of SHORT_RLIMIT). The budget is
    deterministic for one query, but Z3's effort also depends on the ids its terms got
    earlier in the process; a query near the budget once ran out after other kernels
    had been planned (tests/data/threshold_cases/flat_index_double_buffer.sync). Each plan
    now has its own Z3 context (its Session), which removed that dependence
    on the process's history, and each query has a solver of its own on
    the plain SMT kernel (`Session.check_alone`), whose only budget is the resource
    limit (`z3.Solver()`'s tactics have wall-clock limits). An exhausted budget is the
    answer, so a question Z3 cannot decide costs one budget per query
    (tests/algorithm/test_planner_z3_budget.py)."""
    for seed in range(SHORT_TRIES):
        result = session.check_seeded(assertions, SHORT_RLIMIT, seed)
        if result == z3.unsat:
            return None
        if result == z3.sat:
            return "z3 found a counterexample"
    result, solver = session.check_alone(assertions, session.candidate_rlimit)
    if result == z3.unsat:
        return None
    if result == z3.sat:
        return "z3 found a counterexample"
    return f"z3: unknown ({solver.reason_unknown()})"


def prove_candidates(session: Session, program: Program, x: Site, y: Site, pair, candidates: list[Candidate],
                      soundness_only: bool = False, where: tuple = ()) -> str | None:
    """None when Z3 proves the candidates exact (or, with soundness_only, just that each
    is an earlier matching instance when its condition holds); else why not. Memoized
    in the session by the shape of the question (algorithm/threshold/shapes.py)."""
    if not candidates and never_meet(program, pair):
        return None  # no conflicting instance at all
    key = pair_shape(program, x, y, pair, candidates, soundness_only, where)
    if key in session.shapes:
        session.shape_hits += 1
        return session.shapes[key]
    answer = session.shapes[key] = _prove(session, program, x, y, pair, candidates, soundness_only, where)
    return answer


def _meets(session: Session, ax, values: dict, ay, r_env, y_env, by_parameter: bool) -> list:
    """The candidate's access and y's touch a common element (semantics.symbolic's
    `same_element`). Where an index divides by a parameter (`by_parameter`: `a[i % (D + 1)]`),
    whose Z3 terms are non-linear: nothing to ask when every index condition simplifies
    to true once the candidate's indices are substituted (`(i - D - 1) % (D + 1) == i % (D
    + 1)`). Else, and for every other index, the Z3 term."""
    if by_parameter and all(folded(simplify_cond(c)) is True for ix, iy in zip(ax.indices, ay.indices)
                            for c in overlap_conditions(_subst_index(ix, values), iy)):
        return []
    return [same_element(ax, r_env, ay, y_env, session.ctx)]


def _divides_by_parameter(access) -> bool:
    return any(isinstance(n, BinOp) and n.op in ("%", "//") and not isinstance(n.right, Const)
               for e in access.indices for part in index_exprs(e) for n in walk_expr(part))


def _simplified_slots(access):
    """The access with its indices simplified (`(i + D) % (D + 1)` is `(i - 1) % (D + 1)`:
    a smaller non-linear term), for an access whose index divides by a parameter."""
    return attrs.evolve(access, indices=tuple(
        Range(simplify(i.lo), simplify(i.hi)) if isinstance(i, Range) else simplify(i) for i in access.indices))


def _prove(session: Session, program: Program, x: Site, y: Site, pair, candidates: list[Candidate],
           soundness_only: bool, where: tuple = ()) -> str | None:
    divides = [_divides_by_parameter(a) for a in pair]
    ax, ay = (_simplified_slots(a) if d else a for a, d in zip(pair, divides))
    ctx = session.ctx
    params = {p.name: session.var(p.name) for p in program.params}
    y_env = {**params, **{l.var: session.var(l.var) for l in y.loops}}
    x_env = {**params, **{l.var: session.var(f"{l.var}@x") for l in x.loops}}
    nonneg = [params[p.name] >= p.lower for p in program.params]  # the declared assumptions
    y_dom = domain(y, y_env, ctx)
    # `where`: the x-instances of one case of a piecewise index (cases.py), over x's names.
    cases = lambda env: [to_z3(w, env, ctx=ctx) for w in where]
    some_x = domain(x, x_env, ctx) + cases(x_env) + [same_element(ax, x_env, ay, y_env, ctx), precedes(x, x_env, y, y_env, ctx)]
    earlier_fail = []
    for candidate in candidates:
        c = session.z(candidate.condition)
        r_env = {**params, **{v: session.z(e) for v, e in candidate.values.items()}}
        valid = z3.And(*domain(x, r_env, ctx), *cases(r_env), *_meets(session, ax, candidate.values, ay, r_env, y_env, any(divides)),
                       precedes(x, r_env, y, y_env, ctx))
        why = _check_unsat(session, *nonneg, *y_dom, c, z3.Not(valid))
        if why:
            return f"a candidate is not always a conflicting earlier instance ({why})"
        if soundness_only:
            continue
        why = _check_unsat(session, *nonneg, *y_dom, *some_x, *earlier_fail, c, precedes(x, r_env, x, x_env, ctx))
        if why:
            return f"a later conflicting instance escapes the case analysis ({why})"
        earlier_fail.append(z3.Not(c))
    why = None if soundness_only else _check_unsat(session, *nonneg, *y_dom, *some_x, *earlier_fail)
    if why:
        return f"a conflicting instance escapes the case analysis ({why})"
    return None
