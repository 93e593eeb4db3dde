"""What the reading of one kernel accumulates (semantics/nki/reader.py): the statements
emitted so far, the names in use, the shape parameters, the tensors, and the plan that
a first reading leaves for the second (semantics/nki/importer.py runs two).

Shape parameters. A dimension of a kernel argument read by the kernel (`a.shape[0]`,
`K, M = a.shape`) is a parameter, named `ARG_DIM` (`a_0`) unless the kernel binds it to
a plain name first (`K, M = a.shape`, `num_rows = a.shape[0]`: `K`, `M`, `num_rows`); an
`assert K == K_` between two of them makes them one. A dimension the kernel divides by
constants (`M // 128`, `math.ceil(n / 128)`) is taken to be a multiple of their least
common multiple L and is counted in tiles: the parameter `M_tiles` stands for M / L,
and M itself is `L * M_tiles`. Every shape parameter has the lower bound 1 (a tensor's
dimensions are positive) and the default 2.
"""

from __future__ import annotations

import math

import attrs

from semantics.ir import Loc, Op, Var
from semantics.validate import KEYWORDS


@attrs.define
class Plan:
    """What the first reading learnt about the shape parameters."""

    names: dict = attrs.Factory(dict)  # base name (a_0) -> the kernel's name for it
    divisors: dict = attrs.Factory(dict)  # base name -> set of constant divisors
    aliases: dict = attrs.Factory(dict)  # base name -> the base name it equals

    def canonical(self, base: str) -> str:
        seen = set()
        while base in self.aliases and base not in seen:
            seen.add(base)
            base = self.aliases[base]
        return base

    def tile(self, base: str) -> int:
        group = [b for b in self.divisors if self.canonical(b) == self.canonical(base)]
        return math.lcm(*(d for b in group for d in self.divisors[b])) if group else 1

    def name(self, base: str) -> str:
        canon = self.canonical(base)
        for b in (canon, *sorted(b for b in self.names if self.canonical(b) == canon)):
            if b in self.names:
                return self.names[b]
        return canon


@attrs.define
class ParamInfo:
    name: str
    lower: int
    default: int
    note: str | None = None


@attrs.define
class State:
    filename: str
    plan: Plan
    first_pass: bool
    overrides: dict
    bodies: list = attrs.Factory(lambda: [[]])
    loops: list = attrs.Factory(list)  # kernel names of the enclosing loop variables
    used: set = attrs.Factory(set)  # every kernel-language name taken so far
    params: dict = attrs.Factory(dict)  # kernel name -> ParamInfo, in creation order
    dims: dict = attrs.Factory(dict)  # (arg, dim) -> the dimension's value (int / Sym)
    bases: dict = attrs.Factory(dict)  # base param name -> (arg, dim)
    tensors: dict = attrs.Factory(dict)  # buffer name -> Tensor
    args: set = attrs.Factory(set)  # the kernel's arguments without a default
    engines: list = attrs.Factory(list)
    dynamic: int = 0  # > 0 inside a loop or a shape-dependent if

    def fresh(self, name: str) -> str:
        """`name`, or `name_2`, `name_3`, ...: unused in the kernel and not a keyword."""
        base = name if name not in KEYWORDS else name + "_"
        candidate, n = base, 1
        while candidate in self.used:
            n += 1
            candidate = f"{base}_{n}"
        self.used.add(candidate)
        return candidate

    def emit(self, stmt) -> None:
        self.bodies[-1].append(stmt)
        if isinstance(stmt, Op) and stmt.engine not in self.engines:
            self.engines.append(stmt.engine)

    def loop_vars(self) -> tuple:
        return tuple(Var(v) for v in self.loops)


def loc_of(node) -> Loc:
    return Loc(getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1)
