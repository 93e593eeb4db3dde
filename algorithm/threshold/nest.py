"""Loop nests: the thresholds of a program of loop nests by arithmetic, no solver.

Class (`check_nest`): no DMA queue, peer clause or replica (barriers are dropped, as
every threshold output drops them); each `if` a guard on one loop index or on the
parameters (nest_guards.py); each loop `for v in LO..HI` has an LO over the parameters
only and an HI either over parameters only, at least LO for every valid valuation (the
loop runs HI - LO times wherever it is reached; an HI that may lie below a constant LO
is planned as `max(HI, LO)`, the same iterations: `clamped`), or affine in the
parameters and the enclosing loops' indices, non-decreasing in them and at least LO
wherever it is reached (a triangular
nest, possibly empty, `for j in 0..i`: a larger enclosing index leaves a range that
holds the smaller one's, so the latest instance takes the largest value of each index
in turn, and where the range at that value is empty, so is every smaller one's); each access
index is a point index linear plus periodic in one loop variable (flat.Index), or with
parameters and other indices beside it, its period a constant or over the parameters and
at least 1 for every valuation (nest_candidates.py), or over the position of an iteration
in a rectangular pair of loops (nest_flattened.py), or a range.

Rule (plan.py's): y at iteration w waits `F >= T`, T the number of F-instances up to and
including the last one that conflicts with y. With B the F-instances strictly between
that instance and y, T = count(F) - B. The candidates for the last conflicting instance of
a producer x, latest first:
- x in the same iterations of all loops common to x and y, when x precedes y in their
  innermost body; then
- for j from the innermost common loop out: x in an earlier iteration u_j < w_j of common
  loop j and the same iterations of the loops around it.
Every other loop index of the candidate (x's own loops, the common loops inside j) is free
in its range, and each index equation constrains one of them alone: a congruence `u % p ==
r` (periodic indices of equal values up to a shift) or an equation `u == e` (an index of
slope +-1). In a nest the instances in program order are ordered lexicographically by
their loop indices, and a larger index leaves the loops inside it a range that holds the
smaller one's (bounds non-decreasing in enclosing indices), so the latest instance takes
the largest allowed value of each free index in turn: `ub - (ub - r) % p`, `e`, or the
range's end. The candidate exists when each value
lies in its range (the end of a range that may be empty, where it is at least LO) and
the equations that involve no free index hold. Its B is
(the F-instances of loop j's iterations u_j .. w_j - 1) + (those of its body before y) -
(those before x) - 1, each count a polynomial of the indices and parameters (a sum over
a triangular loop by Faulhaber's formulas, `power_sum`, with floors `(e + t) // p`
where a guard picks a residue class of a triangular loop's index).
A candidate nearer y in the list is later in program order, whichever producer it is of;
producers whose candidates tie at one level are ordered by their B where `bounds` decides
it, else the program is left to the general stage.

Where a candidate does not exist, the next one is tried. Consecutive candidates whose
counts agree where the earlier one is missing (`v >= LO + 1` fails: v = LO) merge, and a
last candidate whose count is <= 0 where none exists needs no `else 0`. Each threshold is
written in the cheapest of three equal forms: over the loop indices and parameters,
against `iters`, or against `count(F)`.
"""

from __future__ import annotations

import attrs

from semantics.context import Site, sites
from semantics.errors import Unsupported
from semantics.ir import BinOp, Compare, Const, Count, For, If, Iters, Max, Program, Range, Var, loops, map_loops, walk_expr
from semantics.simplify import linear, simplify
from semantics.symbolic import conflicting_pairs
from algorithm.threshold.facts import param_bounds
from algorithm.threshold.flat import check_index, least_bound
from algorithm.threshold.nest_candidates import Candidate, Nest  # noqa: F401  (the stage's parts, for its tests)
from algorithm.threshold.nest_guards import Guard, guard_of, parameter_residue
from algorithm.threshold.nest_pieces import chooser, each, piece_forms, threshold_of, written
from algorithm.threshold.reasoning import NotNest, minus, proves, settled  # noqa: F401  (NotNest: raised here)








def check_nest(program: Program) -> dict[str, Site]:
    """The program's sites when it is in the stage's class (module docstring), else NotNest."""
    if program.queues:
        raise NotNest("DMA queues")
    params = {p.name for p in program.params}
    found = sites(program)

    def visit(body, around):
        for stmt in body:
            if isinstance(stmt, If):
                g = guard_of(stmt.cond, True, around)  # (NotNest unless a guard of the class)
                if isinstance(g, Guard) and not isinstance(g.period, int):  # (`u % P == e`: P >= 1, 0 <= e < P)
                    taken = g.cond if g.op == "mod" else Compare("==", g.cond.left, g.cond.right)  # (`!=`: the else's)
                    _, _, e = parameter_residue(settled(taken), g.var, set(around))
                    where = param_bounds(program.params)
                    if not (proves(where, Compare(">=", g.period, Const(1))) and proves(where, Compare(">=", e, Const(0)))
                            and proves(where, Compare("<", e, g.period))):
                        raise NotNest("a guard with a period over the parameters whose residue may lie outside it")
                visit(stmt.then, around)
                visit(stmt.else_, around)
            if isinstance(stmt, For):
                lo = simplify(stmt.lo)
                if not isinstance(lo, Const) and ({n.name for n in walk_expr(lo) if isinstance(n, Var)} - params
                                                  or any(isinstance(n, (Iters, Count)) for n in walk_expr(lo))):
                    raise NotNest("a loop lower bound over more than the parameters")
                names = {n.name for n in walk_expr(stmt.hi) if isinstance(n, Var)}
                if any(isinstance(n, (Iters, Count)) for n in walk_expr(stmt.hi)):
                    raise NotNest("a loop upper bound over tracked counts")
                if not names <= params:
                    # A bound over enclosing indices: affine, and above LO wherever reached.
                    # Non-decreasing in each index: a larger enclosing index gives a range that
                    # holds the smaller one's, so the latest instance takes the largest index.
                    if not names <= params | set(around) or not _nondecreasing(stmt.hi, set(around)):
                        raise NotNest("a loop upper bound that is not affine and non-decreasing in the indices")
                    where = param_bounds(program.params)
                    where += [c for l in around.values() for c in (Compare("<=", l.lo, Var(l.var)), Compare("<", Var(l.var), l.hi))]
                    if not proves(where, Compare(">=", stmt.hi, stmt.lo)):
                        raise NotNest("a loop bound over enclosing indices that may fall below its lower bound")
                elif isinstance(lo, Const):
                    least = least_bound(program, stmt.hi) if names else simplify(stmt.hi).value
                    if least is None or least < lo.value:
                        raise NotNest("a loop that may have an upper bound below its lower bound")
                elif not proves(param_bounds(program.params), Compare(">=", stmt.hi, lo)):
                    raise NotNest("a loop that may have an upper bound below its lower bound")
                visit(stmt.body, {**around, stmt.var: stmt})

    visit(program.body, {})
    del visit
    least = param_bounds(program.params)
    engines: dict = {}  # per buffer, the engines that access it
    for site in found.values():
        for access in (*site.op.reads, *site.op.writes):
            engines.setdefault(access.buffer, set()).add(site.op.engine)
    for site in found.values():
        op = site.op
        if op.replica is not None or op.syncs or op.queue is not None:
            raise NotNest("peer clauses, queues or replicas")
        loop_vars = {l.var for l in site.loops}
        for access in (*op.reads, *op.writes):
            if len(engines[access.buffer]) == 1:
                continue  # (one engine's buffer: in-order execution, no dependence to count)
            for index in access.indices:
                if isinstance(index, Range):
                    bounds = {n.name for e in (index.lo, index.hi) for n in walk_expr(e) if isinstance(n, Var)}
                    if not bounds <= params | loop_vars or any(isinstance(n, (Iters, Count)) for e in (index.lo, index.hi)
                                                               for n in walk_expr(e)):
                        raise NotNest("a range over more than parameters and loop indices")
                    continue
                names = {n.name for n in walk_expr(index) if isinstance(n, Var)}
                if not names <= loop_vars | params or any(isinstance(n, (Iters, Count)) for n in walk_expr(index)):
                    raise NotNest("an index over more than loop indices and parameters")
                if len(names) <= 1 and names <= loop_vars:
                    check_index(index, next(iter(names), None), frozenset())
                for node in walk_expr(index):  # a divisor over parameters: at least 1 for every valuation
                    if isinstance(node, BinOp) and node.op in ("%", "//") and not isinstance(simplify(node.right), Const) \
                            and (node.op == "//" or not proves(least, Compare(">=", node.right, Const(1)))):
                        raise NotNest("a divisor over loop indices, or one that may be below 1")
                # (others: a congruence or slope +-1 in one free index, nest_equations.py)
    return found


def _nondecreasing(e, around: set) -> bool:
    """Whether a bound is affine in the indices with coefficients >= 0, or a `min` or
    `max` of such bounds."""
    from semantics.ir import Max, Min

    e = simplify(e)
    if isinstance(e, (Min, Max)):
        return _nondecreasing(e.left, around) and _nondecreasing(e.right, around)
    form = linear(e)
    return all(type(c) is int for c in form.values()) \
        and all(k is None or len(k) == 1 and isinstance(k[0], Var) for k in form) \
        and all(c >= 0 for k, c in form.items() if k is not None and k[0].name in around)


def plan_nest(program: Program, conflicts=conflicting_pairs, count_registers: bool = True, counts=None,
              untracked: frozenset = frozenset()):
    """(entries (op, engine, threshold), dependence pairs) of a nest of the class, or
    NotNest. `counts`: the Nest class (tests pass broken ones)."""
    return _planned(clamped(program), conflicts, count_registers, counts, untracked)[:2]


def clamped(program: Program) -> Program:
    """The program with each loop `for v in LO..HI`, LO a constant and HI over the
    parameters, whose HI may lie below LO written `for v in LO..max(HI, LO)`: the same
    iterations (none where HI <= LO), and a count HI - LO never below 0. The stage plans
    this program; its entries name ops, so they apply to the program as given."""
    params = {p.name for p in program.params}

    def below(loop: For) -> bool:
        lo, hi = simplify(loop.lo), loop.hi
        if not isinstance(lo, Const) or any(isinstance(n, (Iters, Count)) for n in walk_expr(hi)) \
                or not {n.name for n in walk_expr(hi) if isinstance(n, Var)} <= params:
            return False
        least = least_bound(program, hi)
        return least is None or least < lo.value

    if not any(below(loop) for loop in loops(program)):
        return program
    return attrs.evolve(program, body=map_loops(program.body, lambda loop: attrs.evolve(
        loop, hi=simplify(Max(loop.hi, loop.lo))) if below(loop) else loop))


def _planned(program, conflicts, count_registers, counts, untracked):
    found = check_nest(program)
    nest = (counts or Nest)(program, found, conflicts)
    by_buffer: dict = {}
    for site in found.values():
        for buffer in {a.buffer for a in site.op.reads + site.op.writes}:
            by_buffer.setdefault(buffer, []).append(site)
    planned, pairs = [], 0
    from algorithm.threshold.pipeline import checkpoint  # (here: pipeline imports this module)

    for n, y in enumerate(found.values()):
        checkpoint[0](f"threshold stage 'nest', op {y.op.name} ({n + 1}/{len(found)})")
        for engine in program.engines:
            if engine == y.op.engine:
                continue
            nest.residues_at_cap = False
            found_y = _threshold(nest, y, engine, by_buffer, conflicts, count_registers, untracked)
            if nest.residues_at_cap:  # (the cheaper of the two ways to take a periodic index at a cap)
                nest.split_at_cap = True
                split = _threshold(nest, y, engine, by_buffer, conflicts, count_registers, untracked)
                nest.split_at_cap = False
                if split[0] is not None and (found_y[0] is None or _arithmetic(split[0]) < _arithmetic(found_y[0])):
                    found_y = split
            forms, closed, cands, producers = found_y
            cands = [c for c in cands if c.below is None]  # (no instance of its own: threshold_of)
            pairs += producers
            if forms is not None:
                planned.append((y.op.name, engine, forms, closed, tuple((c.site, c) for c in cands)))
    choice = chooser([f for _, _, pieces, _, _ in planned for _, forms in pieces
                       for f in (forms[1:] if forms[0] == "max" else [forms])])
    return [(op, engine, written(pieces, choice), closed, sources)
            for op, engine, pieces, closed, sources in planned], pairs, nest


def _threshold(nest: Nest, y: Site, engine: str, by_buffer: dict, conflicts, count_registers, untracked):
    """(the pieces' forms or None where y needs no wait on the engine, the closed
    threshold, the candidates, how many producers conflict with y) of y's wait."""
    cands, producers = [], set()
    for buffer in sorted({a.buffer for a in y.op.reads + y.op.writes}):
        for x in by_buffer.get(buffer, ()):
            if x.op.engine != engine or x.op.name in producers:
                continue
            found_pairs = conflicts(x.op, y.op)
            if found_pairs:
                producers.add(x.op.name)
            for pair in found_pairs:
                cands += nest.candidates(x, y, pair, engine)
    pieces = threshold_of(nest, y, engine, cands)
    if pieces is None:
        return None, None, cands, len(producers)
    before = nest.before_y(y, engine)
    closed = written([(p.conditions, each(p.gap, lambda g: [minus(before, g)])) for p in pieces], lambda forms: forms[0])
    if isinstance(closed, Const) and closed.value <= 0:
        return None, closed, cands, len(producers)
    forms = [(p.conditions, piece_forms(nest, y, engine, p, count_registers, untracked)) for p in pieces]
    return forms, closed, cands, len(producers)


def _arithmetic(forms) -> int:
    """The run-time operations of a wait written from its pieces' cheapest forms."""
    from semantics.evaluate import arithmetic_ops

    return arithmetic_ops(written(forms, lambda f: f[0]))


def in_order_sources(nest: Nest, y: Site, same: list, tops: list):
    """The latest instances before y of the ops of y's engine that irredundant.nearby
    names, as its Sources (in-order execution completed them before y issued), by the
    stage's candidates with no index equation; None where one leaves the class."""
    from semantics.ir import Access
    from algorithm.threshold.irredundant import Source, nearby

    out = []
    try:
        for e in nearby(y, same, tops):
            found = nest.candidates(e, y, (Access("", ()), Access("", ())), None)
            if any(c.below is not None for c in found):
                return None
            out += [Source(e, c.condition, c.values, None) for c in found]
    except Unsupported:
        return None
    return out


def completed_before(nest: Nest, z: Site, engine: str):
    """The engine's instances before z in program order, over z's indices: when z runs on
    the engine, they completed before z did (the redundancy proofs' requirement of z)."""
    return nest.before_y(z, engine)


def sync_nest(program: Program, options, only: frozenset | None = None, untracked: frozenset = frozenset()):
    """(plan entries, dependence pairs, waits dropped as redundant) of a nest of the class,
    or None (the later stages plan it). Waits that a concrete run does not show needed
    go to the general stage's redundancy proofs (irredundant.py), which may drop them.
    `only`: the ops whose waits may be dropped (irredundant's); `untracked`: loops whose
    `iters` no threshold may read (compose.py's stand-in loops)."""
    from algorithm.threshold.irredundant import irredundant, shown_necessary
    from algorithm.threshold.plan import Plan, PlanEntry

    try:
        program = clamped(program)  # (the same instances: the entries apply to the program as given)
        planned, pairs, nest = _planned(program, options.conflicts, options.count_registers, None, untracked)
    except Unsupported:
        return None
    entries = [PlanEntry(op, engine, t, True, sources=sources, closed=closed)
               for op, engine, t, closed, sources in planned]
    necessary = shown_necessary(program, entries, options)
    if necessary == {(e.op, e.engine) for e in entries}:
        return entries, pairs, 0
    kept, dropped = irredundant(program, Plan(entries), options.conflicts, only=only, options=options,
                                necessary=necessary, same_engine=lambda y, same, tops: in_order_sources(nest, y, same, tops),
                                counted=lambda z, engine: completed_before(nest, z, engine))
    return kept, pairs, dropped
