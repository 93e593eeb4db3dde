"""Guards in the nest stage (nest.py): each `if` condition is over at most one loop
index u, in one of the shapes below, or over parameters only.

- `u >= e`, `u <= e`, `u == e`, `u != e`: u with slope +-1 beside an expression e over
  parameters (a comparison such as `r + 1 < RT`);
- `u % p` in a set of residues: an expression periodic in u compared with a constant
  (`c % 2 == 0`, and its `else`).

What the stage asks of a guard: how many iterations of a range satisfy it (a count with
`if`-expressions where bounds cannot tell, `count_where`), and the largest value of the
index below a bound that satisfies it (nest.py). A count's `if`-expressions are decided
where a piece's conditions tell which way they go (`decided`).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import attrs

from semantics.errors import Unsupported
from semantics.ir import BinOp, Compare, Const, IfExpr, Max, Min, Not, Var, walk_expr
from semantics.simplify import expr, linear, simplify
from algorithm.threshold.reasoning import (
    FALSE, TRUE, NotNest, minus, negated, plus, product, proves, refuted, settled,
)


@attrs.frozen
class Guard:
    """`var op bound` (op one of >= <= == !=), or `var % period in residues` (op "mod")."""

    var: str
    op: str
    bound: object = None
    residues: frozenset = frozenset()
    period: int = 1
    cond: object = None  # (a period over the parameters: the condition as written, over var)


def guard_of(cond, branch: bool, loop_vars) -> Guard | object:
    """The guard an `if` puts on its branch: a Guard over the innermost loop index it
    reads (`loop_vars` outermost first; the outer ones are part of its bound, as the
    parameters are), the condition itself (settled) when it reads no loop index, or
    NotNest."""
    from algorithm.threshold import guards as periodic

    c = settled(cond)
    if c in (TRUE, FALSE):
        return c if branch else (FALSE if c == TRUE else TRUE)
    names = {n.name for n in walk_expr(c) if isinstance(n, Var)}
    loop_names = names & set(loop_vars)
    if not loop_names:
        return c if branch else settled(negated(c))
    var = [v for v in loop_vars if v in loop_names][-1]  # the innermost: the others are fixed around it
    if names == {var}:
        try:
            found = periodic.guard_of(cond, var)  # (the closed stage's: residues of var)
        except Unsupported:
            pass
        else:
            holds = found.residues if branch else frozenset(range(found.period)) - found.residues
            return Guard(var, "mod", residues=holds, period=found.period)
    zero = _at_zero(c, var, set(loop_vars))
    periodic_guard = _parameter_period(zero, var, set(loop_vars), branch, cond if zero is c else zero)
    if periodic_guard is not None:
        return periodic_guard
    one = _one_residue(c, var, set(loop_vars))
    if one is not None:  # (`k % K < 1` is `k % K == 0`)
        return guard_of(one, branch, loop_vars)
    if isinstance(c, Not):  # (`not c` taken is c not taken)
        return guard_of(c.operand, not branch, loop_vars)
    if isinstance(c, Compare) and c.op == "!=":  # (`a != b` taken is `a == b` not taken)
        return guard_of(Compare("==", c.left, c.right), not branch, loop_vars)
    if not isinstance(c, Compare) or c.op not in (">=", "==") or not isinstance(c.right, Const):
        raise NotNest("a guard that is not a comparison over one loop index")
    lin = linear(c.left)
    slope = lin.pop((Var(var),), 0)
    if slope not in (1, -1) or any(isinstance(n, Var) and n.name == var for k in lin if k is not None
                                   for a in k for n in walk_expr(a)):
        raise NotNest("a guard with a loop index of slope other than +-1")
    e = simplify(product(Const(slope), minus(c.right, expr(lin))))  # the comparison is `var op e`
    op = {"==": "==", ">=": ">=" if slope == 1 else "<="}[c.op]
    if not branch:
        op = {"==": "!=", ">=": "<=", "<=": ">="}[op]
        e = minus(e, Const(1)) if op == "<=" else plus(e, Const(1)) if op == ">=" else e
    return Guard(var, op, e)


def parameter_residue(c, var: str, loop_vars: set):
    """(d, P, e) for a condition `(u + d) % P == e` (any spelling with the `%` term once),
    P and e over the parameters, d too, P not a constant; else None."""
    if not isinstance(c, Compare) or c.op != "==":
        return None
    lin = linear(BinOp("-", c.left, c.right))
    found = _residue_term(lin, var)
    if found is None:
        return None
    mono, k = found
    atom = mono[0]
    rest = {m: v for m, v in lin.items() if m != mono}
    e = simplify(expr({m: -k * v for m, v in rest.items()}))  # k * (L % P) + rest == 0
    inner = linear(atom.left)
    if inner.pop((Var(var),), 0) != 1 or isinstance(simplify(atom.right), Const) \
            or any(_reads(x, loop_vars) for x in (atom.right, e, expr(inner))):
        return None
    return simplify(expr(inner)), simplify(atom.right), e


def _parameter_period(c, var: str, loop_vars: set, branch: bool, written=None) -> Guard | None:
    """`(u + d) % P == e` with a period P and a residue e over the parameters (d too):
    the Guard of u's residue `e - d` modulo P (P >= 1 and 0 <= e <= P - 1 are the
    class check's to prove: check_nest), or where not taken of every other residue
    (op "!mod"); None for any other shape."""
    found = parameter_residue(c, var, loop_vars)
    if found is None:
        return None
    d, period, e = found
    written = written if isinstance(written, Compare) and written.op == "==" else c
    return Guard(var, "mod" if branch else "!mod", residues=frozenset({simplify(minus(e, d))}), period=period,
                 cond=written if branch else Compare("!=", written.left, written.right))


def _at_zero(c, var: str, loop_vars: set):
    """`(u + d) % P == P - k` (k a positive constant) written `(u + d + k) % P == 0`: one
    residue spelled one way, so that counts and conditions at neighbouring values of u
    share their terms; any other condition as it is."""
    found = parameter_residue(c, var, loop_vars)
    if found is None:
        return c
    d, period, e = found
    k = minus(period, e)
    if not isinstance(k, Const) or k.value < 1:
        return c
    return Compare("==", simplify(BinOp("%", plus(plus(Var(var), d), k), period)), Const(0))


def _one_residue(c, var: str, loop_vars: set):
    """The equation or its negation that a bound on `(u + d) % P` (P over the
    parameters) states where it leaves one residue in or out: `x <= 0` is `x == 0`,
    `x >= 1` is `x != 0`, `x >= P - 1` is `x == P - 1`, `x <= P - 2` is `x != P - 1`;
    None for any other condition."""
    if not isinstance(c, Compare) or c.op != ">=":  # (settled: `lin >= k`)
        return None
    lin = linear(BinOp("-", c.left, c.right))
    found = _residue_term(lin, var)
    if found is None or isinstance(simplify(found[0][0].right), Const):
        return None
    mono, k = found
    x, period = mono[0], mono[0].right
    rest = simplify(expr({m: v for m, v in lin.items() if m != mono}))
    if _reads(rest, loop_vars):
        return None
    last = minus(period, Const(1))
    if k == 1:  # x >= -rest
        at = simplify(minus(Const(0), rest))
        return Compare("!=", x, Const(0)) if at == Const(1) else Compare("==", x, last) if minus(at, last) == Const(0) else None
    return Compare("==", x, Const(0)) if rest == Const(0) else \
        Compare("!=", x, last) if minus(rest, minus(period, Const(2))) == Const(0) else None  # (x <= rest)


def _residue_term(lin: dict, var: str):
    """(monomial, coefficient) of the one `e % P` term over u of a linear form, its
    coefficient +-1; None where there are several or none."""
    terms = [(m, k) for m, k in lin.items() if m is not None and len(m) == 1 and isinstance(m[0], BinOp)
             and m[0].op == "%" and _reads(m[0].left, {var})]
    return terms[0] if len(terms) == 1 and terms[0][1] in (1, -1) else None


def _reads(e, names: set) -> bool:
    return any(isinstance(n, Var) and n.name in names for n in walk_expr(e))


def period_of(g: Guard):
    """The guard's period as an expression (a constant, or over the parameters)."""
    return Const(g.period) if isinstance(g.period, int) else g.period


def residue_of(r):
    """A residue of a guard as an expression."""
    return Const(r) if isinstance(r, int) else r


def holds_at(g: Guard, value):
    """The guard's condition with its index at `value`."""
    if g.cond is not None:  # (a period over the parameters: the condition as written, or its else)
        from algorithm.threshold.facts import subst

        return g.cond if value == Var(g.var) else settled(subst(g.cond, {g.var: value}))
    if g.op == "mod":
        if len(g.residues) == 0:
            return FALSE
        if isinstance(g.period, int) and len(g.residues) == g.period:
            return TRUE
        if len(g.residues) > 1:
            raise NotNest("a guard that holds at several residues")
        (r,) = g.residues
        return settled(Compare("==", BinOp("%", value, Const(g.period)), Const(r)))
    return settled(Compare(g.op, value, g.bound))


def count_where(g: Guard, start, stop):
    """How many u in start .. stop - 1 satisfy the guard (start <= stop), with
    `if`-expressions where the range and the guard's bound may lie either way."""
    from semantics.ir import BinOp

    length = minus(stop, start)
    match g.op:
        case ">=":
            return simplify(IfExpr(Compare("<=", g.bound, start), length,
                                   IfExpr(Compare(">=", g.bound, stop), Const(0), minus(stop, g.bound))))
        case "<=":
            return simplify(IfExpr(Compare(">=", g.bound, minus(stop, Const(1))), length,
                                   IfExpr(Compare("<", g.bound, start), Const(0), minus(plus(g.bound, Const(1)), start))))
        case "==":
            return simplify(IfExpr(Compare("<=", start, g.bound),
                                   IfExpr(Compare("<", g.bound, stop), Const(1), Const(0)), Const(0)))
        case "!=":
            return minus(length, count_where(attrs.evolve(g, op="=="), start, stop))
        case "!mod":  # (every residue but r: `if k % K != 0`, as a sum over k counts it)
            return simplify(minus(length, count_where(attrs.evolve(g, op="mod", cond=None), start, stop)))
        case "mod" if not isinstance(g.period, int):
            # u == r (mod P) in [s, t), P over the parameters (>= 1): ceil((t - r) / P) -
            # ceil((s - r) / P), as (t - r + P - 1) // P - (s - r + P - 1) // P (a residue
            # `K - 1` leaves `t // K - s // K`)
            (r,) = g.residues
            shift = plus(minus(g.period, r), Const(-1))
            return simplify(minus(BinOp("//", plus(stop, shift), g.period), BinOp("//", plus(start, shift), g.period)))
        case "mod":
            # u == r (mod p) in [s, t): ceil((t - r) / p) - ceil((s - r) / p)
            #   = (r - s) // p - (r - t) // p (floors a sum over t can take: reasoning.power_sum)
            total = Const(0)
            for r in sorted(g.residues):
                total = plus(total, minus(BinOp("//", minus(residue_of(r), start), period_of(g)),
                                          BinOp("//", minus(residue_of(r), stop), period_of(g))))
            return simplify(total)
    raise AssertionError(g.op)


def decided(value, facts: list, by_bounds: bool = True):
    """The value with each `if`-expression whose condition bounds decide under the facts
    replaced by its branch, and each `min`/`max` they decide by its side (the others kept);
    `by_bounds=False`: only conditions among the facts, or negated there, decided."""
    if not any(isinstance(n, (IfExpr, Min, Max)) for n in walk_expr(value)):
        return value
    return _decided(value, tuple(facts), by_bounds)


@functools.lru_cache(maxsize=1 << 12)
def _decided(value, facts: tuple, by_bounds: bool):
    """`decided`, remembered (a pure function of its IR arguments, as `proves` is: the
    stage asks it again across candidates and pieces)."""
    from semantics.ir import map_expr

    known = {settled(f) for f in facts}

    def decide(n):
        if isinstance(n, (Min, Max)) and by_bounds:  # (bounds know min(a, b) <= a, b: a side at most the other is it)
            small, large = (n.left, n.right) if isinstance(n, Min) else (n.right, n.left)
            if proves(facts, Compare("<=", small, large)):
                return n.left
            if proves(facts, Compare("<=", large, small)):
                return n.right
            return n
        if not isinstance(n, IfExpr):
            return n
        c = settled(n.cond)
        negation = settled(negated(c)) if c not in (TRUE, FALSE) else None
        if c == TRUE or c in known or (by_bounds and c != FALSE and proves(facts, c)):
            return n.then
        if c == FALSE or negation in known or (by_bounds and refuted(facts, c)):
            return n.else_
        if by_bounds and proves([*facts, c], Compare("==", n.then, n.else_)):
            return n.else_  # (equal where the condition holds)
        return n
    return _gathered(simplify(map_expr(value, decide)))


def _gathered(value):
    """The value with its terms `k * (if c then a else b)` of one condition c gathered
    into one `if c then sum(k * a) else sum(k * b)` (equal branches then fold away), and
    a constant beside one such term taken into its branches."""
    lin = linear(value)
    terms = [m for m in lin if m is not None]
    if len(terms) == 1 and len(terms[0]) == 1 and isinstance(terms[0][0], IfExpr) and lin[terms[0]] == 1 and lin.get(None):
        (atom,), k = terms[0], Const(lin[None])  # `(if c then a else b) + k`: the k inside
        return simplify(IfExpr(atom.cond, plus(atom.then, k), plus(atom.else_, k)))
    by_cond: dict = {}
    for mono, coef in lin.items():
        if mono is not None and len(mono) == 1 and isinstance(mono[0], IfExpr):
            by_cond.setdefault(mono[0].cond, []).append((mono, coef))
    if all(len(terms) == 1 for terms in by_cond.values()):
        return value
    for c, terms in by_cond.items():
        if len(terms) == 1:
            continue
        then = else_ = Const(0)
        for mono, coef in terms:
            del lin[mono]
            then = plus(then, product(Const(coef), mono[0].then))
            else_ = plus(else_, product(Const(coef), mono[0].else_))
        lin[None] = lin.get(None, 0)
        value_of = simplify(IfExpr(c, then, else_))
        for k, v in linear(value_of).items():
            lin[k] = lin.get(k, 0) + v
    return simplify(expr(lin))


def parity_square_free(value):
    """The value with each power of a term `e % 2` written as the term itself (it is 0 or
    1: `(e % 2) * (e % 2)` is `e % 2`), so that sums over an index at a parity cancel."""
    from semantics.ir import BinOp

    if not any(isinstance(n, BinOp) and n.op == "%" and n.right == Const(2) for n in walk_expr(value)):
        return value
    out: dict = {}
    changed = False
    for mono, coef in linear(value).items():
        if mono is not None:
            kept = []
            for a in mono:
                if isinstance(a, BinOp) and a.op == "%" and a.right == Const(2) and a in kept:
                    changed = True
                    continue
                kept.append(a)
            mono = tuple(kept)
        out[mono] = out.get(mono, 0) + coef
    return simplify(expr({k: c for k, c in out.items() if c != 0})) if changed else value


def unperiodic(value, facts: list = ()):
    """The value without its `%` terms where it is one polynomial on every residue class
    of their names that the facts allow (`(i - 1) % 3 - ...` counts that are 0 on each
    class), else itself."""
    from semantics.ir import BinOp

    from algorithm.threshold.bounds import residue_classes
    from algorithm.threshold.facts import subst

    if not any(isinstance(n, BinOp) and n.op == "%" for n in walk_expr(value)):
        return value
    classes = residue_classes([value])
    if classes is None:
        return value
    found = None
    from semantics.simplify import cond, folded

    for values in classes:
        if any(folded(cond(subst(f, values))) is False for f in facts):
            continue
        case = simplify(subst(value, values))
        if any(isinstance(n, BinOp) and n.op in ("%", "//") for n in walk_expr(case)):
            return value
        back = {}  # N' = (N - r) / p
        for name, e in values.items():
            p, r = e.left.left.value, e.right.value
            back[f"{name}'"] = BinOp("*", Const(Fraction(1, p)), BinOp("-", Var(name), Const(r)))
        form = linear(subst(case, back))
        form = {k: c for k, c in form.items() if c != 0}
        if found is not None and form != found:
            return value
        found = form
    return value if found is None else simplify(expr(found))


def never(c) -> bool:
    """Whether an equation with `%` terms holds for no integers: on every residue class of
    its names it is an equation `a * q + b == 0` with no integer solution (`i == (i + 1)
    % 2`: 2q == 1 or 2q + 1 == 0)."""
    from semantics.ir import BinOp

    from algorithm.threshold.bounds import residue_classes
    from algorithm.threshold.facts import subst

    if not isinstance(c, Compare) or c.op != "==" or not any(isinstance(n, BinOp) and n.op == "%"
                                                              for n in walk_expr(c)):
        return False
    classes = residue_classes([c.left, c.right])
    if classes is None:
        return False
    for values in classes:
        form = linear(simplify(subst(BinOp("-", c.left, c.right), values)))
        constant = form.pop(None, 0)
        if any(isinstance(n, BinOp) for m in form for a in m for n in walk_expr(a)) \
                or any(type(v) is not int for v in form.values()) or type(constant) is not int:
            return False
        step = 0
        for v in form.values():
            step = math.gcd(step, v)
        if (step == 0 and constant == 0) or (step != 0 and constant % step == 0):
            return False  # (some integers may solve it)
    return True
