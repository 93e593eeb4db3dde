"""Concrete refutation of an irredundancy query: a point (parameter values and an
instance of y) where y's wait is needed and no chain vouches for it is a model of the
Z3 query `_proves` would ask, so the answer is known (sat) without asking.

Why it is exact: the query is satisfiable iff such a point exists; evaluating its IR
with Python's `//` and `%` is what the Z3 encoding (semantics/symbolic.py) means. A
point whose evaluation fails (division by zero, a name the point does not bind) is
skipped, never counted. Tracked counts (`iters(v)`) are free integers to the prover,
so any value is a model; they get their run-time value `v - lo` (the likely witness).
The points are a fixed, ordered set (no randomness): the plan stays deterministic.
Why it pays: a satisfiable redundancy query is among Z3's slowest (it searches for a
model of a large disjunction), while its witnesses usually sit at small parameter
values, where evaluating the IR finds them in milliseconds."""

from __future__ import annotations

import itertools

from semantics.compiled import compile_expr, compiler
from semantics.context import Site
from semantics.errors import SyncproofError
from semantics.ir import For, Program

def valuations(program: Program, options) -> list[dict[str, int]]:
    """The defaults (when every parameter has one), then each parameter from its lower
    bound up, ordered by the largest offset from the lower bounds."""
    params = program.params
    out = []
    if params and all(p.default is not None for p in params):
        out.append({p.name: p.default for p in params})
    for top in range(options.cover_grid):
        for offsets in itertools.product(range(top + 1), repeat=len(params)):
            if params and max(offsets) != top:
                continue
            out.append({p.name: p.lower + k for p, k in zip(params, offsets)})
            if len(out) >= options.cover_valuations or not params:
                return out
    return out


def spread_valuations(program: Program, options):
    """Each parameter at its lower bound, its default (or the grid's edge) and a large
    value past both, in every combination (lexicographic in the parameters' order).
    The grid near the lower bounds misses a witness that needs some parameters large
    and others small: flash_attention_causal's `if i >= 16 * j` holds for j = 4 only
    once QT > 64, and its witness also has an empty loop (TP = 0). At most
    2 * cover_valuations of them."""
    levels = []
    for p in program.params:
        base = p.default if p.default is not None and p.default > p.lower else p.lower + options.cover_grid
        levels.append(sorted({p.lower, base, 2 * base + 1}))
    # At most twice the grid's count: 3 ** parameters valuations would never end.
    for values in itertools.islice(itertools.product(*levels), 2 * options.cover_valuations):
        yield {p.name: v for p, v in zip(program.params, values)}


def instances(y: Site, env: dict[str, int], budget: list[int], compiled=None):
    """y's instances at one valuation (environments binding its loop variables), in
    program order, while `budget[0]` lasts. `compiled`: semantics.compiled's `compiler()`
    for the loop bounds and guards (their values are eval_expr's, several times faster).
    Every instance is the same two dicts (env, iters), updated in place: a caller reads
    them before it asks for the next instance (one loop, no frame per level)."""
    compiled = compiled or compiler()
    levels = []  # per step of the trail: (loop variable, lo, hi) or (None, guard, branch)
    for step in y.trail[:-1]:
        stmt = step.stmt
        if isinstance(stmt, For):
            levels.append((stmt.var, compiled(stmt.lo), compiled(stmt.hi)))
        else:
            levels.append((None, compiled(stmt.cond, True), step.branch))
    env, iters = dict(env), {}
    count, depth = len(levels), 0
    pending: list = [None] * count  # per level entered: its remaining values
    lows: list = [0] * count  # per loop level: its lower bound
    while depth >= 0 and budget[0] > 0:
        if depth == count:  # an instance
            budget[0] -= 1
            yield env, iters
            depth -= 1
            continue
        var, first, second = levels[depth]
        if pending[depth] is None:  # entering the level
            if var is None:  # a guard: passed through once, or back up
                if first(env) == second:
                    pending[depth] = iter(())
                    depth += 1
                else:
                    depth -= 1
                continue
            lows[depth] = first(env)
            pending[depth] = iter(range(lows[depth], second(env)))
        value = next(pending[depth], None)
        if value is None:  # the level is done
            pending[depth] = None
            depth -= 1
        else:
            env[var] = value
            iters[var] = value - lows[depth]
            depth += 1


class Parts:
    """A sequence of parts read from an iterator as far as asked (sample_cover asks for
    part k only when the parts before it leave a point uncovered)."""

    def __init__(self, source):
        self.source, self.read = iter(source), []

    def get(self, k: int):
        """Part k, or None when there are no more than k parts."""
        while len(self.read) <= k and self.source is not None:
            part = next(self.source, None)
            if part is None:
                self.source = None
            else:
                self.read.append(part)
        return self.read[k] if k < len(self.read) else None

    def all(self) -> list:
        while self.source is not None:
            self.get(len(self.read))
        return self.read


def sample_cover(program: Program, y: Site, target, parts, options, compiled_by_node: dict | None = None) -> list[int] | None:
    """None if some point has `target > 0` and no (condition, guaranteed) in `parts`
    with condition and guaranteed >= target (a model: the query is satisfiable);
    otherwise the indices of the parts that cover every point visited (each point
    takes the first covering part not already chosen only when no chosen part covers
    it: a small cover, for a smaller first query). `parts`: a list, or Parts, read only
    as far as the points need."""
    # Compiled on first use and kept by node (the caller's dict may outlive this call:
    # the redundancy proof asks about the same parts again with fewer waits kept).
    cache = compiled_by_node if compiled_by_node is not None else {}
    # And by identity for this call: a node equal to a key but not the key itself is
    # compared with it in full at every point (gemm_psum_if: 650,000 node comparisons).
    by_id: dict = {}

    def fn(node, cond=False):
        entry = by_id.get(id(node))
        if entry is not None and entry[0] is node:
            return entry[1]
        hit = cache.get(node)
        if hit is None:
            hit = cache[node] = compile_expr(node, cond)
        by_id[id(node)] = (node, hit)
        return hit

    parts = parts if isinstance(parts, Parts) else Parts(parts)
    target_f = fn(target)
    chosen: list[int] = []
    tests: list = []  # per part read: its condition's evaluator and its guaranteed count's

    def covers(k, env, iters, t) -> bool:
        while len(tests) <= k:
            tests.append([fn(parts.get(len(tests))[0], True), None])
        test = tests[k]
        if not test[0](env, iters):
            return False
        if test[1] is None:  # (compiled when a point meets the condition: most never do)
            test[1] = fn(parts.get(k)[1])
        return test[1](env, iters) >= t

    def first_cover(env, iters, t):
        k = 0
        while parts.get(k) is not None:
            if covers(k, env, iters, t):
                return k
            k += 1
        return None

    # Two sets of valuations, each with `cover_points` instances of y to visit.
    bounds = compiler()
    for sampled in (valuations(program, options), spread_valuations(program, options)):
        budget = [options.cover_points]
        for values in sampled:
            try:
                for env, iters in instances(y, values, budget, bounds):
                    try:
                        t = target_f(env, iters)
                        if t <= 0 or any(covers(k, env, iters, t) for k in chosen):
                            continue
                        first = first_cover(env, iters, t)
                    except (SyncproofError, KeyError, ArithmeticError):
                        continue  # this point does not evaluate: it decides nothing
                    if first is None:
                        return None
                    chosen.append(first)
            except (SyncproofError, KeyError, ArithmeticError):
                continue  # a loop bound or guard this valuation cannot evaluate
            if budget[0] <= 0:
                break
    return sorted(chosen)
