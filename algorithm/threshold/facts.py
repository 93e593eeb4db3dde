"""What the algorithm knows at a point, and the small tools that use it: a Z3 prover
over named integers (`Facts`), substitution, and `refine`, which resolves `min`,
`max`, `if` and `%` terms that the facts decide."""

from __future__ import annotations

import itertools

import z3

from semantics.errors import SyncproofError
from semantics.ir import (
    And, BinOp, Compare, Const, IfExpr, Iters, Max, Min, Neg, Not, Or, Var,
)
from semantics.symbolic import to_z3
from semantics.simplify import cond as simplify_cond, simplify

fresh_symbol = itertools.count()


class Unsupported(SyncproofError):
    """No closed form this algorithm knows of; the caller falls back."""


class Facts:
    """What is known at a point (Z3 assertions over named integers) and a prover.
    Z3 hash-conses terms, so term ids make a cheap memo key; the memo keeps the
    terms themselves alive, since Z3 reuses the id of a term once it is freed."""

    _memo: dict = {}

    def __init__(self, assertions=(), rlimit: int = 2_000_000):
        self.assertions = list(assertions)
        self.rlimit = rlimit  # Z3 resource units: deterministic, unlike a time limit
        self._key = tuple(sorted({a.get_id() for a in self.assertions}))
        self._solver = None

    def with_(self, *more) -> "Facts":
        return Facts(self.assertions + list(more), self.rlimit)

    def proves(self, claim) -> bool:
        key = (self._key, claim.get_id())
        entry = Facts._memo.get(key)
        hit = None if entry is None else entry[0]
        if hit is None:
            if self._solver is None:
                # The plain SMT kernel: proves() pushes, which puts z3.Solver() in this
                # same incremental mode anyway, minus the combined solver's overhead
                # (sync of a 1,000-op chain: 38.5 s -> 33.7 s; 110 corpus outputs equal).
                self._solver = z3.SimpleSolver()
                self._solver.set("rlimit", self.rlimit)
                self._solver.add(*self.assertions)
            self._solver.push()
            self._solver.add(z3.Not(claim))
            hit = self._solver.check() == z3.unsat
            self._solver.pop()
            if len(Facts._memo) > 500_000:
                Facts._memo.clear()
            Facts._memo[key] = (hit, self.assertions, claim)
        return hit


class _AutoEnv(dict):
    def __missing__(self, name):
        value = z3.Int(name)
        self[name] = value
        return value


class _ItersEnv(dict):
    # Tracked counts are free integers to the prover: nothing is assumed of them.
    def __missing__(self, var):
        value = z3.Int(f"iters({var})")
        self[var] = value
        return value

    def __contains__(self, var):
        return True


ENV = _AutoEnv()
ITERS = _ItersEnv()


_Z_CACHE: dict = {}


def z(node):
    """The Z3 term of an IR node over the shared names (memoized: terms are immutable)."""
    if len(_Z_CACHE) > 200_000:
        _Z_CACHE.clear()
    return to_z3(node, ENV, ITERS, _Z_CACHE)


def fresh_z3_context() -> None:
    """Start a new global Z3 context and drop every term cached from the old one.

    Why: the cost of a Z3 solver push grows with the size of the context's term table
    and does not shrink when terms are freed (measured on z3 5.4.1: 101 us per push in
    a fresh context, 1,198 us after 400,000 terms were made). Planning a long kernel
    makes millions of terms, which made `threshold` quadratic in the program length,
    so each plan starts in a fresh context and takes a new one every so many ops
    (threshold.FRESH_CONTEXT_EVERY). The id-keyed memo must go
    with it: the new context hands out the old ids again. Callers must not hold Z3
    terms across a reset; Z3 raises on mixing contexts, so a slip is loud, not wrong."""
    Facts._memo.clear()
    _Z_CACHE.clear()
    ENV.clear()
    ITERS.clear()
    z3.z3._main_ctx = None  # z3py keeps the default context here; main_ctx() makes a new one


def subst(node, env: dict):
    """Replace names by expressions (names not in `env` stay)."""
    match node:
        case Var(name=name):
            return env.get(name, node)
        case Const() | Iters():
            return node
        case BinOp(op=op, left=a, right=b):
            return BinOp(op, subst(a, env), subst(b, env))
        case Neg(operand=a):
            return Neg(subst(a, env))
        case Min(left=a, right=b):
            return Min(subst(a, env), subst(b, env))
        case Max(left=a, right=b):
            return Max(subst(a, env), subst(b, env))
        case IfExpr(cond=c, then=a, else_=b):
            return IfExpr(subst(c, env), subst(a, env), subst(b, env))
        case Compare(op=op, left=a, right=b):
            return Compare(op, subst(a, env), subst(b, env))
        case And(left=a, right=b):
            return And(subst(a, env), subst(b, env))
        case Or(left=a, right=b):
            return Or(subst(a, env), subst(b, env))
        case Not(operand=a):
            return Not(subst(a, env))
    raise TypeError(f"cannot substitute in {node!r}")


def mentions(node, name: str) -> bool:
    match node:
        case Var(name=n):
            return n == name
        case Const() | Iters():
            return False
        case Neg(operand=a) | Not(operand=a):
            return mentions(a, name)
        case IfExpr(cond=c, then=a, else_=b):
            return mentions(c, name) or mentions(a, name) or mentions(b, name)
        case _:
            return mentions(node.left, name) or mentions(node.right, name)


def refine(node, facts: Facts):
    """Resolve `min`, `max` and `if` terms whose outcome the facts decide."""
    match node:
        case Const() | Var() | Iters():
            return node
        case BinOp(op="%", left=a, right=Const(value=m)) if 1 < m <= 8:
            node = BinOp("%", refine(a, facts), Const(m))
            for value in range(m):  # a residue that is the same at every point
                if facts.proves(z(node) == value):
                    return Const(value)
            return node
        case BinOp(op="%", left=a, right=m):
            node = BinOp("%", refine(a, facts), refine(m, facts))
            for value in (Const(0), simplify(BinOp("-", m, Const(1)))):  # a residue fixed at every point
                if facts.proves(z(node) == z(value)):
                    return value
            return node
        case BinOp(op=op, left=a, right=b):
            return BinOp(op, refine(a, facts), refine(b, facts))
        case Neg(operand=a):
            return Neg(refine(a, facts))
        case Min(left=a, right=b) | Max(left=a, right=b):
            a, b = refine(a, facts), refine(b, facts)
            first_smaller = facts.proves(z(a) <= z(b))
            if first_smaller or facts.proves(z(b) <= z(a)):
                return a if first_smaller == isinstance(node, Min) else b
            return type(node)(a, b)
        case IfExpr(cond=c, then=a, else_=b):
            c = refine_cond(c, facts)
            zc = z(c)
            if facts.proves(zc):
                return refine(a, facts)
            if facts.proves(z3.Not(zc)):
                return refine(b, facts)
            return IfExpr(c, refine(a, facts.with_(zc)), refine(b, facts.with_(z3.Not(zc))))
    raise TypeError(f"not an integer expression: {node!r}")


def refine_cond(node, facts: Facts):
    """A condition with its integer parts refined and provable conjuncts dropped."""
    match node:
        case Compare(op=op, left=a, right=b):
            return simplify_cond(Compare(op, refine(simplify(a), facts), refine(simplify(b), facts)))
        case And(left=a, right=b):
            a, b = refine_cond(a, facts), refine_cond(b, facts)
            if facts.proves(z(a)):
                return b
            if facts.proves(z(b)):
                return a
            return And(a, b)
        case Or(left=a, right=b):
            return Or(refine_cond(a, facts), refine_cond(b, facts))
        case Not(operand=a):
            return Not(refine_cond(a, facts))
    raise TypeError(f"not a condition: {node!r}")


def tidy(node, facts: Facts):
    return simplify(refine(simplify(node), facts))


def nonneg_diff(hi, lo, facts: Facts):
    """max(0, hi - lo), without the max where the facts show hi >= lo."""
    if facts.proves(z(hi) >= z(lo)):
        return simplify(BinOp("-", hi, lo))
    return simplify(Max(Const(0), BinOp("-", hi, lo)))
