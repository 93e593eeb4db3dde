"""Counting instances in closed form.

The threshold of a wait is a count: how many instances of the producer engine come
before some point in program order. This module builds those counts as expressions:

- `count_upto(body, env, steps, values, targets)`: instances of the target ops that
  one execution of `body` runs before the point `steps` (a trail into `body`, with
  loop index values), by structural recursion: earlier statements in full, earlier
  iterations of an enclosing loop as a sum, then down into the point's statement.
- sums over a loop range are closed forms: a summand free of the loop index gives a
  product, a polynomial of degree <= 2 gives Faulhaber's formulas, and a summand
  guarded by a condition on the index (`j == i`, `i % 2 == 0`, `j < K`, and/or/not
  of those) gives an interval or congruence count. `min`/`max`/`if` terms are first
  resolved with Z3 under the facts of the context (loop ranges, guards, parameters
  >= 0) where one side provably applies. Anything else raises `Unsupported`.
"""

from __future__ import annotations

import bisect

from semantics.ir import (
    BinOp, Compare, Const, For, If, IfExpr, Not, Op, Var,
)
from semantics.simplify import cond as simplify_cond, simplify
from semantics.context import Step
from algorithm.threshold.facts import (  # noqa: F401 (re-exported: the algorithm's modules import them from here)
    Facts, Session, Unsupported, mentions, nonneg_diff, param_bounds, refine, refine_cond, subst, tidy,
)
from algorithm.threshold.sums import as_congruence, as_interval, guard_count, loop_sum  # noqa: F401

# --------------------------------------------------------- structural counts


def full_count(body, env: dict, targets: frozenset[str], facts: Facts):
    """Target instances one execution of `body` runs, under loop/param values `env`
    (memoized in the session: the same statements, values, targets and facts give the
    same count)."""
    memo = facts.session.counts
    key = (tuple(id(s) for s in body), tuple(sorted(env.items(), key=_first)), targets, facts._key)
    hit = memo.get(key)
    if hit is not None:
        return hit[1]
    total = Const(0)
    for stmt in body:
        total = BinOp("+", total, _stmt_count(stmt, env, targets, facts))
    result = tidy(total, facts)
    # The statements stay alive while their ids are keys.
    memo[key] = (tuple(body), result)
    return result


def _first(item):
    return item[0]


def _stmt_count(stmt, env, targets, facts):
    match stmt:
        case Op(name=name):
            return Const(1 if name in targets else 0)
        case If(cond=c, then=then, else_=else_):
            if not _has_target(stmt, targets, facts.session):
                return Const(0)
            c = simplify_cond(subst(c, env))
            if facts.proves(c):
                return full_count(then, env, targets, facts)
            if facts.proves(Not(c)):
                return full_count(else_, env, targets, facts)
            return IfExpr(c, full_count(then, env, targets, facts.with_(c)),
                          full_count(else_, env, targets, facts.with_(Not(c))))
        case For(var=var, lo=lo, hi=hi, body=inner):
            if not _has_target(stmt, targets, facts.session):
                return Const(0)
            lo, hi = simplify(subst(lo, env)), simplify(subst(hi, env))
            w = summed_index(var)
            inner_facts = facts.with_(Compare("<=", lo, Var(w)), Compare("<", Var(w), hi))
            summand = full_count(inner, {**env, var: Var(w)}, targets, inner_facts)
            if loop_target(var) in targets:  # counting the iterations of this loop
                summand = simplify(BinOp("+", summand, Const(1)))
            return loop_sum(summand, w, lo, hi, facts)
    return Const(0)


def summed_index(var: str) -> str:
    """The name of loop `var`'s index while its iterations are summed over. Loop
    variables are unique in a kernel and a loop never sums over itself, so one name
    per loop is never bound twice in one chain of facts; the same count asked twice
    is then the same question (memo hits in `full_count` and `Facts.proves`, where a
    counter-numbered name made every question new)."""
    return f"{var}#"


def loop_target(var: str) -> str:
    """The target name that counts the iterations of loop `var` (not an op name)."""
    return f"loop {var}"


def _contents(stmt, session: Session) -> frozenset:
    """Names of the ops and loop targets inside a statement (memoized by identity in
    the session, which keeps the statement alive)."""
    key = id(stmt)
    hit = session.contents.get(key)
    if hit is None or hit[0] is not stmt:
        from semantics.ir import walk_stmts

        names = frozenset(s.name if isinstance(s, Op) else loop_target(s.var)
                          for s in walk_stmts((stmt,)) if isinstance(s, (Op, For)))
        hit = session.contents[key] = (stmt, names)
    return hit[1]


def _has_target(stmt, targets, session: Session) -> bool:
    return not _contents(stmt, session).isdisjoint(targets)


class PrefixCounts:
    """Cumulative target counts of a program's top-level statements (parameters only,
    so one computation serves every point after them). Only the statements that hold
    a target are summed: a target set of one loop deep in a long program costs one
    statement, not a walk over all statements before it (which made planning
    quadratic in the program length)."""

    def __init__(self, program, session: Session):
        self.session = session
        self.body = program.body
        self.env = {p.name: Var(p.name) for p in program.params}
        self.params = program.params
        self.refresh_facts()
        self._where = {name: index for index, stmt in enumerate(self.body) for name in _contents(stmt, session)}
        self._sums: dict = {}  # targets -> (indices of the statements holding one, cumulative counts)

    def refresh_facts(self) -> None:
        """Rebuild the Z3 facts (after the session starts a fresh Z3 context)."""
        self.facts = self.session.facts(param_bounds(self.params))

    def before(self, index: int, targets: frozenset):
        hit = self._sums.get(targets)
        if hit is None:
            holders = sorted({self._where[name] for name in targets if name in self._where})
            hit = self._sums[targets] = (holders, [Const(0)])
        holders, sums = hit
        wanted = bisect.bisect_left(holders, index)
        while len(sums) <= wanted:
            stmt = self.body[holders[len(sums) - 1]]
            sums.append(simplify(BinOp("+", sums[-1], _stmt_count(stmt, self.env, targets, self.facts))))
        return sums[wanted]


def count_upto(body, env: dict, steps: tuple[Step, ...], values: dict, targets: frozenset[str], facts: Facts,
               prefix: PrefixCounts | None = None):
    """Target instances one execution of `body` runs before the point `steps` (a
    trail into `body` ending at an op, which is not counted); loops on the trail take
    their index from `values`. `prefix` serves the program's top level from a cache."""
    step = steps[0]
    if prefix is not None and body is prefix.body:
        total = prefix.before(step.index, targets)
    else:
        total = full_count(body[: step.index], env, targets, facts)
    stmt = step.stmt
    match stmt:
        case Op():
            return total
        case If():
            c = simplify_cond(subst(stmt.cond, env))
            inner = facts.with_(c if step.branch else Not(c))
            branch = stmt.then if step.branch else stmt.else_
            return simplify(BinOp("+", total, count_upto(branch, env, steps[1:], values, targets, inner)))
        case For(var=var, lo=lo, body=inner_body):
            lo = simplify(subst(lo, env))
            value = values[var]
            w = summed_index(var)
            earlier_facts = facts.with_(Compare("<=", lo, Var(w)), Compare("<", Var(w), value))
            summand = full_count(inner_body, {**env, var: Var(w)}, targets, earlier_facts)
            begun = 1 if loop_target(var) in targets else 0  # the current iteration has begun
            earlier = loop_sum(simplify(BinOp("+", summand, Const(begun))), w, lo, value, facts)
            rest = BinOp("+", count_upto(inner_body, {**env, var: value}, steps[1:], values, targets, facts), Const(begun))
            return simplify(BinOp("+", BinOp("+", total, earlier), rest))
    raise TypeError(f"bad trail step {step!r}")
