"""Deciding a claim under the facts without a solver, where bounds decide it.

The planner's questions are mostly comparisons of affine expressions under the loop
ranges, guards and parameter bounds of a point ("is hi >= lo here?", "is this `min`
always its left side?"). Two cheap procedures answer most of them; what they leave
undecided goes to Z3 (facts.Facts.proves).

- Proof by elimination (Fourier-Motzkin): the claim `L >= 0` follows from a fact
  `F >= 0` that bounds one of L's atoms from the right side: `|f| L - |c| F` no longer
  mentions the atom, and `|f| L >= |f| L - |c| F`, so proving the smaller form proves
  L. Integer tightening keeps each form exact (`g S + k >= 0` iff `S + floor(k / g) >= 0`
  for integer S). Atoms are the linear form's monomials: loop indices, parameters,
  tracked counts, and opaque terms with the bounds their meaning gives (`e % m` lies in
  [0, m), `m * (e // m)` within m - 1 below e, `min` below and `max` above each side, for a
  constant m > 0). A bounded search: giving up answers nothing.
- Refutation by a point: integer values for the facts' names, chosen from the ends of
  each name's range given the names before it, at which every fact holds and the claim
  does not (evaluated on the IR, with the meaning Z3 gives it: semantics/symbolic.py).
  Such a point is a model of the query Z3 would be asked, so its answer is known.

Both answers are Z3's own wherever Z3 would answer within its budget: a proof here is
a proof, and a point here is a counterexample.
"""

from __future__ import annotations

import functools
import itertools
from fractions import Fraction
from math import floor, gcd

from semantics.errors import SyncproofError
from semantics.evaluate import shared_evaluation
from semantics.ir import And, BinOp, Compare, Const, Count, Iters, Max, Min, Not, Or, Var, expr_children, map_expr, walk_expr
from semantics.simplify import cond as simplify_cond, folded, linear

PROOF_STEPS = 64  # eliminations tried per claim

_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def decide(conds: tuple, facts: list, claim) -> bool | None:
    """True: the claim follows from the conditions; False: a point satisfies the
    conditions and not the claim; None: undecided here. `facts`: the conditions'
    `inequalities_of` (kept by the caller, which asks many claims under one set)."""
    if proved(facts, claim):
        return True
    if _refuted(conds, facts, claim):
        return False
    return None


def proved(facts: list, claim) -> bool:
    """Whether elimination proves the claim from the facts (`inequalities_of` of the
    conditions): decide's first half, for a caller that needs only proofs."""
    goals = _goals(claim)
    if goals is None:
        return False
    facts = facts + _atom_facts([*facts, *(g for alt in goals for g in alt)])
    return any(all(_proves(g, facts) for g in alternative) for alternative in goals)


# ---------------------------------------------------------------- linear forms


def _form(node) -> dict | None:
    try:
        out = linear(node)
    except TypeError:
        return None
    return {k: v for k, v in out.items() if v != 0}


def _difference(a, b, k=0) -> dict | None:
    """a - b + k as a linear form."""
    la, lb = _form(a), _form(b)
    if la is None or lb is None:
        return None
    out = dict(la)
    for m, v in lb.items():
        out[m] = out.get(m, 0) - v
    out[None] = out.get(None, 0) + k
    return _tight({m: v for m, v in out.items() if v != 0})


@functools.lru_cache(maxsize=1 << 16)
def _ge(compare) -> tuple | None:
    """A comparison as forms that are each >= 0 exactly when it holds; None for `!=`
    (remembered: the same loop ranges and guards are facts of many points; the forms
    are shared, and never changed)."""
    a, b = compare.left, compare.right
    match compare.op:
        case "<=":
            parts = [_difference(b, a)]
        case "<":
            parts = [_difference(b, a, -1)]
        case ">=":
            parts = [_difference(a, b)]
        case ">":
            parts = [_difference(a, b, -1)]
        case "==":
            parts = [_difference(a, b), _difference(b, a)]
        case _:
            return None
    return None if any(p is None for p in parts) else tuple(parts)


def inequalities_of(conds) -> list:
    """The conjunctive comparisons among the conditions, as forms >= 0 (the others are
    left out: fewer facts prove less, never more)."""
    out = []
    for c in conds:
        match c:
            case And(left=a, right=b):
                out += inequalities_of((a, b))
            case Compare():
                out += _ge(c) or []
            case Not(operand=Compare(op=op, left=a, right=b)) if op != "==":
                out += _ge(Compare(_NEGATED[op], a, b)) or []
    return out


def _goals(claim) -> list | None:
    """The claim as alternatives, each a list of forms that must all be >= 0."""
    match claim:
        case Compare(op="!="):
            return None
        case Compare():
            parts = _ge(claim)
            if parts is None:
                return None
            sides = [g for part in parts for g in _sides(part)]
            return [list(parts)] + ([sides] if len(sides) > len(parts) else [])
        case Not(operand=Compare(op=op, left=a, right=b)) if op != "==":
            return _goals(Compare(_NEGATED[op], a, b))
        case And(left=a, right=b):
            ga, gb = _goals(a), _goals(b)
            if ga is None or gb is None or len(ga) != 1 or len(gb) != 1:
                return None
            return [ga[0] + gb[0]]
        case Or(left=a, right=b):
            ga, gb = _goals(a), _goals(b)
            return None if ga is None or gb is None else ga + gb
    return None


def _sides(form: dict, depth: int = 3) -> list:
    """A form >= 0 with a term `-k * max(a, b)` or `+k * min(a, b)` (k > 0) as the two
    forms with a and with b in its place, each >= 0 (it holds exactly when both do:
    `N - max(N - 1, 0) >= 0`), a few such terms deep. An alternative to the form itself
    (a fact about the `min` as an atom proves the form, not its sides)."""
    for mono, k in form.items():
        if depth and mono is not None and len(mono) == 1 and (
                isinstance(mono[0], Max) and k < 0 or isinstance(mono[0], Min) and k > 0):
            rest = {m: v for m, v in form.items() if m != mono}
            out = []
            for side in (mono[0].left, mono[0].right):
                f = _form(side)
                if f is None:
                    return [form]
                g = dict(rest)
                for m, v in f.items():
                    g[m] = g.get(m, 0) + k * v
                out += _sides(_tight({m: v for m, v in g.items() if v != 0}), depth - 1)
            return out
    return [form]


def _tight(form: dict) -> dict:
    """The integer-tightened form: g S + k >= 0 iff S + floor(k / g) >= 0."""
    coefs = [v for k, v in form.items() if k is not None]
    if not coefs:
        return form
    if any(isinstance(v, Fraction) for v in form.values()):
        scale = 1
        for v in form.values():
            scale = scale * Fraction(v).denominator // gcd(scale, Fraction(v).denominator)
        form = {k: int(v * scale) for k, v in form.items()}
        coefs = [v for k, v in form.items() if k is not None]
    g = 0
    for v in coefs:
        g = gcd(g, v)
    if g <= 1:
        return form
    out = {k: v // g for k, v in form.items() if k is not None}
    rest = floor(Fraction(form.get(None, 0), g))
    if rest:
        out[None] = rest
    return out


def _atom_facts(forms) -> list:
    """What the meaning of the opaque atoms among the forms gives (constant m > 0)."""
    out, seen = [], set()
    for form in forms:
        for mono in form:
            if mono is None or len(mono) != 1 or mono in seen:
                continue
            seen.add(mono)
            (atom,) = mono
            match atom:
                case BinOp(op="%", right=Const(value=m)) if m > 0:
                    out += [{mono: 1}, _tight({mono: -1, None: m - 1})]
                case BinOp(op="//", left=e, right=Const(value=m)) if m > 0:
                    below, above = _difference(e, BinOp("*", Const(m), atom)), _difference(
                        BinOp("*", Const(m), atom), e, m - 1)
                    out += [f for f in (below, above) if f is not None]
                case Min(left=a, right=b):
                    out += [f for f in (_difference(a, atom), _difference(b, atom)) if f is not None]
                case Max(left=a, right=b):
                    out += [f for f in (_difference(atom, a), _difference(atom, b)) if f is not None]
    return out


def _proves(goal: dict, facts: list) -> bool:
    if any(_multiple(goal, f) for f in facts):
        return True
    bounding: dict = {}  # (atom, sign of its coefficient) -> the facts' positions, in order
    for n, f in enumerate(facts):
        for m, v in f.items():
            if m is not None:
                bounding.setdefault((m, v > 0), []).append(n)
    return _eliminate(goal, facts, [PROOF_STEPS], set(), bounding)


def _eliminate(goal: dict, facts: list, budget: list, path: set, bounding: dict) -> bool:
    atoms = [m for m in goal if m is not None]
    if not atoms:
        return goal.get(None, 0) >= 0
    key = frozenset((k, v) for k, v in goal.items() if k is not None)
    if any(k == key and goal.get(None, 0) <= c for k, c in path):
        return False  # (a cycle of eliminations: this goal, or an easier one, is being tried further up)
    budget[0] -= 1
    if budget[0] < 0:
        return False
    path = path | {(key, goal.get(None, 0))}
    # The atom bounded by the latest fact (the innermost loop's index: facts come
    # outermost first), each fact of the right sign tried, latest first; when that atom
    # cannot be eliminated there is no proof this way.
    atom = min(atoms, key=lambda m: -bounding[(m, goal[m] > 0)][-1] if (m, goal[m] > 0) in bounding else 1)
    c = goal[atom]
    for n in reversed(bounding.get((atom, c > 0), ())):
        f = facts[n]
        fc = f[atom]
        smaller: dict = {}
        for k, v in goal.items():
            smaller[k] = smaller.get(k, 0) + abs(fc) * v
        if abs(fc) > 1 and all(type(v) is int for v in goal.values()):
            # (an integer goal g >= 0 is g > -1, that is k * g + k - 1 >= 0 for k >= 1)
            smaller[None] = smaller.get(None, 0) + abs(fc) - 1
        for k, v in f.items():
            smaller[k] = smaller.get(k, 0) - abs(c) * v
        smaller = {k: v for k, v in smaller.items() if v != 0}
        if sum(1 for k in smaller if k is not None) > len(atoms) + 1:
            continue  # growing: another fact may do better
        if _eliminate(_tight(smaller), facts, budget, path, bounding):
            return True
        if budget[0] < 0:
            return False
    return False


def _multiple(goal: dict, fact: dict) -> bool:
    """Whether goal = k * fact + c with k > 0 and c >= 0 (the fact proves the goal)."""
    if len(goal) - (None in goal) != len(fact) - (None in fact):
        return False
    names = [m for m in goal if m is not None]
    if not names or any(m not in fact for m in names):
        return False
    from fractions import Fraction

    k = Fraction(goal[names[0]]) / Fraction(fact[names[0]])
    return k > 0 and all(goal[m] == k * fact[m] for m in names) and goal.get(None, 0) - k * fact.get(None, 0) >= 0




# ---------------------------------------------------------------- residue classes

RESIDUE_CASES = 16  # residue classes tried per claim


def by_residues(conds, claim) -> bool:
    """The claim proved by elimination in each residue class of the names under a
    constant `//` or `%`. With N = 2 N' + r for r in 0, 1, `N // 2` and `(N - 1) % 2` are
    affine in N', and the squares of `(N - 1) // 2` and `N // 2` cancel in a comparison
    of two counts, where Z3's non-linear search can miss it. A class whose conditions
    fold to false needs nothing. Slower than Z3 where Z3 answers: asked after Z3 gives up."""
    periods = _periods((*conds, claim))
    if not periods:
        return False
    total = 1
    for period in periods.values():
        total *= period
    if total > RESIDUE_CASES:
        return False
    for values in _classes(periods):
        case = [simplify_cond(_substituted(c, values)) for c in conds]
        if any(folded(c) is False for c in case):
            continue
        goals = _goals(simplify_cond(_substituted(claim, values)))
        if goals is None:
            return False
        facts = inequalities_of(case)
        facts = facts + _atom_facts([*facts, *(g for alt in goals for g in alt)])
        if not any(all(_proves(g, facts) for g in alternative) for alternative in goals):
            return False
    return True


def residue_classes(nodes, limit: int = RESIDUE_CASES) -> list | None:
    """Each residue class of the names under a constant `//` or `%` of the nodes, as
    values (N -> 2 * N' + r, the name N' fresh); None where there is none or more than
    `limit`."""
    periods = _periods(nodes)
    total = 1
    for period in periods.values():
        total *= period
    return list(_classes(periods)) if periods and total <= limit else None


def _classes(periods: dict):
    """Each residue class of the names, as values: N -> 2 * N' + r."""
    names = sorted(periods)
    for residues in itertools.product(*(range(periods[n]) for n in names)):
        yield {n: BinOp("+", BinOp("*", Const(periods[n]), Var(f"{n}'")), Const(r)) for n, r in zip(names, residues)}


def _periods(nodes) -> dict:
    """name -> the least common multiple of the constant divisors (> 0) of the `//` and
    `%` terms whose operand reads it; empty when some such operand reads a tracked count
    or `iters` (no residue class to split on)."""
    out: dict = {}
    for node in nodes:
        for sub in walk_expr(node):
            if not (isinstance(sub, BinOp) and sub.op in ("//", "%") and isinstance(sub.right, Const)
                    and sub.right.value > 0):
                continue
            for leaf in walk_expr(sub.left):
                if isinstance(leaf, (Iters, Count)):
                    return {}
                if isinstance(leaf, Var):
                    m = out.get(leaf.name, 1)
                    out[leaf.name] = m * sub.right.value // gcd(m, sub.right.value)
    return out


def _substituted(node, values: dict):
    return map_expr(node, lambda sub: values.get(sub.name, sub) if isinstance(sub, Var) else sub)


# ---------------------------------------------------------------- refutation


def _refuted(conds, facts: list, claim) -> bool:
    """Some point satisfies every condition and not the claim."""
    names = []
    for form in facts:
        for mono in form:
            if mono is not None and len(mono) == 1 and isinstance(mono[0], Var) and mono[0].name not in names:
                names.append(mono[0].name)
    seen: set = set()  # (by identity: a large claim shares its sub-terms, a tree walk repeats them)
    stack = list(reversed((*conds, claim)))
    while stack:
        sub = stack.pop()
        if id(sub) in seen:
            continue
        seen.add(id(sub))
        if isinstance(sub, Var):
            if sub.name not in names:
                names.append(sub.name)
        else:
            stack.extend(reversed(expr_children(sub)))
    ranges = _Ranges(names, facts)
    return any(point is not None and refutes_at(conds, claim, point) for point in map(ranges.point, CHOICES))


def refutes_at(conds, claim, env: dict, iters: dict | None = None) -> bool:
    """At the point (`env`, and `iters` for tracked counts) every condition holds and the
    claim does not, in the IR's own meaning (Python's `//` and `%`, as
    semantics/symbolic.py encodes them for Z3): a model of the query Z3 would be asked. A
    point where some term is undefined (a name it does not bind, a division by zero)
    decides nothing."""
    _, holds = shared_evaluation(env, iters)  # (a large claim shares sub-terms: each evaluated once)
    try:
        return not holds(claim) and all(holds(c) for c in conds)
    except (SyncproofError, KeyError, ArithmeticError, TypeError):
        return False


# How a point picks each name's value from its range [lo, hi] (hi None: unbounded),
# given the name's position k: one point per rule, no search. Unbounded names
# (parameters above their lower bounds) go large in some rules, so that the loops under
# them run. Each rule: (for a bounded range, for an unbounded one).
LARGE = 40
CHOICES = (("lo", "lo"), ("hi", "large"), ("lo", "large"), ("mid", "large"), ("hi-1", "lo+1"),
           ("hi-1", "large"), ("lo+1", "large"), ("alternate", "spread"), ("hi", "lo+1"), ("mid", "spread"))


def _pick(rule: str, lo: int, hi, k: int) -> int:
    match rule:
        case "lo":
            return lo
        case "lo+1":
            return lo + 1 if hi is None or lo + 1 <= hi else lo
        case "hi":
            return hi
        case "hi-1":
            return hi - 1 if hi - 1 >= lo else hi
        case "mid":
            return (lo + hi) // 2
        case "alternate":
            return hi if k % 2 else lo
        case "large":
            return lo + LARGE
        case "spread":
            return lo + 2 * k + 3
    raise ValueError(rule)


class _Ranges:
    """Each name's range given the values of the names before it: the facts over names
    only, each filed under its last name (facts over opaque terms only filter points)."""

    def __init__(self, names: list, facts: list):
        self.names = names
        order = {n: k for k, n in enumerate(names)}
        self.by_name: dict = {n: [] for n in names}
        for form in facts:
            atoms = [m for m in form if m is not None]
            if any(len(m) != 1 or not isinstance(m[0], Var) for m in atoms):
                continue
            last = max((m[0].name for m in atoms), key=lambda v: order.get(v, -1), default=None)
            if last in self.by_name:
                c = form[(Var(last),)]
                rest = [(m[0].name, v) for m, v in form.items() if m is not None and m[0].name != last]
                self.by_name[last].append((c, form.get(None, 0), rest))

    def point(self, choose) -> dict | None:
        point: dict = {}
        for k, name in enumerate(self.names):
            lo = hi = None
            for c, const, rest in self.by_name[name]:
                bound = Fraction(-(const + sum(v * point[n] for n, v in rest)), c)  # c * x + rest >= 0
                if c > 0:
                    lo = bound if lo is None or bound > lo else lo
                else:
                    hi = bound if hi is None or bound < hi else hi
            lo = None if lo is None else -floor(-lo)
            hi = None if hi is None else floor(hi)
            if lo is not None and hi is not None and lo > hi:
                return None
            if lo is None:
                lo = 0 if hi is None else hi - LARGE
            bounded, unbounded = choose
            point[name] = _pick(bounded if hi is not None else unbounded, lo, hi, k)
        return point
