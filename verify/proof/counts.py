"""Instance counts in closed form, for every parameter value: the checker's own.

The all-values proof (verify/proof/prove.py) needs local indices (how many instances of
engine F come before an instance, in program order) and tracked iteration counts
(`iters(v)`) as terms over symbolic parameters and loop indices. This module computes
them independently of the threshold algorithm (which has its own counting in
algorithm/threshold/counting.py and must not be trusted here), with sympy polynomials:

- A *count* is a guarded sum `sum_k [conds_k] * value_k`: each piece is a conjunction
  of atoms over integers (`e >= 0` or `e == 0`) and a polynomial value with rational
  coefficients (Faulhaber's sums have them; the value is an integer wherever its
  conditions hold).
- An *expression* (a loop bound) becomes a partition: pieces whose conditions are
  disjoint and cover everything, so `min`, `max` and `if` split the space.
- The count of a statement is structural: an op counts 1 if it is a target; `if`
  guards its branches with its condition; a loop sums its body over its range.
- A sum over a loop index w of a piece turns the piece's atoms on w (coefficient +-1)
  into bounds: w ranges from the largest lower bound to the smallest upper bound;
  every choice of "largest" and "smallest" is its own piece (ties broken by position so
  the choices are disjoint) with the range non-empty, and the polynomial is summed by
  Faulhaber's formulas. Zero-trip loops are the empty-range case: no piece.
- `e // m` and `e % m` with a constant m > 0 and e free of the summed index become
  atoms (fresh symbols, translated back to Z3's floor division). Anything else (an
  index under `//` or `%` inside a sum, a coefficient other than +-1, a non-constant
  divisor) raises `Unsupported`: the proof then says why it fell back.

`to_z3` turns a count into a Z3 integer term, with the symbols of parameters and loop
indices mapped to Z3 terms chosen by the caller (one instance or another).
"""

from __future__ import annotations

import functools
import itertools

import sympy as sp
import z3

from semantics.context import Site
from semantics.errors import SyncproofError
from semantics.ir import (
    And, Barrier, BinOp, Compare, Const, For, If, IfExpr, Iters, Max, Min, Neg, Not, Op, Or, Program, Var,
)
from semantics.symbolic import py_floordiv, py_mod

from verify.engines.deadline import NO_DEADLINE, Deadline

MAX_PIECES = 4_000


class Unsupported(SyncproofError):
    """The counts of this program have no closed form this module can build."""


# An atom: ("ge", e) for e >= 0 or ("eq", e) for e == 0, e an integer-valued sympy expr.
# A piece: (tuple of atoms, sympy value). A count or partition: tuple of pieces.


def sym(name: str) -> sp.Symbol:
    return sp.Symbol(name, integer=True)


class Atoms:
    """The fresh symbols standing for `e // m` and `e % m`, with their definitions."""

    def __init__(self):
        self.defs: dict[sp.Symbol, tuple[str, sp.Expr, int]] = {}
        self._by_key: dict = {}

    def make(self, kind: str, dividend: sp.Expr, divisor: int) -> sp.Symbol:
        key = (kind, sp.expand(dividend), divisor)
        if key not in self._by_key:
            s = sym(f"_{kind}{len(self._by_key)}")
            self._by_key[key] = s
            self.defs[s] = key
        return self._by_key[key]

    def mentions(self, expr: sp.Expr, var: sp.Symbol) -> bool:
        """Does `expr` depend on `var`, also through a floor-division atom?"""
        for s in expr.free_symbols:
            if s == var or (s in self.defs and self.mentions(self.defs[s][1], var)):
                return True
        return False


def _simplify(pieces) -> tuple:
    out = []
    for conds, value in pieces:
        value = sp.expand(value)
        if value == 0:
            continue
        kept, dead = [], False
        for kind, e in conds:
            e = sp.expand(e)
            if e.is_number:
                if (kind == "ge" and e < 0) or (kind == "eq" and e != 0):
                    dead = True
                    break
                continue
            if (kind, e) not in kept:
                kept.append((kind, e))
        if not dead:
            out.append((tuple(kept), value))
    if len(out) > MAX_PIECES:
        raise Unsupported(f"more than {MAX_PIECES} case splits in a count")
    return tuple(out)


def _combine(a, b, fn) -> tuple:
    """Pointwise fn of two partitions."""
    return _simplify((ca + cb, fn(va, vb)) for (ca, va), (cb, vb) in itertools.product(a, b))


def _const(value) -> tuple:
    return (((), sp.Integer(value)),)


# ------------------------------------------------------------------ expressions


def expr(node, env: dict, atoms: Atoms) -> tuple:
    """The partition of an IR expression; names are looked up in `env` (sympy terms)."""
    match node:
        case Const(value=v):
            return _const(v)
        case Var(name=name):
            return (((), env[name]),)
        case Iters():
            raise Unsupported("iters() outside a wait threshold")
        case Neg(operand=a):
            return tuple((c, -v) for c, v in expr(a, env, atoms))
        case BinOp(op=op, left=a, right=b):
            left, right = expr(a, env, atoms), expr(b, env, atoms)
            match op:
                case "+":
                    return _combine(left, right, lambda x, y: x + y)
                case "-":
                    return _combine(left, right, lambda x, y: x - y)
                case "*":
                    return _combine(left, right, lambda x, y: x * y)
                case "//" | "%":
                    def divide(x, y):
                        if not (y.is_Integer and y > 0):
                            raise Unsupported(f"'{op}' by a divisor that is not a positive constant")
                        if x.is_Integer:
                            return sp.Integer(int(x) // int(y) if op == "//" else int(x) % int(y))
                        return atoms.make("fd" if op == "//" else "md", x, int(y))
                    return _combine(left, right, divide)
        case Min(left=a, right=b) | Max(left=a, right=b):
            pieces = []
            for (ca, va), (cb, vb) in itertools.product(expr(a, env, atoms), expr(b, env, atoms)):
                first, second = (va, vb) if isinstance(node, Min) else (vb, va)
                pieces.append((ca + cb + (("ge", vb - va),), first))  # va <= vb
                pieces.append((ca + cb + (("ge", va - vb - 1),), second))
            return _simplify(pieces)
        case IfExpr(cond=c, then=a, else_=b):
            pieces = []
            for guard, branch in ((cond(c, env, atoms, True), a), (cond(c, env, atoms, False), b)):
                for conj in guard:
                    pieces += [(conj + cv, v) for cv, v in expr(branch, env, atoms)]
            return _simplify(pieces)
    raise Unsupported(f"cannot count with {type(node).__name__}")


def cond(node, env: dict, atoms: Atoms, positive: bool) -> list[tuple]:
    """Disjoint conjunctions of atoms whose union is the condition (or its negation)."""
    match node:
        case Compare(op=op, left=a, right=b):
            out = []
            for (ca, va), (cb, vb) in itertools.product(expr(a, env, atoms), expr(b, env, atoms)):
                d = va - vb
                rel = op if positive else {"==": "!=", "!=": "==", "<": ">=", ">=": "<",
                                           ">": "<=", "<=": ">"}[op]
                match rel:
                    case ">=":
                        out.append(ca + cb + (("ge", d),))
                    case ">":
                        out.append(ca + cb + (("ge", d - 1),))
                    case "<=":
                        out.append(ca + cb + (("ge", -d),))
                    case "<":
                        out.append(ca + cb + (("ge", -d - 1),))
                    case "==":
                        out.append(ca + cb + (("eq", d),))
                    case "!=":
                        out += [ca + cb + (("ge", d - 1),), ca + cb + (("ge", -d - 1),)]
            return out
        case Not(operand=a):
            return cond(a, env, atoms, not positive)
        case And(left=a, right=b) | Or(left=a, right=b):
            conj = isinstance(node, And) == positive  # And, or a negated Or: both hold
            first, second = cond(a, env, atoms, positive), cond(b, env, atoms, positive)
            if conj:
                return [x + y for x in first for y in second]
            # a or b == a, plus (not a) and b: disjoint
            return first + [x + y for x in cond(a, env, atoms, not positive) for y in second]
    raise Unsupported(f"cannot count under a {type(node).__name__} condition")


# ------------------------------------------------------------------- summation


@functools.lru_cache(maxsize=None)
def _power_sum(k: int) -> sp.Expr:
    """S_k(n) = sum of w**k for w in 0..n-1, as a polynomial in n."""
    n, w = sym("_n"), sym("_w")
    return sp.expand(sp.summation(w ** k, (w, 0, n - 1)))


def _faulhaber(value: sp.Expr, w: sp.Symbol, lo: sp.Expr, hi: sp.Expr) -> sp.Expr:
    """sum of value for w in lo..hi inclusive (lo <= hi + 1)."""
    poly = sp.Poly(value, w)
    total = sp.Integer(0)
    n = sym("_n")
    for (k,), coeff in poly.terms():
        s = _power_sum(k)
        total += coeff * (s.subs(n, hi + 1) - s.subs(n, lo))
    return sp.expand(total)


def _bound(kind: str, e: sp.Expr, w: sp.Symbol, atoms: Atoms):
    """An atom on w as ('lo'|'hi'|'eq', bound), or None when it does not mention w."""
    if not atoms.mentions(e, w):
        return None
    if any(s in atoms.defs and atoms.mentions(atoms.defs[s][1], w) for s in e.free_symbols):
        raise Unsupported(f"'//' or '%' of the loop index {w}")
    poly = sp.Poly(e, w)
    if poly.degree() != 1:
        raise Unsupported(f"a condition non-linear in the loop index {w}")
    c = poly.coeff_monomial(w)
    rest = sp.expand(e - c * w)
    if c == 1:  # w + rest >= 0 / == 0
        return ("eq" if kind == "eq" else "lo", -rest)
    if c == -1:  # rest - w >= 0 / == 0
        return ("eq" if kind == "eq" else "hi", rest)
    if kind != "eq" and c.is_Integer:
        # c * w + rest >= 0 with |c| > 1 (`if i >= 16 * j`, summed over j): a bound by
        # floor division, an atom over the other names (rest is free of w).
        if c > 0:  # w >= ceil(-rest / c) = -floor(rest / c)
            return ("lo", -_floor_div(rest, int(c), atoms))
        return ("hi", _floor_div(rest, int(-c), atoms))  # w <= floor(rest / -c)
    raise Unsupported(f"a condition with coefficient {c} on the loop index {w}")


def _floor_div(e: sp.Expr, m: int, atoms: Atoms) -> sp.Expr:
    """floor(e / m) for a positive constant m: a number, or a floor-division atom."""
    if e.is_Integer:
        return sp.Integer(int(e) // m)
    return atoms.make("fd", e, m)


def loop_sum(pieces, w: sp.Symbol, lo_part, hi_part, atoms: Atoms) -> tuple:
    """sum over w in [lo, hi) of a count; lo and hi are partitions free of w."""
    out = []
    for (clo, lo), (chi, hi), (conds, value) in itertools.product(lo_part, hi_part, pieces):
        lows, highs, free = [lo], [hi - 1], list(clo + chi)
        for kind, e in conds:
            b = _bound(kind, e, w, atoms)
            if b is None:
                free.append((kind, e))
            else:
                if b[0] in ("lo", "eq"):
                    lows.append(b[1])
                if b[0] in ("hi", "eq"):
                    highs.append(b[1])
        lows = list(dict.fromkeys(sp.expand(x) for x in lows))
        highs = list(dict.fromkeys(sp.expand(x) for x in highs))
        if atoms.mentions(sum(lows) + sum(highs), w):
            raise Unsupported(f"a bound of the loop over {w} depends on {w}")
        for a, la in enumerate(lows):
            for b, ub in enumerate(highs):
                extra = [("ge", la - lk - (1 if k < a else 0)) for k, lk in enumerate(lows) if k != a]
                extra += [("ge", uk - ub - (1 if k < b else 0)) for k, uk in enumerate(highs) if k != b]
                extra.append(("ge", ub - la))
                out.append((tuple(free + extra), _faulhaber(value, w, la, ub)))
    return _simplify(out)


# ---------------------------------------------------------------------- counts


class Counter:
    """Counts over one program. A target is ("engine", name) for the instances of an
    engine or ("loop", var) for the iterations of a loop (what `iters(var)` counts)."""

    def __init__(self, program: Program, deadline: Deadline = NO_DEADLINE):
        self.program = program
        self.deadline = deadline  # polled per statement: a count of a deep nest is long sympy work
        self.atoms = Atoms()
        self.params = {p.name: sym(p.name) for p in program.params}
        self._cache: dict = {}

    def _hits(self, stmt, target) -> bool:
        return target[0] == "engine" and isinstance(stmt, Op) and stmt.engine == target[1]

    def body_count(self, body, target, env: dict) -> tuple:
        pieces = []
        for stmt in body:
            self.deadline.check()
            pieces += self.stmt_count(stmt, target, env)
        return _simplify(pieces)

    def stmt_count(self, stmt, target, env: dict) -> tuple:
        match stmt:
            case Op():
                return _const(1) if self._hits(stmt, target) else ()
            case Barrier():
                return ()
            case If(cond=c, then=then, else_=else_):
                pieces = []
                for guard, branch in ((cond(c, env, self.atoms, True), then), (cond(c, env, self.atoms, False), else_)):
                    inner = self.body_count(branch, target, env)
                    for conj in guard:
                        pieces += [(conj + ci, v) for ci, v in inner]
                return _simplify(pieces)
            case For(var=var, lo=lo, hi=hi, body=body):
                w = sym(f"_{var}")
                inner = self.body_count(body, target, {**env, var: w})
                if target == ("loop", var):
                    inner = inner + _const(1)
                return loop_sum(inner, w, expr(lo, env, self.atoms), expr(hi, env, self.atoms), self.atoms)
        raise TypeError(stmt)

    def before(self, site: Site, target) -> tuple:
        """The count of target instances strictly before the instance of `site`, over
        the symbols of the site's loop indices (named as the loop variables) and the
        parameters. An iteration of a loop enclosing the site counts as begun."""
        key = (site.op.name, target)
        if key not in self._cache:
            self._cache[key] = self._before(site, target)
        return self._cache[key]

    def _before(self, site: Site, target) -> tuple:
        env = dict(self.params)
        pieces = []
        body = self.program.body
        for step in site.trail:
            for stmt in body[:step.index]:
                self.deadline.check()
                pieces += self.stmt_count(stmt, target, env)
            match step.stmt:
                case For(var=var, lo=lo, body=inner_body):
                    here = sym(var)
                    w = sym(f"_{var}")
                    inner = self.body_count(inner_body, target, {**env, var: w})
                    if target == ("loop", var):
                        inner = inner + _const(1)
                        pieces += _const(1)  # the current iteration has begun
                    pieces += loop_sum(inner, w, expr(lo, env, self.atoms), (((), here),), self.atoms)
                    env = {**env, var: here}
                    body = inner_body
                case If():
                    body = step.stmt.then if step.branch else step.stmt.else_
                case Op():
                    break
        return _simplify(pieces)


# ------------------------------------------------------------------------- Z3


def to_z3(pieces, names: dict, atoms: Atoms, ctx: z3.Context | None = None) -> z3.ArithRef:
    """The Z3 integer term of a count; `names` maps symbol names to Z3 terms (in `ctx`)."""
    terms = []
    for conds, value in pieces:
        num, den = sp.fraction(sp.together(value))
        den_value = int(den)
        body = _poly_z3(sp.expand(num), names, atoms, ctx)
        if den_value != 1:
            body = body / den_value  # exact: the count is an integer where conds hold
        guard = [_atom_z3(a, names, atoms, ctx) for a in conds]
        terms.append(z3.If(z3.And(*guard), body, z3.IntVal(0, ctx)) if guard else body)
    return z3.Sum(*terms) if terms else z3.IntVal(0, ctx)


def _atom_z3(atom, names, atoms, ctx) -> z3.BoolRef:
    kind, e = atom
    num, den = sp.fraction(sp.together(e))
    term = _poly_z3(sp.expand(num), names, atoms, ctx)  # den > 0: the sign is kept
    return term >= 0 if kind == "ge" else term == 0


def _poly_z3(e: sp.Expr, names, atoms, ctx) -> z3.ArithRef:
    if e.is_Integer:
        return z3.IntVal(int(e), ctx)
    if e.is_Symbol:
        if e in atoms.defs:
            kind, dividend, divisor = atoms.defs[e]
            x = _poly_z3(sp.expand(dividend), names, atoms, ctx)
            return py_floordiv(x, z3.IntVal(divisor, ctx)) if kind == "fd" else py_mod(x, z3.IntVal(divisor, ctx))
        return names[e.name]
    if e.is_Add:
        return z3.Sum(*[_poly_z3(a, names, atoms, ctx) for a in e.args])
    if e.is_Mul:
        out = z3.IntVal(1, ctx)
        for a in e.args:
            out = out * _poly_z3(a, names, atoms, ctx)
        return out
    if e.is_Pow and e.exp.is_Integer and e.exp > 0:
        base = _poly_z3(e.base, names, atoms, ctx)
        out = base
        for _ in range(int(e.exp) - 1):
            out = out * base
        return out
    raise Unsupported(f"cannot translate {e} to Z3")
