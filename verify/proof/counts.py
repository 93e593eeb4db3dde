"""Instance counts in closed form, for every parameter value: the checker's own.

The all-values proof (verify/proof/prove.py) needs local indices (how many instances of
engine F come before an instance, in program order) and tracked iteration counts
(`iters(v)`; `count(F)` is a local index) as terms over symbolic parameters and loop indices. This module computes
them independently of the threshold algorithm (which has its own counting in
algorithm/threshold/counting.py and must not be trusted here), with sympy polynomials:

- A *count* is a guarded sum `sum_k [conds_k] * value_k`: each piece is a conjunction
  of atoms over integers (`e >= 0` or `e == 0`) and a polynomial value with rational
  coefficients (Faulhaber's sums have them; the value is an integer wherever its
  conditions hold).
- An *expression* (a loop bound) becomes a partition: pieces whose conditions are
  disjoint and cover everything, so `min`, `max` and `if` split the space.
- The count of a statement is structural: an op counts 1 if it is a target (a DMA op
  on its queue, not on its triggering engine: triggers do not count); `if`
  guards its branches with its condition; a loop sums its body over its range.
- A sum over a loop index w of a piece turns the piece's atoms on w into bounds
  (verify/proof/sums.py): a coefficient +-1 gives w's bound itself, another constant
  coefficient a floor division (`if i >= 16 * j`, summed over j); w ranges from the
  largest lower bound to the smallest upper bound; every choice of "largest" and
  "smallest" is its own piece (ties broken by position so the choices are disjoint)
  with the range non-empty, and the polynomial is summed by Faulhaber's formulas.
  Zero-trip loops are the empty-range case: no piece.
- `e // m` and `e % m` with a constant m > 0 become atoms (fresh symbols, translated
  back to Z3's floor division; verify/proof/pieces.py). A sum over an index under
  such an atom (`if i % 2 == 0`) is split by residue class: w = p * t + s for each s
  in 0..p-1, where p makes every such atom linear in t plus an atom free of t (at most
  16 classes). An equation `c * w + e == 0` with |c| > 1 pins w to `-e / c` under the
  condition `e % |c| == 0`. A divisor P over the parameters (at least 1 under their
  lower bounds: `k % K`, `j % (D + 1)`) makes atoms too; a sum over an index w whose
  guard compares `(w + e) % P` with a value free of w is split into the residue
  classes the comparison picks (one, or a few next to 0 or P - 1), each summed over
  w = P * t + r, and a floor `(w + e) // P` left in a summed value is summed by its
  antidifference (verify/proof/sums.py). Anything else (a non-linear term, a divisor
  that may be below 1, a residue compared with a parameter) raises `Unsupported`:
  the proof then says why it fell back.

`to_z3` turns a count into a Z3 integer term, with the symbols of parameters and loop
indices mapped to Z3 terms chosen by the caller (one instance or another).
"""

from __future__ import annotations

import itertools

import sympy as sp
import z3

from semantics.context import Site
from semantics.ir import (
    And, Barrier, BinOp, Compare, Const, Count, For, If, IfExpr, Iters, Max, Min, Neg, Not, Op, Or, Program, Var,
    walk_expr,
)
from semantics.symbolic import py_floordiv, py_mod

from verify.engines.deadline import NO_DEADLINE, Deadline

from verify.proof.pieces import (  # noqa: F401  (Unsupported, Atoms: re-exported)
    MAX_PIECES, SMALL_COUNT, Atoms, Unsupported, coalesced, combine, const, simplify_pieces, sym,
)
from verify.proof.queues import home
from verify.proof.sums import loop_sum


# ------------------------------------------------------------------ expressions


def expr(node, env: dict, atoms: Atoms) -> tuple:
    """The partition of an IR expression; names are looked up in `env` (sympy terms)."""
    match node:
        case Const(value=v):
            return const(v)
        case Var(name=name):
            return (((), env[name]),)
        case Iters():
            raise Unsupported("iters() outside a wait threshold")
        case Count():
            raise Unsupported("count() outside a wait threshold")
        case Neg(operand=a):
            return tuple((c, -v) for c, v in expr(a, env, atoms))
        case BinOp(op=op, left=a, right=b):
            left, right = expr(a, env, atoms), expr(b, env, atoms)
            match op:
                case "+":
                    return combine(left, right, lambda x, y: x + y)
                case "-":
                    return combine(left, right, lambda x, y: x - y)
                case "*":
                    return combine(left, right, lambda x, y: x * y)
                case "//" | "%":
                    def divide(x, y):
                        if not atoms.positive(y):
                            raise Unsupported(f"'{op}' by a divisor that may be below 1")
                        if x.is_Integer and y.is_Integer:
                            return sp.Integer(int(x) // int(y) if op == "//" else int(x) % int(y))
                        return atoms.make("fd" if op == "//" else "md", x, y)
                    return combine(left, right, divide)
        case Min(left=a, right=b) | Max(left=a, right=b):
            pieces = []
            for (ca, va), (cb, vb) in itertools.product(expr(a, env, atoms), expr(b, env, atoms)):
                first, second = (va, vb) if isinstance(node, Min) else (vb, va)
                pieces.append((ca + cb + (("ge", vb - va),), first))  # va <= vb
                pieces.append((ca + cb + (("ge", va - vb - 1),), second))
            return simplify_pieces(pieces)
        case IfExpr(cond=c, then=a, else_=b):
            pieces = []
            for guard, branch in ((cond(c, env, atoms, True), a), (cond(c, env, atoms, False), b)):
                for conj in guard:
                    pieces += [(conj + cv, v) for cv, v in expr(branch, env, atoms)]
            return simplify_pieces(pieces)
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


# ---------------------------------------------------------------------- counts


class Counter:
    """Counts over one program. A target is ("engine", name) for the instances of an
    engine or ("loop", var) for the iterations of a loop (what `iters(var)` counts)."""

    def __init__(self, program: Program, deadline: Deadline = NO_DEADLINE, small: int = SMALL_COUNT):
        """`small`: the pieces up to which a count is left as built (pieces.coalesced)."""
        self.program = program
        self.small = small
        self.deadline = deadline  # polled per statement: a count of a deep nest is long sympy work
        self.params = {p.name: sym(p.name) for p in program.params}
        self.atoms = Atoms({sym(p.name): p.lower for p in program.params})
        self.nonneg = frozenset(self.params.values())  # parameters are never negative
        self._cache: dict = {}

    def _hits(self, stmt, target) -> bool:
        # A DMA op counts on its queue, never on its triggering engine (verify/proof/queues.py).
        return target[0] == "engine" and isinstance(stmt, Op) and home(stmt) == target[1]

    def body_count(self, body, target, env: dict) -> tuple:
        pieces = []
        for stmt in body:
            self.deadline.check()
            pieces += self.stmt_count(stmt, target, env)
        return coalesced(simplify_pieces(pieces), self.nonneg, self.small)

    def stmt_count(self, stmt, target, env: dict) -> tuple:
        match stmt:
            case Op():
                return const(1) if self._hits(stmt, target) else ()
            case Barrier():
                return ()
            case If(cond=c, then=then, else_=else_):
                pieces = []
                for guard, branch in ((cond(c, env, self.atoms, True), then), (cond(c, env, self.atoms, False), else_)):
                    inner = self.body_count(branch, target, env)
                    for conj in guard:
                        pieces += [(conj + ci, v) for ci, v in inner]
                return simplify_pieces(pieces)
            case For(var=var, lo=lo, hi=hi, body=body):
                w = sym(f"_{var}")
                inner = self.body_count(body, target, {**env, var: w})
                if target == ("loop", var):
                    inner = inner + const(1)
                return loop_sum(inner, w, expr(lo, env, self.atoms), expr(hi, env, self.atoms), self.atoms)
        raise TypeError(stmt)

    def warm(self, sites) -> None:
        """Build now the counts a proof of these sites asks for (each engine's instances
        before each op, the iterations of the loops its waits track), so that provers
        that share this counter find them built; a count that cannot be built is left to
        the prover that asks for it."""
        for site in sites:
            targets = [("engine", engine) for engine in self.program.engines]
            targets += [("loop", v) for v in sorted({n.var for w in site.op.waits for n in walk_expr(w.threshold)
                                                      if isinstance(n, Iters)})]
            for target in targets:
                try:
                    _normal(self.before(site, target), self.atoms)
                except Unsupported:
                    pass

    def built(self) -> list:
        """The counts built so far, in the order they were."""
        return list(self._cache.values())

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
                        inner = inner + const(1)
                        pieces += const(1)  # the current iteration has begun
                    pieces += loop_sum(inner, w, expr(lo, env, self.atoms), (((), here),), self.atoms)
                    env = {**env, var: here}
                    body = inner_body
                case If():
                    body = step.stmt.then if step.branch else step.stmt.else_
                case Op():
                    break
        return coalesced(simplify_pieces(pieces), self.nonneg, self.small)


# ------------------------------------------------------------------------- Z3


def to_z3(pieces, names: dict, atoms: Atoms, ctx: z3.Context | None = None, templates: dict | None = None) -> z3.ArithRef:
    """The Z3 integer term of a count; `names` maps symbol names to Z3 terms (in `ctx`).
    A count is met at thousands of instances (a local index in every stage of every
    obligation that meets it) but has one shape: its term is built once per context,
    over a placeholder constant per name it reads (`_build_count`: the sympy work and one
    Python call per node), and each instance substitutes its own terms for the
    placeholders (one Z3 call). `templates`: where the terms of this context are kept
    (a prover's own; default: with the atoms)."""
    term, holders = template(pieces, atoms, ctx, templates)
    return z3.substitute(term, *[(h, names[n]) for n, h in holders.items()]) if holders else term


def template(pieces, atoms: Atoms, ctx: z3.Context | None, templates: dict | None = None) -> tuple:
    """A count's Z3 term over a placeholder per name it reads, and the placeholders,
    made once per context (`to_z3`)."""
    templates = atoms.templates if templates is None else templates
    found = templates.get((pieces, ctx))
    if found is None:
        holders = {n: z3.Int(f"{n}!count", ctx) for n in sorted(_names(pieces, atoms))}
        found = templates[pieces, ctx] = (_build_count(pieces, holders, atoms, ctx), holders)
    return found


def _names(pieces, atoms: Atoms) -> set:
    """The names a count's Z3 term reads (through its atoms' definitions too)."""
    out = set()
    pending = [e for conds, value in pieces for e in (value, *(e for _, e in conds))]
    while pending:
        for s in pending.pop().free_symbols:
            if s in atoms.defs:
                _, dividend, divisor = atoms.defs[s]
                pending += [dividend] if isinstance(divisor, int) else [dividend, divisor]
            else:
                out.add(s.name)
    return out


def _build_count(pieces, names: dict, atoms: Atoms, ctx) -> z3.ArithRef:
    """Per piece If(And(its atoms), its value, 0), summed. Each value and atom is brought
    over a common denominator and expanded (a value is an integer wherever its atoms
    hold, so its division is exact; an atom's denominator is positive: its sign stays)."""
    terms = []
    for conds, num, den in _normal(pieces, atoms):
        body = _poly(num, names, atoms, ctx)
        if den != 1:
            body = body / int(den)
        if conds:
            guard = []
            for kind, e in conds:
                term = _poly(e, names, atoms, ctx)
                guard.append(term >= 0 if kind == "ge" else term == 0)
            body = z3.If(z3.And(*guard), body, z3.IntVal(0, ctx))
        terms.append(body)
    return z3.Sum(*terms) if terms else z3.IntVal(0, ctx)


def _normal(pieces, atoms: Atoms) -> tuple:
    """Per piece: its atoms' numerators and its value's numerator, expanded, and the
    value's denominator (the sympy work of `_build_count`, kept with the atoms: it does
    not depend on the Z3 context)."""
    found = atoms.normal.get(pieces)
    if found is None:
        found = []
        for conds, value in pieces:
            num, den = sp.fraction(sp.together(value))
            found.append((tuple((kind, sp.expand(sp.fraction(sp.together(e))[0])) for kind, e in conds),
                          sp.expand(num), den))
        found = atoms.normal[pieces] = tuple(found)
    return found


def _poly(e: sp.Expr, names: dict, atoms: Atoms, ctx) -> z3.ArithRef:
    """An expanded polynomial with integer coefficients as a Z3 term; an atom's symbol as
    Z3's floor division or modulo of its dividend."""
    if e.is_Integer:
        return z3.IntVal(int(e), ctx)
    if e.is_Symbol:
        if e in atoms.defs:
            kind, dividend, divisor = atoms.defs[e]
            x = _poly(sp.expand(dividend), names, atoms, ctx)
            if isinstance(divisor, int):
                return (py_floordiv if kind == "fd" else py_mod)(x, z3.IntVal(divisor, ctx))
            # A divisor over the parameters is at least 1 wherever they are at least their
            # lower bounds (Atoms.positive), which every query assumes: there Z3's `div`
            # and `mod` are Python's `//` and `%` (without py_floordiv's case on its sign).
            by = _poly(divisor, names, atoms, ctx)
            return x / by if kind == "fd" else x % by
        return names[e.name]
    if e.is_Add:
        return z3.Sum(*[_poly(a, names, atoms, ctx) for a in e.args])
    if e.is_Mul:
        return z3.Product(*[_poly(a, names, atoms, ctx) for a in e.args])
    if e.is_Pow and e.exp.is_Integer and e.exp > 0:
        return z3.Product(*[_poly(e.base, names, atoms, ctx)] * int(e.exp))
    raise Unsupported(f"cannot translate {e} to Z3")
