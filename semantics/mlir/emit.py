"""`sync --emit mlir`: a synchronized imported program back in MLIR (generic form).

The case's MLIR is re-parsed and edited in place:
- every `snax.cluster_sync_op` of the input is removed, and one is inserted for each
  `barrier` of the synchronized program, right before the MLIR op of the statement
  that follows it (or at the end of its block, before the terminator);
- every wait becomes, right before its op,
  `"syncproof.wait"() {core = "COMPUTE", counter = "DM", threshold = "i + 1"}`:
  the core `core` may start the op once the completion counter of `counter` is at
  least `threshold` (a kernel-language expression over the loop variables and
  parameters that `syncproof import-mlir` prints, and `iters(v)`, the started
  iterations of loop `v`); an op split on an `arith.select` gets one wait per
  counter, with an `if ... then ... else ...` threshold;
- after each op whose core's counter some wait reads,
  `"syncproof.signal"() {core = "DM"}`: that core increments its counter in shared
  memory (TCDM atomic add) once the op has completed.
"""

from __future__ import annotations

import io

from semantics.ir import Barrier, Const, For, If, IfExpr, Max, Op, Program
from semantics.printer import print_expr
from semantics.mlir.importer import Imported, anchor
from semantics.mlir.parse import op_name, parse_chunk

BARRIER, WAIT, SIGNAL = "snax.cluster_sync_op", "syncproof.wait", "syncproof.signal"


def _make(name: str, **attributes):
    from xdsl.dialects.builtin import StringAttr, UnregisteredOp

    return UnregisteredOp.with_name(name).create(attributes={k: StringAttr(v) for k, v in attributes.items()})


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
    from xdsl.printer import Printer

    module, _ = parse_chunk(imported.chunk, imported.filename)
    fresh = dict(zip(imported.module.walk(), module.walk()))
    ops = {key: fresh[op] for key, op in imported.anchors.items()}
    for op in list(module.walk()):
        if op_name(op) == BARRIER:
            op.parent_block().erase_op(op)
    waited = {w.engine for s in _all_ops(synced.body) for w in s.waits}
    signalled: set = set()

    def end_of(block, op):
        last = block.last_op
        if last is not None and op_name(last) in ("scf.yield", "func.return"):
            block.insert_op_before(op, last)
        else:
            block.add_op(op)

    def place(body, block):
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
                    place(stmt.body, ops[anchor(stmt)].regions[0].blocks[0])
                    continue
                case If() if anchor(stmt) in ops and op_name(ops[anchor(stmt)]) == "scf.if":
                    region_op = ops[anchor(stmt)]
                    place(stmt.then, region_op.regions[0].blocks[0])
                    if stmt.else_:
                        place(stmt.else_, region_op.regions[1].blocks[0])
                    continue
                case _:
                    pass
            key = anchor(stmt)
            if key not in ops:
                continue
            target = ops[key]
            for (core, counter), threshold in sorted(_waits(stmt).items()):
                target.parent_block().insert_op_before(
                    _make(WAIT, core=core, counter=counter, threshold=print_expr(threshold)), target)
            for core in _cores(stmt):
                if core in waited and (target, core) not in signalled:
                    signalled.add((target, core))
                    target.parent_block().insert_op_after(_make(SIGNAL, core=core), _last_signal(target))

    place(synced.body, _top_block(module, [ops[a] for a in map(anchor, synced.body) if a in ops]))
    out = io.StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    return out.getvalue() + "\n"


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
