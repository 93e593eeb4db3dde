"""Memo by shape: the exactness proof of an access pair, keyed by the pair's
shape rather than by object identity.

`prove_candidates` asks Z3 about a formula built from nothing but: the parameters
(names and lower bounds), the trails of the producer x and the consumer y (statement
indices, branches, loop bounds, guards), the two accesses' indices, the candidates
(conditions and index values) and the `soundness_only` flag. Renaming every loop
variable injectively to a canonical name (`#0`, `#1`, ... in order of first
appearance) gives an alpha-equivalent formula, so two pairs with the same key have the
same answer. A long kernel made of renamed copies of a few loop nests (a compiled
model's layers, bench/generate.py's chain) then proves each distinct shape once.

Buffer names are left out: x and y access one buffer by construction, and the formula
only compares the two accesses' indices. Op names are left out: the formula never
mentions them. The memo lives in the plan's `Session` and survives its Z3 context
renewals (its values are plain answers, not Z3 terms).
"""

from __future__ import annotations

from semantics.context import Site, common_depth
from semantics.ir import For, If, Range, Var
from algorithm.threshold.facts import subst


class _Names:
    """The canonical renaming being built: a loop variable -> `#n` (parameters keep
    their names: they are the same names in every shape of one program)."""

    def __init__(self, params: frozenset):
        self.params = params
        self.env: dict = {}

    def bind(self, name: str) -> str:
        if name not in self.params and name not in self.env:
            self.env[name] = Var(f"#{len(self.env)}")
        return self.env[name].name if name in self.env else name

    def expr(self, node):
        return subst(node, self.env)

    def index(self, index):
        if isinstance(index, Range):
            return ("range", self.expr(index.lo), self.expr(index.hi))
        return self.expr(index)


def _trail(site: Site, names: _Names, indices) -> tuple:
    out = []
    for step, index in zip(site.trail, indices):
        stmt = step.stmt
        if isinstance(stmt, For):
            # Bounds are over the enclosing loops' (already bound) names; the loop's own
            # variable is bound after them, in nesting order.
            lo, hi = names.expr(stmt.lo), names.expr(stmt.hi)
            out.append((index, "for", names.bind(stmt.var), lo, hi))
        elif isinstance(stmt, If):
            out.append((index, "if", step.branch, names.expr(stmt.cond)))
        else:
            out.append((index, "op"))
    return tuple(out)


def _relative_indices(x: Site, y: Site) -> tuple:
    """The statement indices of the two trails as far as the question sees them: only
    which steps they share (common_depth) and, at the first step where they part, which
    comes first (static_order). So a pair in the 9th top-level loop has the shape of
    the same pair in the 1st."""
    depth = common_depth(x, y)
    xs, ys = [0] * len(x.trail), [0] * len(y.trail)
    if depth < len(x.trail) and depth < len(y.trail):
        a, b = x.trail[depth].index, y.trail[depth].index
        xs[depth], ys[depth] = (a > b), (b > a)
    return tuple(xs), tuple(ys)


def pair_shape(program, x: Site, y: Site, pair, candidates, soundness_only: bool, where: tuple = ()) -> tuple:
    """The key of `prove_candidates(session, program, x, y, pair, candidates, soundness_only)`."""
    names = _Names(frozenset(p.name for p in program.params))
    params = tuple((p.name, p.lower) for p in program.params)
    # y's loop names first (the candidates are over them), then x's: x's own loop
    # variables are distinct Z3 constants (`v@x`) even where a name is shared with y,
    # and one injective renaming keeps that distinction.
    x_indices, y_indices = _relative_indices(x, y)
    y_trail = _trail(y, names, y_indices)
    x_trail = _trail(x, names, x_indices)
    ax, ay = pair
    accesses = (ax.buffer == ay.buffer, tuple(names.index(i) for i in ax.indices),
                tuple(names.index(i) for i in ay.indices))
    shaped = []
    for candidate in candidates:
        values = tuple(sorted((names.bind(var), names.expr(value)) for var, value in candidate.values.items()))
        shaped.append((names.expr(candidate.condition), values, candidate.depth))
    cases = tuple(names.expr(w) for w in where)  # over x's names, bound by x_trail
    return (params, x_trail, y_trail, accesses, tuple(shaped), soundness_only, cases)
