"""Conditions and arithmetic for the nest stage (nest.py, nest_pieces.py), and what bounds
prove of them: conditions kept in one spelling (`L >= k`, `L == k`), their conjuncts and
negations, the value a failed condition leaves a variable, and proofs by elimination
(algorithm/threshold/bounds.py) with `e % m` terms and finitely-valued variables taken one
value at a time. No solver."""

from __future__ import annotations

import functools
import itertools

from semantics.errors import Unsupported
from semantics.ir import And, BinOp, Compare, Const, Not, Or, Var, walk_expr
from semantics.simplify import cond as simplify_cond, simplify
from algorithm.threshold.bounds import by_residues, inequalities_of, proved
from algorithm.threshold.case_splits import each_way_of_a_choice, few_values, small_dividend
from algorithm.threshold.divisors import constant_floors, moduli, placed, residue_ranges
from algorithm.threshold.facts import subst

class NotNest(Unsupported):
    """The program leaves the nest stage's class (internal: the later stages take it)."""


TRUE = Compare("==", Const(0), Const(0))
FALSE = Compare("==", Const(0), Const(1))

def minus(a, b):
    return simplify(BinOp("-", a, b))


def plus(a, b):
    return simplify(BinOp("+", a, b))


def product(a, b):
    return simplify(BinOp("*", a, b))


@functools.lru_cache(maxsize=1 << 15)
def settled(c):
    """The condition simplified, TRUE or FALSE where it is constant, its comparisons as
    `L >= k` or `L == k` (one spelling per condition: `NS > 0` is `NS >= 1`)."""
    from semantics.simplify import folded

    c = simplify_cond(c)
    if any(isinstance(n, BinOp) and n.op == "%" and n.left == Const(0) for n in walk_expr(c)):
        from semantics.ir import map_expr  # (`0 % P` is 0: every divisor of the stage is >= 1, nest.check_nest)

        c = simplify_cond(map_expr(c, lambda n: Const(0) if isinstance(n, BinOp) and n.op == "%" and n.left == Const(0) else n))
    value = folded(c)
    if value is not None:
        return TRUE if value else FALSE
    parts = [_divides(normal_compare(k)) for k in conjuncts(c)]
    out = parts[0]
    for k in parts[1:]:
        out = And(out, k)
    return out


def _divides(c):
    """`e % m == 0` with every term of e negative spelled `-e % m == 0` (m divides e exactly
    where it divides -e): `-k % 2 == 0` is `k % 2 == 0`."""
    from semantics.simplify import expr, linear

    if not (isinstance(c, Compare) and c.op == "==" and c.right == Const(0) and isinstance(c.left, BinOp)
            and c.left.op == "%"):
        return c
    form = linear(c.left.left)
    if not form or any(type(v) is not int or v >= 0 for v in form.values()):
        return c
    return Compare("==", simplify(BinOp("%", expr({m: -v for m, v in form.items()}), c.left.right)), Const(0))


def normal_compare(c):
    from semantics.simplify import expr, linear

    if not isinstance(c, Compare) or c.op == "!=":
        return c
    left, right = (c.left, c.right) if c.op in (">=", ">", "==") else (c.right, c.left)
    lin = linear(BinOp("-", left, right))  # lin >= 0, lin > 0 or lin == 0
    if any(type(v) is not int for v in lin.values()):
        return c
    k = -lin.pop(None, 0) + (1 if c.op in (">", "<") else 0)
    if not lin:
        return c
    return Compare("==" if c.op == "==" else ">=", expr(lin), Const(k))


def spelled(c):
    """The condition with each comparison written with the fewest operators: the terms of
    each sign on their own side (`S - i >= 1` is `i < S`, `j - i == 0` is `j == i`)."""
    from semantics.simplify import expr, linear

    if isinstance(c, And):
        return And(spelled(c.left), spelled(c.right))
    if not isinstance(c, Compare) or c.op not in (">=", "=="):
        return c
    lin = linear(BinOp("-", c.left, c.right))  # lin >= 0 or lin == 0
    k = lin.pop(None, 0)
    if any(type(v) is not int for v in lin.values()):
        return c
    pos = {m: v for m, v in lin.items() if v > 0}
    neg = {m: -v for m, v in lin.items() if v < 0}
    if not pos or not neg or k not in (0, -1) or (c.op == "==" and k != 0):
        return c
    small, large = expr(neg), expr(pos)
    return Compare("==" if c.op == "==" else "<=" if k == 0 else "<", small, large)


def conjunction(*conds):
    out = TRUE
    for c in conds:
        out = c if out == TRUE else And(out, c)
    return settled(out)


def disjunction(conds):
    """`c1 or c2 or ...`; TRUE where one is the negation of another (`k % K == 0 or
    k % K != 0`: the two branches of a guard)."""
    spelled = [simplify_cond(c) for c in conds]
    if any(simplify_cond(negated(c)) in spelled for c in spelled if isinstance(c, Compare)):
        return TRUE
    out = conds[0]
    for c in conds[1:]:
        out = Or(out, c)
    return simplify_cond(out)


def conjuncts(c) -> list:
    return conjuncts(c.left) + conjuncts(c.right) if isinstance(c, And) else [c]


_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def negated(c):
    """The condition's negation; `e % m == 0` negated is `e % m >= 1` (and `e % m == m - 1`,
    `e % m <= m - 2`), which bounds can use."""
    if isinstance(c, Compare) and c.op == "==" and isinstance(c.left, BinOp) and c.left.op == "%" \
            and isinstance(c.left.right, Const) and isinstance(c.right, Const) and c.left.right.value > 1:
        m, k = c.left.right.value, c.right.value
        if k == 0:
            return Compare(">=", c.left, Const(1))
        if k == m - 1:
            return Compare("<=", c.left, Const(m - 2))
    return Compare(_NEGATED[c.op], c.left, c.right) if isinstance(c, Compare) else simplify_cond(Not(c))


def pin(c, lowers: dict) -> dict:
    """{v: value} when `c` (over one variable) leaves v only its lower bound."""
    from semantics.simplify import linear

    if not isinstance(c, Compare) or c.op not in ("<", "<=", ">", ">="):
        return {}
    left, right = (c.left, c.right) if c.op in ("<", "<=") else (c.right, c.left)
    lin = linear(BinOp("-", left, right))  # lin < 0 or lin <= 0
    terms = [(k, v) for k, v in lin.items() if k is not None]
    if len(terms) != 1 or terms[0][1] != 1 or len(terms[0][0]) != 1 or not isinstance(terms[0][0][0], Var):
        return {}
    var = terms[0][0][0].name
    bound = -lin.get(None, 0) - (1 if c.op in ("<", ">") else 0)  # var <= bound
    return {var: Const(bound)} if lowers.get(var) == bound else {}


def proves(facts: list, claim) -> bool:
    """`_proves`, remembered: the nest stage asks the same question again across pieces
    and forms (a pure function of its IR arguments, so the answer never depends on what
    was asked before)."""
    return _remembered(tuple(facts), claim)


@functools.lru_cache(maxsize=1 << 14)
def _remembered(facts: tuple, claim) -> bool:
    return _proves(list(facts), claim)


def _proves(facts: list, claim) -> bool:
    """`_by_bounds`, and where it fails under a fact `a % m != b % m` (a condition the
    stage wrote as failed: bounds read no `!=`), each residue class of the names under a
    constant `%` in turn (bounds.by_residues: `(i - 1 - m) % 2` is 0 where `m % 2 != i %
    2`)."""
    if FALSE in facts or _by_bounds(facts, claim):  # (a fact settled false: nowhere to refute the claim)
        return True
    if any(_residue_disequality(f) for f in facts) and by_residues(facts, claim):
        return True
    return each_way_of_a_choice(facts, claim)


def _residue_disequality(c) -> bool:
    return isinstance(c, Compare) and c.op == "!=" and any(
        isinstance(n, BinOp) and n.op == "%" and isinstance(n.right, Const) for n in walk_expr(c))


def _by_bounds(facts: list, claim) -> bool:
    """Whether bounds prove the claim under the facts, the `e % m` terms of the claim (m
    at most 4, two of them at most) taken one value at a time where the claim needs it:
    a claim that holds for every value of such a term holds. An `if`-expression of the
    claim is taken each way its condition goes."""
    from semantics.ir import IfExpr, map_expr
    from semantics.printer import print_expr

    if any(isinstance(simplify(a.left), Const) for a in moduli(claim)):
        claim = settled(constant_floors(claim, lambda c: proves(facts, c)))
        small = small_dividend(facts, claim)
        if small is not None:  # (`1 // K`: K = 1, or K >= 2 where it is placed)
            name, k = small
            above = [*facts, Compare(">=", Var(name), Const(k + 1))]
            return proves([settled(constant_floors(f, lambda c: proves(above, c))) for f in above], claim) and all(
                proves([settled(subst(f, {name: Const(v)})) for f in facts], settled(subst(claim, {name: Const(v)})))
                for v in range(1, k + 1))
    choice = next((n for n in walk_expr(claim) if isinstance(n, IfExpr)), None)
    if choice is not None:  # each way its condition goes (every `if` of that condition at once)
        c = choice.cond
        return all(proves([*facts, way], settled(map_expr(claim, lambda n: (n.then if taken else n.else_)
                                                          if isinstance(n, IfExpr) and n.cond == c else n)))
                   for way, taken in ((settled(c), True), (settled(negated(c)), False))
                   if way != FALSE and not _excluded(way, facts))
    forms = inequalities_of([*facts, *residue_ranges(facts, claim)])
    if proved(forms, claim):
        return True
    few = few_values(facts, claim)
    if few is not None:  # (a product with an index of a few values: each value in turn)
        name, values = few
        return all(proves([settled(subst(f, {name: Const(v)})) for f in facts], settled(subst(claim, {name: Const(v)})))
                   for v in values)
    atoms = sorted({n for n in walk_expr(claim) if isinstance(n, BinOp) and n.op == "%"
                    and isinstance(n.right, Const) and 0 < n.right.value <= 4}, key=print_expr)
    if not atoms or len(atoms) > 2:
        return False
    for values in itertools.product(*(range(a.right.value) for a in atoms)):
        at = dict(zip(atoms, values))
        case = settled(map_expr(claim, lambda n: Const(at[n]) if n in at else n))
        if case == TRUE or proved(forms, case):
            continue
        known = [settled(map_expr(f, lambda n: Const(at[n]) if n in at else n)) for f in facts]  # (the term's value in them too)
        if FALSE not in known and not proved(inequalities_of(known), case):
            return False
    return True


def _excluded(way, facts: list) -> bool:
    """Whether a fact is the negation of the way an `if` goes (`a != b` of `a == b`, as
    spelled either side of settling): that way holds nowhere the facts do."""
    return settled(negated(way)) in facts or (isinstance(way, Compare) and way.op == "==" and any(
        isinstance(f, Compare) and f.op == "!=" and settled(Compare("==", f.left, f.right)) == way for f in facts))


def residue(e, p, facts):
    """`e % p`; for a divisor over parameters (>= 1) and e a constant k, its value where
    the facts place k in 0 .. p - 1 or -p .. -1 (`_placed`)."""
    if isinstance(p, int):
        return simplify(BinOp("%", e, Const(p)))
    e = simplify(e)
    value = placed(e, p, lambda c: proves(facts, c)) if isinstance(e, Const) else None
    return value if value is not None else simplify(BinOp("%", e, p))


def refuted(facts: list, c) -> bool:
    """Whether bounds prove the condition false under the facts (an equation: its
    left side above or below its right; `a != b`: the equation)."""
    if isinstance(c, Compare) and c.op == "==":
        return proves(facts, Compare(">", c.left, c.right)) or proves(facts, Compare("<", c.left, c.right))
    return isinstance(c, Compare) and proves(facts, settled(negated(c)))


def contradictory(conds: list, facts: list, lowers: dict) -> bool:
    """Whether bounds show that the conditions cannot all hold under the facts (a
    condition that leaves a variable only its lower bound substituted first)."""
    where = _values(conds, {}, lowers, facts)
    if where:
        conds = [settled(subst(c, where)) for c in conds]
        facts = [*facts, *(Compare("==", Var(v), e) for v, e in where.items())]
    if FALSE in conds:
        return True
    return any(refuted([*facts, *conds[:k], *conds[k + 1:]], c) for k, c in enumerate(conds))


def proves_where(claim, missing: list, domain, pins, lowers) -> bool:
    """Whether bounds prove `claim` where the conditions `missing` and the pins hold: one
    value at a time for a variable that one of the conditions leaves finitely many (at
    most 6) values above its lower bound."""
    where = _values(missing, pins, lowers, domain)
    at = settled(subst(claim, where)) if where else claim
    def at_values(c):
        return settled(subst(c, where)) if any(isinstance(n, Var) and n.name in where for n in walk_expr(c)) else c

    facts = [*map(at_values, domain), *map(at_values, missing), *(Compare("==", Var(v), e) for v, e in where.items())]
    if at == TRUE or proves([f for f in facts if f != TRUE], at):
        return True
    for m in missing:
        few = finite_values(m, domain, lowers)
        if few is not None and few[0] not in where:
            var, values = few
            return all(proves_where(claim, [*missing, Compare("==", Var(var), Const(v))], domain,
                                     {**where, var: Const(v)}, lowers) for v in values)
    from semantics.ir import map_expr

    for k, m in enumerate(missing):  # a condition with an `e % p` term: each value of the term
        atom = next((n for n in walk_expr(m) if isinstance(n, BinOp) and n.op == "%" and isinstance(n.right, Const)
                     and 1 < n.right.value <= 4), None)
        if atom is not None:
            cases = [settled(map_expr(m, lambda n: Const(v) if n == atom else n)) for v in range(atom.right.value)]
            return all(c == FALSE or proves_where(claim, [*missing[:k], c, *missing[k + 1:]],
                                                  [*domain, Compare("==", atom, Const(v))], pins, lowers)
                       for v, c in enumerate(cases))
    return False


def _values(conds, pins: dict, lowers: dict, more_conds=()) -> dict:
    """The pins, with each variable the conditions leave one value (`-i >= 0` from 0,
    `-i == 0`: i = 0), and then what `more_conds` leave one value at those (`j < i + 1` at
    i = 0: j = 0), a few rounds over."""
    where = dict(pins)
    for c in conds:
        where.update({v: e for v, e in (*pin(c, lowers).items(), *fixed_value(c).items()) if v not in where})
    conds = [*conds, *more_conds]
    for _ in range(3):
        if not where:
            break
        more = {}
        for f in conds:
            if any(isinstance(n, Var) and n.name in where for n in walk_expr(f)):
                f = settled(subst(f, where))
                more.update({v: e for v, e in (*pin(f, lowers).items(), *fixed_value(f).items()) if v not in where})
        if not more:
            break
        where.update(more)
    return where


def fixed_value(c) -> dict:
    """{v: value} for an equation `a * v == k` of one variable (a = +-1)."""
    from semantics.simplify import linear

    if not isinstance(c, Compare) or c.op != "==" or not isinstance(c.right, Const):
        return {}
    lin = linear(c.left)
    if len(lin) != 1 or None in lin:
        return {}
    (mono, a), = lin.items()
    if len(mono) != 1 or not isinstance(mono[0], Var) or a not in (1, -1):
        return {}
    return {mono[0].name: Const(a * c.right.value)}


def finite_values(c, domain, lowers: dict):
    """(v, values) when `c` is over one variable v with a lower bound and holds at finitely
    many values (at most 6 over the bound): bounds prove it false from some point on."""
    from semantics.simplify import folded

    names = {n.name for n in walk_expr(c) if isinstance(n, Var)}
    if len(names) != 1 or not isinstance(c, Compare):
        return None
    (var,) = names
    low = lowers.get(var)
    if low is None:
        return None
    for top in range(low + 1, low + 7):
        if proves([*domain, Compare(">=", Var(var), Const(top))], negated(c)):
            return var, [v for v in range(low, top) if folded(subst(c, {var: Const(v)})) is not False]
    return None
