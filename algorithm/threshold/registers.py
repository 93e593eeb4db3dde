"""Loop registers for the planned thresholds: what a compiler's loop-invariant code motion
and strength reduction do to the arithmetic of a wait.

A threshold is evaluated at every instance of its op. The parts of it that do not change
while some enclosing loop runs are moved into a register of that loop
(docs/language.md, "Loop registers"), set once per entry of the loop; a term `c * v` of
the loop's own index becomes a register advanced by `c` at each back-edge:

    for m in 0..MB {                         for m in 0..MB with r1 = iters(bkr) - TK + 1 {
      ...                                      ...
          for bk in 0..TK {            ->          for bk in 0..TK {
            PE mm ... wait DMA0 >= bk + iters(bkr) - TK + 1      PE mm ... wait DMA0 >= bk + r1

The rewrite is an identity: it reassociates sums (`+` and `-` only) and names
sub-expressions, so the inlined program (semantics/registers.py) has thresholds equal to
the planned ones at every instance; the checkers verify the output like any other.
A register is made only where its header is fixed for the whole loop, as the language
requires (no index of the loop or of a loop inside it, no `iters` of such loops, no
`count(F)` of an engine with ops inside it), at the outermost loop where that holds.

It never adds arithmetic as verify/cost.py counts it (the operations of each threshold,
plus each register's initial value, at least one, and its step plus one): a wait is
rewritten only when its operations and those of the registers made for it (one made for
an earlier wait is free) are no more than before, so the sum over the program cannot
grow.
"""

from __future__ import annotations

import attrs

from semantics.ir import (
    BinOp, Const, Count, For, If, IfExpr, Iters, Max, Min, Neg, Op, Program, Register, Var, as_read, expr_children,
    walk_expr, walk_stmts,
    with_children,
)
from semantics.registers import register_ops


@attrs.frozen
class _Loop:
    node: For
    inner_vars: frozenset  # its own index and those of the loops inside it
    counted: frozenset  # engines and queues with ops counted inside it


def with_loop_registers(program: Program) -> Program:
    """`program` with its thresholds' loop-invariant parts in loop registers (above)."""
    if not any(isinstance(s, Op) and s.waits for s in walk_stmts(program.body)):
        return program
    rewriter = _Rewriter(program)
    body = rewriter.body(program.body, ())
    return attrs.evolve(program, body=body) if rewriter.log else program


class _Rewriter:
    def __init__(self, program: Program):
        self.taken = {p.name for p in program.params}
        for stmt in walk_stmts(program.body):
            if isinstance(stmt, For):
                self.taken.add(stmt.var)
            if isinstance(stmt, Op):
                self.taken.update(n.name for w in stmt.waits for n in walk_expr(w.threshold) if isinstance(n, Var))
        self.made: dict = {}  # id of loop -> {(init, step): Register}, in order of creation
        self.log: list = []  # (id of loop, (init, step), Register) in order of creation: a wait's own are last
        self.number = 1  # the next register name tried: r1, r2, ...
        self.owner: dict[str, int] = {}  # register name -> the depth of its loop
        self.floor = 0  # the op being rewritten: its loops outside its innermost `if`

    # ---- the walk over the program
    def body(self, body, loops: tuple, floor: int = 0) -> tuple:
        """`floor`: how many of `loops` lie outside the innermost `if` around `body`; a
        register goes only into a loop inside it, so that each entry of its loop reaches
        the waits that read it (a register outside an `if` would be set at entries where
        the branch is not taken)."""
        out = []
        for stmt in body:
            match stmt:
                case Op(waits=waits) if waits and len(loops) > floor:
                    self.floor = floor
                    out.append(attrs.evolve(stmt, waits=tuple(
                        attrs.evolve(w, threshold=self.rewrite(w.threshold, loops)) for w in waits)))
                case For():
                    inner = [s for s in walk_stmts((stmt,))]
                    loop = _Loop(stmt, frozenset(s.var for s in inner if isinstance(s, For)),
                                 frozenset(s.queue or s.engine for s in inner if isinstance(s, Op)))
                    inner_body = self.body(stmt.body, loops + (loop,), floor)  # makes the loop's registers
                    made = tuple(self.made.pop(id(stmt), {}).values())
                    out.append(attrs.evolve(stmt, body=inner_body, registers=stmt.registers + made))
                case If():
                    out.append(attrs.evolve(stmt, then=self.body(stmt.then, loops, len(loops)),
                                            else_=self.body(stmt.else_, loops, len(loops))))
                case _:
                    out.append(stmt)
        return tuple(out)

    def rewrite(self, threshold, loops: tuple):
        """The threshold reading registers, where that is no more arithmetic than before
        (counting the registers made for it; one made for an earlier wait is free)."""
        self.loops, self.deps, self.costs = loops, {}, {}
        self.var_depth = {loop.node.var: d for d, loop in enumerate(loops)}
        before = len(self.log)
        out = self.reduce(threshold, loops)
        made = self.log[before:]
        if self.ops(out) + sum(sum(register_ops(reg)) for _, _, reg in made) <= self.ops(threshold):
            return out
        for loop_id, key, reg in made:
            del self.made[loop_id][key], self.owner[reg.name]
        del self.log[before:]
        return threshold

    # ---- the rewrite of one expression, evaluated inside loops[-1]
    def dep(self, node) -> int:
        """The depth (0: the outermost) of the innermost of the op's loops in which `node`
        changes while it runs, -1 for none: a loop's index, a register of the loop, `iters`
        of the loop or of a loop inside it, `count(F)` with F-ops inside it. Memoized per
        threshold (the nodes live as long as it)."""
        hit = self.deps.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        kind = type(node)
        if kind is Var:
            depth = self.owner.get(node.name, -1)
            if depth < 0:
                depth = self.var_depth.get(node.name, -1)
        elif kind is Iters:
            depth = self.iters_depth(node.var)
        elif kind is Count:
            depth = self.count_depth(node.engine)
        else:
            depth = -1
            for child in expr_children(node):
                d = self.dep(child)
                if d > depth:
                    depth = d
        self.deps[id(node)] = (node, depth)
        return depth

    def iters_depth(self, var: str) -> int:
        return max((d for d, l in enumerate(self.loops) if var in l.inner_vars), default=-1)

    def count_depth(self, engine: str) -> int:
        return max((d for d, l in enumerate(self.loops) if engine in l.counted), default=-1)

    def invariant(self, node, depth: int) -> bool:
        """`node` holds one value while the op's loop at `depth` runs."""
        return self.dep(node) < depth

    def ops(self, node) -> int:
        """`arithmetic_ops(node)`, memoized per threshold."""
        hit = self.costs.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        children = expr_children(node)
        if not children:
            cost = 0
        elif type(node) is IfExpr:
            cost = 1 + self.ops(children[0]) + max(self.ops(children[1]), self.ops(children[2]))
        else:
            cost = 1 + sum(self.ops(child) for child in children)
        self.costs[id(node)] = (node, cost)
        return cost

    def reduce(self, node, loops: tuple):
        if len(loops) <= self.floor:
            return node
        depth = len(loops) - 1
        if not isinstance(node, _INTEGER):  # a condition: a register holds an integer
            return with_children(node, tuple(self.reduce(child, loops) for child in expr_children(node)))
        if isinstance(node, IfExpr) and self.invariant(node.cond, depth):
            node = _factor(node, lambda t: self.invariant(t, depth))
        if self.invariant(node, depth):
            if self.ops(node) == 0:
                return node
            outer = max(self.dep(node) + 1, self.floor)
            return self.register(loops[: outer + 1], self.reduce(node, loops[:outer]), None)
        terms = _terms(node)
        if len(terms) > 1:
            return self.reduce_sum(terms, loops)
        return with_children(node, tuple(self.reduce(child, loops) for child in expr_children(node)))

    def reduce_sum(self, terms: list, loops: tuple):
        loop, depth = loops[-1], len(loops) - 1
        fixed = [(sign, t) for sign, t in terms if self.invariant(t, depth)]
        moving = [(sign, t) for sign, t in terms if not self.invariant(t, depth)]
        if len(moving) == 1 and loop.node.lo == Const(0):
            sign, term = moving[0]
            scale = _scale(term, loop.node.var)
            if scale is not None and scale != Const(1) and self.invariant(scale, depth):
                # init + scale * v: a register of this loop advanced by `scale` at each back-edge
                init = self.reduce(_sum(fixed), loops[:-1]) if fixed else Const(0)
                step = self.reduce(scale if sign > 0 else _negate(scale), loops[:-1])
                return self.register(loops, init, step)
        rest = [(sign, self.reduce(t, loops)) for sign, t in moving]
        if fixed and all(sign < 0 for sign, _ in _signed(fixed)):  # `v - a - b`: a register for `a + b`
            rest.append((-1, self.reduce(_sum([(-sign, t) for sign, t in fixed]), loops)))
        elif fixed:
            rest.append((1, self.reduce(_sum(fixed), loops)))
        return _sum(rest)

    def register(self, loops: tuple, init, step):
        """The register of `loops[-1]` holding `init` (advanced by `step`): a new one,
        or the one made before for the same header; `init` itself when it is an atom."""
        if step is None and self.ops(init) == 0:
            return init
        loop_id, key = id(loops[-1].node), (init, step)
        reg = self.made.setdefault(loop_id, {}).get(key)
        if reg is None:
            reg = Register(self.fresh(), as_read(init), None if step is None else as_read(step))
            self.made[loop_id][key] = reg
            self.log.append((loop_id, key, reg))
            self.owner[reg.name] = len(loops) - 1
        return Var(reg.name)

    def fresh(self) -> str:
        while f"r{self.number}" in self.taken:
            self.number += 1
        self.taken.add(f"r{self.number}")
        return f"r{self.number}"


_INTEGER = (BinOp, Const, Count, IfExpr, Iters, Max, Min, Neg, Var)


def _factor(node: IfExpr, fixed):
    """`if c then v + a else v + b` as `v + (if c then a else b)` when both branches have
    the same terms `v` that are not `fixed` (the same operations: one `+` moves out)."""
    then, else_ = _terms(node.then), _terms(node.else_)
    moving = [t for t in then if not fixed(t[1])]
    if not moving or sorted(map(repr, moving)) != sorted(repr(t) for t in else_ if not fixed(t[1])):
        return node
    branches = [[t for t in side if fixed(t[1])] for side in (then, else_)]
    inner = IfExpr(node.cond, *(_sum(b) if b else Const(0) for b in branches))
    return _sum(moving + [(1, inner)])


def _terms(node, sign: int = 1) -> list:
    """A sum as its signed terms, left to right: `a - b + c` is [(1, a), (-1, b), (1, c)]."""
    match node:
        case BinOp(op="+", left=a, right=b):
            return _terms(a, sign) + _terms(b, sign)
        case BinOp(op="-", left=a, right=b):
            return _terms(a, sign) + _terms(b, -sign)
    return [(sign, node)]


def _signed(terms: list) -> list:
    """Negative literals as subtracted positive ones."""
    return [(-sign, Const(-t.value)) if isinstance(t, Const) and t.value < 0 else (sign, t) for sign, t in terms]


def _sum(terms: list):
    """The signed terms as one expression of the fewest operations: a positive term first."""
    terms = _signed(terms)
    first = next((k for k, (sign, _) in enumerate(terms) if sign > 0), None)
    if first is None:
        out = _negate(terms[0][1])
        rest = terms[1:]
    else:
        out = terms[first][1]
        rest = terms[:first] + terms[first + 1:]
    for sign, term in rest:
        out = BinOp("+" if sign > 0 else "-", out, term)
    return out


def _negate(node):
    return Const(-node.value) if isinstance(node, Const) else Neg(node)


def _scale(term, var: str):
    """c for a term `var`, `c * var` or `var * c`; None otherwise."""
    match term:
        case Var(name=name) if name == var:
            return Const(1)
        case BinOp(op="*", left=Var(name=name), right=c) if name == var:
            return c
        case BinOp(op="*", left=c, right=Var(name=name)) if name == var:
            return c
    return None
