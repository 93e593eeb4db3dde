"""Static positions of ops: the loops and if-branches around each op, and program
order between two static positions at the same iteration of their common loops.

A `Site` is an op with its trail: one `Step` per nesting level, from the program
body down to the op itself. Two sites share a prefix of steps (their common loops
and branches); the first differing step says which comes first in program order.
"""

from __future__ import annotations

import attrs

from semantics.ir import Barrier, For, If, Op, Program


@attrs.frozen
class Step:
    index: int  # statement index in the enclosing body
    stmt: object  # the For, If or Op at that index
    branch: bool | None = None  # for an If: True in `then`, False in `else`


@attrs.frozen
class Site:
    op: Op
    trail: tuple[Step, ...]  # outermost first; the last step is the op itself

    @property
    def loops(self) -> tuple[For, ...]:
        return tuple(s.stmt for s in self.trail[:-1] if isinstance(s.stmt, For))

    @property
    def guards(self) -> tuple[tuple[If, bool], ...]:
        return tuple((s.stmt, s.branch) for s in self.trail[:-1] if isinstance(s.stmt, If))


def sites(program: Program) -> dict[str, Site]:
    """Every op's site, by op name, in source order."""
    found: dict[str, Site] = {}

    def visit(body, trail):
        for index, stmt in enumerate(body):
            match stmt:
                case Op():
                    found[stmt.name] = Site(stmt, trail + (Step(index, stmt),))
                case For():
                    visit(stmt.body, trail + (Step(index, stmt),))
                case If():
                    visit(stmt.then, trail + (Step(index, stmt, True),))
                    visit(stmt.else_, trail + (Step(index, stmt, False),))
                case Barrier():
                    pass

    visit(program.body, ())
    del visit  # a recursive closure is a reference cycle: freed at once, not by the collector
    return found


def _same(a: Step, b: Step) -> bool:
    return a.index == b.index and a.branch == b.branch and isinstance(a.stmt, Op) == isinstance(b.stmt, Op)


def common_depth(x: Site, y: Site) -> int:
    """Number of leading steps x and y share (their common loops and branches)."""
    depth = 0
    for a, b in zip(x.trail[:-1], y.trail[:-1]):
        if not _same(a, b):
            break
        depth += 1
    return depth


def static_order(x: Site, y: Site) -> str:
    """At equal iterations of their common loops: 'before' if x precedes y,
    'after' if it follows, 'exclusive' if they sit in different branches of one `if`,
    'same' if x is y."""
    depth = common_depth(x, y)
    a, b = x.trail[depth], y.trail[depth]
    if a.index != b.index:
        return "before" if a.index < b.index else "after"
    if a.branch != b.branch:
        return "exclusive"
    return "same"
