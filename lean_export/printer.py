"""Lean 4 text for the kernel IR: one printer function per construct.

The output is a term of the types in `lean/Syncproof/Syntax.lean` (which mirrors
`semantics/ir.py`), written with plain core syntax only: constructor applications in
dot notation (`.add (.var "i") (.const 1)`), structure instances for ops, anonymous
constructors for accesses and waits, and `block [...]` for statement lists.

    >>> from semantics.ir import BinOp, Const, Var
    >>> lean_expr(BinOp("%", Var("i"), Const(2)))
    '.fmod (.var "i") (.const 2)'
"""

from __future__ import annotations

import re

from semantics.ir import (
    Access, And, Barrier, BinOp, Compare, Const, Count, For, If, IfExpr, Iters, Max, Min, Neg, Not,
    Op, Or, Program, Range, Stmt, Var, Wait, fold_expr,
)
from semantics.registers import inline_registers

INDENT = "  "

# Lean 4 keywords and reserved words a derived identifier must not be (they are
# escaped with «guillemets»). Kept generous: escaping a non-keyword is harmless.
LEAN_KEYWORDS = frozenset("""
    abbrev at axiom by calc class deriving do else end example export extends for from fun
    have if import in inductive infix infixl infixr instance let local macro match mutual
    namespace noncomputable notation open opaque partial prefix private protected rec return
    section set_option show structure suffices syntax termination_by then theorem this try
    universe unless variable where with Prop Sort Type sorry decreasing_by nomatch nofun
    omit include postfix private public scoped unsafe elab def
""".split())

_BINOPS = {"+": "add", "-": "sub", "*": "mul", "//": "fdiv", "%": "fmod"}
_COMPARE = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


# ------------------------------------------------------------------ names


def lean_string(text: str) -> str:
    """A Lean string literal.

    >>> lean_string('a"b')
    '"a\\\\"b"'
    """
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _words(name: str) -> list[str]:
    words = [w for w in re.split(r"[^A-Za-z0-9]+", name) if w]
    return words or ["kernel"]


def camel_name(name: str) -> str:
    """A lowerCamelCase Lean identifier for a kernel name (the program's definition).

    >>> camel_name("pipeline_db"), camel_name("2d_tile"), camel_name("def")
    ('pipelineDb', 'k2dTile', '«def»')
    """
    words = _words(name)
    ident = words[0][0].lower() + words[0][1:] + "".join(w[0].upper() + w[1:] for w in words[1:])
    if ident[0].isdigit():
        ident = "k" + ident[0].upper() + ident[1:]
    return f"«{ident}»" if ident in LEAN_KEYWORDS else ident


def module_name(name: str) -> str:
    """An UpperCamelCase module name (`Kernels/<Name>.lean`); never a keyword.

    >>> module_name("pipeline_db"), module_name("type")
    ('PipelineDb', 'TypeKernel')
    """
    ident = "".join(w[0].upper() + w[1:] for w in _words(name))
    if ident[0].isdigit():
        ident = "K" + ident
    return ident + "Kernel" if ident in LEAN_KEYWORDS else ident


def base_name(name: str) -> str:
    """The unescaped camel name, a prefix for derived names such as `pipelineDb_bisim`."""
    return camel_name(name).strip("«»")


# ------------------------------------------------------------ expressions


def _wrap(text: str) -> str:
    """An argument position: parenthesize anything but a bare literal."""
    return text if text.startswith('"') else f"({text})"


def _atom(node) -> str:
    """An expression in an argument position."""
    return _wrap(lean_expr(node))


def _const(node: Const) -> str:
    return f".const {node.value}" if node.value >= 0 else f".const ({node.value})"


# Each kind's term, given its node and its sub-terms' terms (semantics.ir.expr_children's
# order), each already in an argument position.
_EXPR_PRINTERS = {
    Const: _const,
    Var: lambda node: f".var {lean_string(node.name)}",
    Iters: lambda node: f".iters {lean_string(node.var)}",
    Count: lambda node: f".count {lean_string(node.engine)}",
    BinOp: lambda node, a, b: f".{_BINOPS[node.op]} {a} {b}",
    Neg: lambda node, a: f".neg {a}",
    Min: lambda node, a, b: f".min {a} {b}",
    Max: lambda node, a, b: f".max {a} {b}",
    IfExpr: lambda node, c, a, b: f".ite {c} {a} {b}",
    Compare: lambda node, a, b: f".cmp .{_COMPARE[node.op]} {a} {b}",
    And: lambda node, a, b: f".and {a} {b}",
    Or: lambda node, a, b: f".or {a} {b}",
    Not: lambda node, a: f".not {a}",
}


def _lean_node(node, inner: tuple) -> str:
    printer = _EXPR_PRINTERS.get(type(node))
    if printer is None:
        raise TypeError(f"not an expression: {node!r}")
    return printer(node, *map(_wrap, inner))


def lean_expr(node) -> str:
    """An `Expr` term (conditions included: they are `Expr` constructors in Lean)."""
    return fold_expr(node, _lean_node)


# ------------------------------------------------------------- statements


def lean_list(items: list[str]) -> str:
    return "[" + ", ".join(items) + "]"


def lean_index(node) -> str:
    """An `Index`: `.elem e` for one value, `.range lo hi` for a range `lo..hi`.

    >>> lean_index(Range(Const(0), Var("K")))
    '.range (.const 0) (.var "K")'
    """
    match node:
        case Range(lo=lo, hi=hi):
            return f".range {_atom(lo)} {_atom(hi)}"
    return f".elem {_atom(node)}"


def lean_access(node: Access) -> str:
    """An `Access` as an anonymous constructor: ⟨buffer, indices⟩."""
    return f"⟨{lean_string(node.buffer)}, {lean_list([lean_index(i) for i in node.indices])}⟩"


def lean_wait(node: Wait) -> str:
    """A `Wait` as an anonymous constructor: ⟨engine, threshold⟩."""
    return f"⟨{lean_string(node.engine)}, {lean_expr(node.threshold)}⟩"


def lean_op(node: Op) -> str:
    """An `Op` structure instance; fields at their default value are left out."""
    fields = [f"engine := {lean_string(node.engine)}", f"name := {lean_string(node.name)}"]
    if node.reads:
        fields.append(f"reads := {lean_list([lean_access(a) for a in node.reads])}")
    if node.writes:
        fields.append(f"writes := {lean_list([lean_access(a) for a in node.writes])}")
    if node.lat != 1:  # an int literal, or an expression (timing only)
        fields.append(f"lat := {lean_expr(Const(node.lat) if isinstance(node.lat, int) else node.lat)}")
    if node.waits:
        fields.append(f"waits := {lean_list([lean_wait(w) for w in node.waits])}")
    if node.queue is not None:
        fields.append(f"via := some {lean_string(node.queue)}")
    if node.replica is not None:
        fields.append(f"replica := some {lean_string(node.replica)}")
    return ".op { " + ", ".join(fields) + " }"


def lean_barrier(node: Barrier) -> str:
    return ".barrier"


def lean_for(node: For, depth: int) -> str:
    return (f".loop {lean_string(node.var)} {_atom(node.lo)} {_atom(node.hi)}\n"
            f"{INDENT * (depth + 1)}{lean_block(node.body, depth + 1)}")


def lean_if(node: If, depth: int) -> str:
    pad = INDENT * (depth + 1)
    return (f".cond {_atom(node.cond)}\n{pad}{lean_block(node.then, depth + 1)}\n"
            f"{pad}{lean_block(node.else_, depth + 1)}")


def lean_stmt(node: Stmt, depth: int = 0) -> str:
    """A `Stmt` term; nested blocks are indented one level deeper than `depth`."""
    match node:
        case Op():
            return lean_op(node)
        case For():
            return lean_for(node, depth)
        case If():
            return lean_if(node, depth)
        case Barrier():
            return lean_barrier(node)
    raise TypeError(f"not a statement: {node!r}")


def lean_block(body: tuple[Stmt, ...], depth: int = 0) -> str:
    """`block [...]` with one statement per line; `(block [])` when empty.

    >>> lean_block(())
    '(block [])'
    """
    if not body:
        return "(block [])"
    pad = INDENT * (depth + 1)
    items = ",\n".join(pad + lean_stmt(s, depth + 1) for s in body)
    return f"(block [\n{items}\n{INDENT * depth}])"


def lean_program(program: Program, name: str, ident: str) -> str:
    """`def <ident> : Program := { ... }`: engines (then queues), each queue's increment,
    each parameter's lower bound, the body. Loop registers, which the Lean language does
    not have, are replaced by their values (semantics/registers.py)."""
    program = inline_registers(program)
    lines = [
        f"def {ident} : Program :=",
        f"  {{ name := {lean_string(name)},",
        f"    engines := {lean_list([lean_string(e) for e in program.engines])},",
    ]
    if program.queues:
        lines.append(f"    queues := {lean_list([f'({lean_string(q.name)}, {q.increment})' for q in program.queues])},")
    lines += [
        f"    params := {lean_list([f'({lean_string(p.name)}, {p.lower})' for p in program.params])},",
        f"    body := {lean_block(program.body, 2)} }}",
    ]
    return "\n".join(lines)


def lean_valuation(valuation) -> str:
    """A `Valuation` literal from (name, value) pairs.

    >>> lean_valuation([("N", 2), ("D", 0)])
    '[("N", 2), ("D", 0)]'
    """
    return lean_list([f"({lean_string(k)}, {v})" for k, v in valuation])


def valuation_suffix(valuation) -> str:
    """A name suffix for a bounded instance: `N2_D0` (or `unit` without parameters)."""
    return "_".join(f"{re.sub(r'[^A-Za-z0-9]', '', k) or 'p'}{v}" for k, v in valuation) or "unit"
