"""`flags`: Ascend-style set/wait flags (PTOAS / PyPTO InsertSync).

Source. On Ascend AI cores, pipes (MTE2, MTE1, Cube, Vector, MTE3, ...) synchronize
with `set_flag(src_pipe, dst_pipe, event_id)` / `wait_flag(src_pipe, dst_pipe,
event_id)`: 1-bit flags, 8 event ids per ordered pipe pair; `wait_flag` blocks until
the flag is set and clears it, setting a flag that is already set is an error. The
compiler passes (PTOAS, PyPTO's InsertSync) place a set after each producer and a
wait before each consumer, compensate loop-carried (backward) dependences by a set
before the loop (prime) and a wait after it (drain), select event ids by iteration
parity for double buffers, and fall back to a full pipe barrier when event ids run
out. This module follows those rules on the shared plan of algorithm/peers.py; the
code is written from that description, not copied.

Rule. Every sync point A -> B of the plan becomes R *rings* (R = 2 for a
same-iteration point in a loop, R = D + 1 for a carried point of distance D, else 1),
ring r = (a flag A -> B, id f + r; a credit flag B -> A, id c + r), selected by
`v % R` for the loop variable v (consecutive iterations use consecutive rings, so
parity for R = 2):

    A, after item `after`:  waitflag B:c + v % R   setflag B:f + v % R
    B, before item `before`: waitflag A:f + v % R   setflag A:c + v % R

(for a carried point B's ring is (v + 1) % R = (v - D) % R: the one A set D
iterations earlier; see `_shifted_rings`).

The credit is what makes 1-bit flags safe: A sets flag f only after B has consumed
its previous set (B returns the credit), so no flag is ever set twice, however far
ahead A runs (at most R iterations). Every credit is set once at the program's start
(B) and consumed once at its end (A). A carried point of distance D additionally
primes D flags before the loop (A: credit wait + set, one per ring; the first D
iterations of B match them) and drains D after the loop (B: wait + credit set),
so each ring is back to "flag clear, credit set" after the loop whatever its trip
count (zero included), and the next run of the loop (an enclosing loop) starts clean.

Ascend's own pattern needs fewer flags: a same-iteration point A -> B and a carried
point B -> A of the same loop that cross each other (B signals the carried flag after
its forward wait, A waits for it before its forward set) already form a ring (see
`_pairs`), so the forward point uses the carried point's rotation R = D and no
credit, and the carried point keeps credits only for its prime and drain (which
order the next run's prime after this run's drain).

Ids are allocated per ordered engine pair (8 per pair): a flag id is never shared
by points whose runs may overlap, and is reused by blocks that run one after the
other (two loops in a row, the branches of an `if`), since every ring is back to
"flag clear, credit set" after each run; credit ids stay set between uses, so on
each pair they sit above every flag id. When they do not fit, carried
points that wait before they signal drop to D rings (whose credit then comes from
B's wait of the same iteration), then same-iteration points to one ring, then both;
when they still do not fit, the whole program falls back to the `barrier` strategy
(Ascend: a full barrier), counted in the stats.

Sound and deadlock-free by construction: every wait's matching set comes earlier
in program order (so the program-order run is a run, and the waits are monotone),
and a signal after item p covers every earlier instance of its engine.
"""

from __future__ import annotations

from semantics.errors import LimitReached
from semantics.ir import FLAG_IDS, BinOp, Const, Max, Program, Sync, Var
from semantics.simplify import simplify
from algorithm.peers import Lowered, allocate, plan, rewrite, strip_sync


class OutOfIds(LimitReached):
    """More than 8 flag ids on some engine pair (internal: triggers the fallback)."""


def _id(base: int, var: str | None, rings: int):
    if rings == 1 or var is None:
        return Const(base)
    rotate = BinOp("%", Var(var), Const(rings))
    return rotate if base == 0 else BinOp("+", Const(base), rotate)


def _pairs(forward, carried) -> bool:
    """Ascend's pattern: a same-iteration point A -> B (RAW) and a carried point B -> A
    (WAR) of one loop form a ring by themselves when B signals the carried flag after
    its forward wait and A waits for it before its forward set: A's set of iteration k
    then follows B's wait of iteration k - D on the same id, and B's carried set of
    iteration k follows A's carried wait of iteration k - D."""
    return (forward.source == carried.target and forward.target == carried.source
            and carried.before <= carried.after  # the carried point waits first
            and carried.after >= forward.before and carried.before <= forward.after)


def _partner(block, point):
    """The point of the other kind that `point` forms a ring with (the first one)."""
    if block.loop is None:
        return None
    for other in block.points:
        if point.carried and not other.carried and _pairs(other, point):
            return other
        if not point.carried and other.carried and _pairs(point, other):
            return other
    return None


def _shifted(block, point, compact: bool) -> bool:
    """A carried point not paired with a forward one: D + 1 rings (see `_shifted_rings`);
    `compact` (when ids are short): only if it signals before it waits, else D rings
    whose credit comes from B's wait of the same iteration."""
    if not point.carried or _partner(block, point) is not None:
        return False
    return not compact or point.before > point.after


def _rings(block, point, forward_rings: int, compact: bool = False) -> int:
    partner = _partner(block, point)
    if point.carried:
        return point.carried + 1 if _shifted(block, point, compact) else point.carried
    if partner is not None:
        return partner.carried
    return forward_rings if block.loop is not None else 1


def _shifted_rings(loop, point, flag: int, credit: int, rings: int, signal) -> Lowered:
    """A carried point without a partner. With R = D + 1 rings, iteration v sets ring
    v % R and waits for ring (v - D) % R = (v + 1) % R, so a ring's next set (iteration
    k + D + 1) comes after its wait (iteration k + D) whichever of the two comes first in
    the body (a prefetch signals first), and A's credit comes from B's wait of the
    previous iteration, not of this one (a credit returned by a long op of this
    iteration would hold A back). The prime sets the rings of the D iterations before
    the first, (lo - D + j) % R, and the drain takes those of the last D,
    (max(hi, lo) - D + j) % R: expressions of the loop's bounds, evaluated outside it."""
    a, b = point.source, point.target
    shifted = BinOp("%", BinOp("+", Var(loop.var), Const(1)), Const(rings))
    wait = (Sync("waitflag", a, BinOp("+", Const(flag), shifted)),
            Sync("setflag", a, BinOp("+", Const(credit), shifted)))

    def ring(base, bound, j):
        return simplify(BinOp("+", Const(base), BinOp("%", BinOp("+", bound, Const(j + 1)), Const(rings))))

    last = Max(loop.hi, loop.lo)
    prime = tuple(s for j in range(point.carried) for s in (
        Sync("waitflag", b, ring(credit, loop.lo, j)), Sync("setflag", b, ring(flag, loop.lo, j))))
    drain = tuple(s for j in range(point.carried) for s in (
        Sync("waitflag", a, ring(flag, last, j)), Sync("setflag", a, ring(credit, last, j))))
    return Lowered(signal, wait, prime, drain)


def lower_flags(program: Program, forward_rings: int = 2, compact: bool = False,
                implied: frozenset = frozenset()) -> Program:
    """The flags program (raises OutOfIds); `implied` as for `algorithm.peers.plan`."""
    program = strip_sync(program)
    plans = plan(program, implied)

    def need(block, point):
        rings = _rings(block, point, forward_rings, compact)
        out = [("flag", point.source, point.target, rings)]
        if point.carried or _partner(block, point) is None:
            out.append(("credit", point.target, point.source, rings))
        return out

    base, height = allocate(plans, need)
    # A credit stays set between uses, so credit ids never double as flag ids: on each
    # ordered pair, the credits sit above the flags.
    for (pool, source, target), count in height.items():
        if pool == "credit" and height.get(("flag", source, target), 0) + count > FLAG_IDS:
            raise OutOfIds(f"{source}->{target} needs more than {FLAG_IDS} flag ids")
        if pool == "flag" and count > FLAG_IDS:
            raise OutOfIds(f"{source}->{target} needs more than {FLAG_IDS} flag ids")
    credits: set[tuple[str, str, int]] = set()  # (engine setting it, engine waiting, id)

    def lower(block, point):
        a, b = point.source, point.target
        var = block.loop.var if block.loop is not None else None
        n = block.points.index(point)
        rings = _rings(block, point, forward_rings, compact)
        flag = base[(block.path, n, "flag")]
        f = _id(flag, var, rings)
        if (block.path, n, "credit") not in base:
            # The partner's flags order A's sets after B's waits: no credit needed.
            return Lowered((Sync("setflag", b, f),), (Sync("waitflag", a, f),))
        credit = height.get(("flag", b, a), 0) + base[(block.path, n, "credit")]
        credits.update((b, a, credit + r) for r in range(rings))
        c = _id(credit, var, rings)
        if _partner(block, point) is not None:  # carried, paired: credits only around the loop
            signal, wait = (Sync("setflag", b, f),), (Sync("waitflag", a, f),)
        else:
            signal = (Sync("waitflag", b, c), Sync("setflag", b, f))
            wait = (Sync("waitflag", a, f), Sync("setflag", a, c))
        if not point.carried:
            return Lowered(signal, wait)
        if _shifted(block, point, compact):
            return _shifted_rings(block.loop, point, flag, credit, rings, signal)
        prime = tuple(s for r in range(rings) for s in (Sync("waitflag", b, Const(credit + r)),
                                                         Sync("setflag", b, Const(flag + r))))
        drain = tuple(s for r in range(rings) for s in (Sync("waitflag", a, Const(flag + r)),
                                                         Sync("setflag", a, Const(credit + r))))
        return Lowered(signal, wait, prime, drain)

    # The credits' start and end ops are known once every point is lowered: the
    # rewrite runs twice (lowering is deterministic).
    rewrite(program, plans, lower, {}, {})
    start, end = {}, {}
    for setter, waiter, ident in sorted(credits):
        start.setdefault(setter, []).append(Sync("setflag", waiter, Const(ident)))
        end.setdefault(waiter, []).append(Sync("waitflag", setter, Const(ident)))
    return rewrite(program, plans, lower, start, end)


def flags(program: Program, implied: frozenset = frozenset()) -> tuple[Program, dict]:
    """The flags strategy and its statistics: the fewest rings only when ids run short."""
    from algorithm.barrier import barrier

    notes = []
    for rings, compact in ((2, False), (2, True), (1, False), (1, True)):
        try:
            return lower_flags(program, rings, compact, implied), {"fallback": 0, "forward_rings": rings,
                                                          "compact": compact, "notes": notes}
        except OutOfIds as why:
            notes.append(f"with {rings} ring(s) per same-iteration point{', compact' if compact else ''}: {why}")
    notes.append("fell back to the barrier strategy (Ascend: a full barrier when event ids run out)")
    return barrier(strip_sync(program)), {"fallback": 1, "forward_rings": 0, "notes": notes}
