"""The meaning of loop registers (docs/language.md, "Loop registers").

A loop `for v in lo..hi with r = init step s { ... }` gives every engine that reads `r` a
register set to `init` when the loop is entered and advanced by `s` at each back-edge.
The static checks (semantics/validate.py `check_header`) make `init`, `s` and `lo` fixed
for the whole run of the loop, so in iteration v the register holds exactly

    init + s * (v - lo)

evaluated anywhere inside the loop. That is the whole meaning: `inline_registers`
replaces each read of a register by this expression, and every checker, the machines,
the all-values proof and the Lean export work on the result. Only the timing model reads
the registers themselves, to charge their updates where they happen.
"""

from __future__ import annotations

import attrs

from semantics.evaluate import arithmetic_ops
from semantics.ir import BinOp, Const, For, If, Op, Program, Register, Var, map_expr, walk_stmts


def has_registers(program: Program) -> bool:
    return any(isinstance(s, For) and s.registers for s in walk_stmts(program.body))


def stepped(register: Register) -> bool:
    """Whether the register is advanced at back-edges (a literal `step 0` is no step)."""
    return register.step is not None and register.step != Const(0)


def register_ops(register: Register) -> tuple[int, int]:
    """The arithmetic operations a register costs (the timing model and the cost
    function): setting it at a loop entry, at least one; advancing it at a back-edge, its
    step's operations and the add (0 without a step). Registers its header reads are atoms."""
    return max(1, arithmetic_ops(register.init)), (1 + arithmetic_ops(register.step)) if stepped(register) else 0


def registers_of(program: Program) -> dict[str, tuple[For, Register]]:
    """Every loop register of `program` by name (names are unique in a kernel), with its loop."""
    return {reg.name: (stmt, reg) for stmt in walk_stmts(program.body) if isinstance(stmt, For)
            for reg in stmt.registers}


def register_value(register: Register, loop: For):
    """The value of `register` (declared on `loop`) in iteration `loop.var`, from its
    header: `init + step * (var - lo)` (`init` without a step)."""
    if not stepped(register):
        return register.init
    offset = Var(loop.var) if loop.lo == Const(0) else BinOp("-", Var(loop.var), loop.lo)
    scaled = offset if register.step == Const(1) else BinOp("*", register.step, offset)
    return BinOp("+", register.init, scaled)


def substitute(node, values: dict):
    """`node` with every read of a register named in `values` replaced by its value."""
    if not values:
        return node
    return map_expr(node, lambda sub: values.get(sub.name, sub) if isinstance(sub, Var) else sub)


def inline_registers(program: Program) -> Program:
    """The same program without loop registers: each read replaced by the register's
    value (the program itself when it has none)."""
    if not has_registers(program):
        return program
    return attrs.evolve(program, body=_inline_body(program.body, {}))


def _inline_body(body, values: dict) -> tuple:
    out = []
    for stmt in body:
        match stmt:
            case Op():
                if values and stmt.waits:
                    stmt = attrs.evolve(stmt, waits=tuple(attrs.evolve(w, threshold=substitute(w.threshold, values))
                                                          for w in stmt.waits))
                out.append(stmt)
            case For():
                inner = values
                if stmt.registers:
                    inner = dict(values)
                    for reg in stmt.registers:  # a header reads the enclosing loops' registers only
                        plain = attrs.evolve(reg, init=substitute(reg.init, values),
                                             step=None if reg.step is None else substitute(reg.step, values))
                        inner[reg.name] = register_value(plain, stmt)
                out.append(attrs.evolve(stmt, body=_inline_body(stmt.body, inner), registers=()))
            case If():
                out.append(attrs.evolve(stmt, then=_inline_body(stmt.then, values),
                                        else_=_inline_body(stmt.else_, values)))
            case _:
                out.append(stmt)
    return tuple(out)
