"""`sync --emit mlir`: a synchronized imported program back in MLIR (generic form).

The case's MLIR is re-parsed and edited in place:
- every `snax.cluster_sync_op` of the input (and `func.call @snax_cluster_hw_barrier`,
  the barrier after snax-to-func), `syncproof.wait` and `syncproof.signal` is removed,
  and a `snax.cluster_sync_op` is inserted for each
  `barrier` of the synchronized program, right before the MLIR op of the statement
  that follows it (or at the end of its block, before the terminator);
- every wait becomes, right before its op,
  `"syncproof.wait"(%iv) {core = "COMPUTE", counter = "DM", threshold = "iv // 16 + 1", names = "iv"}`:
  the core `core` may start the op once the completion counter of `counter` is at
  least `threshold`, a kernel-language expression over
  - the op's operands, named in order by `names`: the induction variables of the
    enclosing `scf.for`s (their real values: `%iv` steps 0, 16, 32, ... above), and
    a loop's lower bound, upper bound or step (`iv_lo`, `iv_hi`, `iv_step`) when it is
    not a constant;
  - the parameters that `syncproof import-mlir` prints (values the import could not
    compute, named after them), and `iters(v)`, the iterations of loop `v` started so
    far over every run of that loop, where loop `v` is the `scf.for` that carries the
    attribute `syncproof.loop = "v"` (every loop gets one), and `count(C)`, the ops of
    core C before the op in program order;
  an op split on an `arith.select` gets one wait per counter, with an
  `if ... then ... else ...` threshold. (The kernel program counts trips 0, 1, 2, ...
  of a loop with a step; the emitted threshold substitutes `(iv - lo) // step` for the
  trip index, so it is exact over `%iv`.)
- after each op whose core's counter some wait reads,
  `"syncproof.signal"() {core = "DM"}`: that core increments its counter in shared
  memory (TCDM atomic add) once the op has completed.
"""

from __future__ import annotations

import io

import attrs

from semantics.ir import BinOp, Barrier, Const, For, If, IfExpr, Max, Op, Program, Var
from semantics.printer import print_expr
from semantics.registers import inline_registers
from semantics.simplify import simplify
from semantics.mlir.dialect import SIGNAL, WAIT, context, signal_op, wait_op
from semantics.mlir.importer import Imported, anchor
from semantics.mlir.parse import op_name, parse_chunk

BARRIER = "snax.cluster_sync_op"


def _make(name: str, operands=(), **attributes):
    from xdsl.dialects.builtin import StringAttr, UnregisteredOp

    attributes = {k: v for k, v in attributes.items() if k != "names" or v}
    return UnregisteredOp.with_name(name).create(operands=list(operands),
                                                 attributes={k: StringAttr(v) for k, v in attributes.items()})


def _string(text: str):
    from xdsl.dialects.builtin import StringAttr

    return StringAttr(text)


@attrs.frozen
class _Loop:
    """An scf.for seen from the kernel: its trip index `var` is `(iv - lo) // step`;
    `lo`, `hi`, `step` are constants (Const) or SSA values."""

    iv: object
    lo: object
    hi: object
    step: object


def _constant(value):
    """Const of an `arith.constant` integer, else the SSA value itself."""
    from semantics.mlir.parse import prop

    owner = getattr(value, "owner", None)
    if owner is not None and op_name(owner) == "arith.constant":
        data = getattr(getattr(prop(owner, "value"), "value", None), "data", None)
        if isinstance(data, int):
            return Const(data)
    return value


def _induction(var: str, loop) -> _Loop:
    lo, hi, step = (_constant(v) for v in loop.operands[:3])
    return _Loop(loop.regions[0].blocks[0].args[0], lo, hi, step)


def _over_induction_variables(threshold, scope: dict):
    """The threshold with each loop's trip index replaced by `(iv - lo) // step` (just
    `iv` for a step-1 loop, whose kernel variable is the induction variable itself),
    `trips_v` by `(hi - lo + step - 1) // step`, and the SSA values it needs as
    operands: [(name, value)]."""
    operands: dict = {}

    def term(name, part):
        if isinstance(part, Const):
            return part
        operands.setdefault(name, part)
        return Var(name)

    def trip_index(var):
        loop = scope[var]
        iv = term(var, loop.iv)
        if loop.step == Const(1):
            return iv
        lo, step = term(f"{var}_lo", loop.lo), term(f"{var}_step", loop.step)
        return BinOp("//", BinOp("-", iv, lo), step)

    def trips(var):
        loop = scope[var]
        lo, hi, step = term(f"{var}_lo", loop.lo), term(f"{var}_hi", loop.hi), term(f"{var}_step", loop.step)
        return BinOp("//", BinOp("-", BinOp("+", BinOp("-", hi, lo), step), Const(1)), step)

    def rewrite(node):
        if isinstance(node, Var):
            if node.name in scope:
                return trip_index(node.name)
            if node.name.startswith("trips_") and node.name[len("trips_"):] in scope:
                return trips(node.name[len("trips_"):])
            return node
        if not attrs.has(type(node)):
            return node
        changes = {}
        for field in attrs.fields(type(node)):
            value = getattr(node, field.name)
            if attrs.has(type(value)) and field.name != "loc":
                new = rewrite(value)
                if new is not value:
                    changes[field.name] = new
        return attrs.evolve(node, **changes) if changes else node

    expr = simplify(rewrite(threshold))
    return expr, list(operands.items())


def _waits(stmt) -> dict:
    """(core, counter) -> threshold of a statement standing for one MLIR op."""
    match stmt:
        case Op():
            out: dict = {}
            for wait in stmt.waits:
                key = (stmt.engine, wait.engine)
                out[key] = Max(out[key], wait.threshold) if key in out else wait.threshold
            return out
        case If():  # an op split on an arith.select
            then, else_ = {}, {}
            for s in stmt.then:
                then.update(_waits(s))
            for s in stmt.else_:
                else_.update(_waits(s))
            return {k: IfExpr(stmt.cond, then.get(k, Const(0)), else_.get(k, Const(0))) for k in {**then, **else_}}
    return {}


def _cores(stmt) -> list[str]:
    match stmt:
        case Op(engine=engine):
            return [engine]
        case If():
            return list(dict.fromkeys(c for s in stmt.then + stmt.else_ for c in _cores(s)))
    return []


def emit(imported: Imported, synced: Program) -> str:
    """The imported MLIR with `synced`'s waits and barriers. A wait's operands are the
    loops' induction variables, so loop registers are emitted as their values
    (semantics/registers.py): each read replaced by `init + step * (v - lo)`."""
    from xdsl.printer import Printer

    synced = inline_registers(synced)

    module, _ = parse_chunk(imported.chunk, imported.filename, context())
    fresh = dict(zip(imported.module.walk(), module.walk()))
    ops = {key: fresh[op] for key, op in imported.anchors.items()}
    for op in list(module.walk()):
        if op_name(op) in (BARRIER, WAIT, SIGNAL) or _barrier_call(op):  # the input's synchronization, replaced
            op.parent_block().erase_op(op)
    waited = {w.engine for s in _all_ops(synced.body) for w in s.waits}
    signalled: set = set()

    def end_of(block, op):
        last = block.last_op
        if last is not None and op_name(last) in ("scf.yield", "func.return"):
            block.insert_op_before(op, last)
        else:
            block.add_op(op)

    def place(body, block, scope):
        for n, stmt in enumerate(body):
            match stmt:
                case Barrier():
                    following = next((ops[a] for a in map(anchor, body[n + 1:]) if a in ops), None)
                    if following is not None:
                        following.parent_block().insert_op_before(_make(BARRIER), following)
                    else:
                        end_of(block, _make(BARRIER))
                    continue
                case For():
                    loop = ops[anchor(stmt)]
                    loop.attributes["syncproof.loop"] = _string(stmt.var)
                    place(stmt.body, loop.regions[0].blocks[0], {**scope, stmt.var: _induction(stmt.var, loop)})
                    continue
                case If() if anchor(stmt) in ops and op_name(ops[anchor(stmt)]) == "scf.if":
                    region_op = ops[anchor(stmt)]
                    place(stmt.then, region_op.regions[0].blocks[0], scope)
                    if stmt.else_:
                        place(stmt.else_, region_op.regions[1].blocks[0], scope)
                    continue
                case _:
                    pass
            key = anchor(stmt)
            if key not in ops:
                continue
            target = ops[key]
            for (core, counter), threshold in sorted(_waits(stmt).items()):
                expr, operands = _over_induction_variables(threshold, scope)
                wait = wait_op([value for _, value in operands], core, counter, print_expr(expr),
                               " ".join(name for name, _ in operands))
                target.parent_block().insert_op_before(wait, target)
            for core in _cores(stmt):
                if core in waited and (target, core) not in signalled:
                    signalled.add((target, core))
                    target.parent_block().insert_op_after(signal_op(core), _last_signal(target))

    place(synced.body, _top_block(module, [ops[a] for a in map(anchor, synced.body) if a in ops]), {})
    out = io.StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    return out.getvalue() + "\n"


def _barrier_call(op) -> bool:
    """`func.call @snax_cluster_hw_barrier` (a barrier after snax-to-func)."""
    from semantics.mlir.parse import prop

    return op_name(op) == "func.call" and "snax_cluster_hw_barrier" in str(prop(op, "callee"))


def _last_signal(op):
    """Signals follow their op in core order: insert after the last one already there."""
    while op.next_op is not None and op_name(op.next_op) == SIGNAL:
        op = op.next_op
    return op


def _top_block(module, top_ops):
    if top_ops:
        return top_ops[-1].parent_block()
    funcs = [op for op in module.walk() if op_name(op) == "func.func" and op.regions[0].blocks]
    return funcs[-1].regions[0].blocks[0] if funcs else module.regions[0].blocks[0]


def _all_ops(body):
    for stmt in body:
        match stmt:
            case Op():
                yield stmt
            case For():
                yield from _all_ops(stmt.body)
            case If():
                yield from _all_ops(stmt.then + stmt.else_)
            case Barrier():
                pass
