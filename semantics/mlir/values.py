"""What the MLIR import knows about SSA values: index/integer values as kernel
expressions, i1 values as conditions, memref values as buffers (after resolving views
to their source) or as a choice between buffers (`arith.select`)."""

from __future__ import annotations

import attrs

from semantics.evaluate import eval_cond, eval_expr
from semantics.ir import And, BinOp, Compare, Const, IfExpr, Max, Min, Not, Or, Var, walk_expr
from semantics.mlir.parse import op_name, prop

# Ops that alias their source memref (views), and ops that are not computation: the
# importer skips both; views only record an alias.
VIEWS = ("memref.subview", "memref.cast", "memref.reinterpret_cast", "memref.expand_shape",
         "memref.collapse_shape", "memref.view", "memref.transpose", "memref.memory_space_cast")
NOT_OPS = ("memref.alloc", "memref.alloca", "memref.dim", "memref.extract_aligned_pointer_as_index",
           "memref.extract_strided_metadata", "func.return", "scf.yield", "linalg.yield", "snax.mcycle",
           "builtin.module", "func.func") + VIEWS


CORE_CALLS = ("snax_cluster_core_idx", "snax_is_dm_core", "snax_is_compute_core")
_BINARY = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.divui": "//", "arith.divsi": "//",
           "arith.floordivsi": "//", "arith.remui": "%", "arith.remsi": "%"}
_MINMAX = {"arith.minui": Min, "arith.minsi": Min, "arith.maxui": Max, "arith.maxsi": Max}
_CASTS = ("arith.index_cast", "arith.index_castui", "arith.extui", "arith.extsi", "arith.trunci")
# arith.cmpi predicates: eq ne slt sle sgt sge ult ule ugt uge
_PREDICATES = ("==", "!=", "<", "<=", ">", ">=", "<", "<=", ">", ">=")
_CORE = object()  # a value that differs per core (the core index)


@attrs.frozen
class Root:
    name: str


@attrs.frozen
class Choice:
    cond: object
    then: object
    else_: object


def is_memref(value) -> bool:
    from xdsl.dialects.builtin import MemRefType, UnrankedMemRefType

    return isinstance(value.type, (MemRefType, UnrankedMemRefType))


def size(typ) -> tuple[int, int] | None:
    """(elements, bytes) of a static memref type."""
    shape = getattr(typ, "get_shape", lambda: None)()
    if shape is None or any(d < 0 for d in shape):
        return None
    elements = 1
    for d in shape:
        elements *= d
    element = typ.element_type
    bits = getattr(getattr(element, "width", None), "data", None) or getattr(element, "bitwidth", 32)
    return elements, elements * max(bits, 8) // 8


def segment(op, k: int, default: int) -> int:
    """Size of operand segment k (ins of a linalg-style op); `default` without segments."""
    sizes = prop(op, "operandSegmentSizes")
    if sizes is None:
        inputs = getattr(op, "inputs", None)
        return len(inputs) if inputs is not None and k == 0 else default
    return tuple(sizes.get_values())[k]


def _fold(node):
    """Constant subterms evaluated, so imported kernels read like hand-written ones."""
    if any(isinstance(n, Var) for n in walk_expr(node)):
        if isinstance(node, (Compare, And, Or, Not, IfExpr)):
            return node
        from semantics.simplify import simplify

        return simplify(node)
    try:
        if isinstance(node, (Compare, And, Or, Not)):
            return _truth(eval_cond(node, {}))
        return Const(eval_expr(node, {}))
    except Exception:  # division by zero: keep it, unroll reports it
        return node


def _truth(value: bool):
    return Compare("==" if value else "!=", Const(0), Const(0))


def _is_true(cond) -> bool | None:
    return eval_cond(cond, {}) if not any(isinstance(n, Var) for n in walk_expr(cond)) else None


class Values:
    def __init__(self, fresh, param, error):
        self.fresh, self.param, self.error = fresh, param, error
        self.exprs: dict = {}  # value -> Expr, Cond or _CORE
        self.mems: dict = {}  # value -> Root | Choice
        self.ids: dict = {}

    def vid(self, value) -> int:
        return self.ids.setdefault(value, len(self.ids))

    def set_expr(self, value, expr) -> None:
        self.exprs[value] = expr

    def function_args(self, block) -> None:
        for arg in block.args:
            if is_memref(arg):
                self.mems[arg] = Root(self.fresh(arg.name_hint, "m"))

    def first_root(self, value) -> str:
        tree = self.mem(value)
        while isinstance(tree, Choice):
            tree = tree.then
        return tree.name

    def mem(self, value):
        if value not in self.mems:  # the result of an op the import does not know: a buffer of its own
            self.mems[value] = Root(self.fresh(value.name_hint, "m"))
        return self.mems[value]

    def _raw(self, value, op):
        if value not in self.exprs:
            from xdsl.ir import Operation

            owner = getattr(value, "owner", None)  # a Block for block arguments
            if isinstance(owner, Operation) and op_name(owner) == "func.call" and self._core_call(owner):
                self.exprs[value] = _CORE
            else:  # unknown at import time: a runtime parameter
                self.exprs[value] = Var(self.param(value.name_hint))
        return self.exprs[value]

    def expr(self, value, op):
        node = self._raw(value, op)
        if node is _CORE:
            self._per_core(op)
        if isinstance(node, (Compare, And, Or, Not)):
            return IfExpr(node, Const(1), Const(0))
        return node

    def cond(self, value, op):
        node = self._raw(value, op)
        if node is _CORE:
            self._per_core(op)
        if isinstance(node, (Compare, And, Or, Not)):
            return node
        return _fold(Compare("!=", node, Const(0)))

    def _per_core(self, op):
        self.error(f"'{op_name(op)}' depends on the core index (per-core code, as after dispatch-regions or "
                   f"written by hand): syncproof imports programs before dispatch, where every core runs "
                   f"the same stream", op)

    @staticmethod
    def _core_call(op) -> bool:
        callee = prop(op, "callee")
        return callee is not None and any(c in str(callee) for c in CORE_CALLS)

    def loop_range(self, op, var: str):
        """(lo, hi, value of the induction variable) of an scf.for as a step-1 kernel loop."""
        lo, hi, step = (self.expr(v, op) for v in op.operands[:3])
        if step == Const(1):
            return lo, hi, Var(var)
        if isinstance(step, Const) and step.value > 0:
            trips = _fold(BinOp("//", BinOp("+", BinOp("-", hi, lo), Const(step.value - 1)), step))
            return Const(0), trips, _fold(BinOp("+", lo, BinOp("*", Var(var), step)))
        if isinstance(step, Const):
            self.error(f"scf.for with step {step.value} (not positive)", op)
        trips = Var(self.param(f"trips_{var}"))
        return Const(0), trips, BinOp("+", lo, BinOp("*", Var(var), step))

    def define(self, op, name: str) -> bool:
        """Record the results of a value-only op; False if `op` is not one."""

        res = op.results
        if name == "arith.constant":
            value = prop(op, "value")
            data = getattr(value, "value", None)
            if data is not None and isinstance(getattr(data, "data", None), int):
                n = data.data
                self.exprs[res[0]] = _truth(bool(n)) if str(res[0].type) == "i1" else Const(n)
            return True
        if name in _BINARY or name in _MINMAX:
            a, b = (self._raw(v, op) for v in op.operands)
            if a is _CORE or b is _CORE:
                self.exprs[res[0]] = _CORE
            elif name in _BINARY:
                self.exprs[res[0]] = _fold(BinOp(_BINARY[name], self.expr(op.operands[0], op),
                                                 self.expr(op.operands[1], op)))
            else:
                self.exprs[res[0]] = _fold(_MINMAX[name](self.expr(op.operands[0], op), self.expr(op.operands[1], op)))
            return True
        if name in ("arith.andi", "arith.ori") and str(res[0].type) == "i1":
            a, b = (self._raw(v, op) for v in op.operands)
            kind = And if name == "arith.andi" else Or
            self.exprs[res[0]] = _CORE if _CORE in (a, b) else _fold(kind(self.cond(op.operands[0], op),
                                                                          self.cond(op.operands[1], op)))
            return True
        if name in _CASTS:
            self.exprs[res[0]] = self._raw(op.operands[0], op)
            return True
        if name == "arith.cmpi":
            a, b = (self._raw(v, op) for v in op.operands)
            if _CORE in (a, b):
                self.exprs[res[0]] = _CORE
            else:
                predicate = prop(op, "predicate")
                self.exprs[res[0]] = _fold(Compare(_PREDICATES[predicate.value.data], self.expr(op.operands[0], op),
                                                   self.expr(op.operands[1], op)))
            return True
        if name == "arith.select":
            c, a, b = op.operands
            if is_memref(res[0]):
                cond = self.cond(c, op)
                truth = _is_true(cond)
                if truth is None:
                    self.mems[res[0]] = Choice(cond, self.mem(a), self.mem(b))
                else:
                    self.mems[res[0]] = self.mem(a if truth else b)
            elif self._raw(c, op) is _CORE:
                self.exprs[res[0]] = _CORE
            else:
                self.exprs[res[0]] = _fold(IfExpr(self.cond(c, op), self.expr(a, op), self.expr(b, op)))
            return True
        if name in VIEWS:
            self.mems[res[0]] = self.mem(op.operands[0])
            return True
        if name == "func.call" and self._core_call(op):
            for r in res:
                self.exprs[r] = _CORE
            return True
        return name in NOT_OPS
