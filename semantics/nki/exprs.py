"""Python expressions of an NKI kernel, read statically (the reader's expression half).

Integers stay integers, shape-derived ones become kernel expressions (`Sym`), index
sets become `Interval`s, tensors `View`s; arithmetic on tiles is the nl.* call of the
operator (`a * b` is `nl.multiply(a, b)`). A condition over shapes is a kernel
condition; a condition over data is refused.
"""

from __future__ import annotations

import ast
import operator

from semantics.ir import And, Compare, IfExpr, Not, Or, Var
from semantics.nki import values as v
from semantics.nki.calls import OPERATORS

_ARITH = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}
_PY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
       ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
       ast.BitAnd: operator.and_, ast.BitOr: operator.or_}
_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_PYCMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
          ast.Gt: operator.gt, ast.GtE: operator.ge}
TILE = (v.Tensor, v.View, v.Pending)
BUILTINS = {"range", "min", "max", "len", "int", "float", "abs", "print", "tuple", "list", "getattr"}


class CondVal:
    """A condition over shape parameters and loop variables (a kernel `Cond`)."""

    def __init__(self, cond):
        self.cond = cond


def number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class ExprMixin:
    def ev(self, node):
        match node:
            case ast.Constant(value=value):
                return value
            case ast.Name(id=name):
                return self.lookup(name, node)
            case ast.Attribute():
                base = self.ev(node.value)
                if isinstance(base, v.Pending):
                    base = self.materialize(base, None, node)
                return self.attribute(base, node.attr, node)
            case ast.Subscript():
                return self.subscript(node)
            case ast.BinOp():
                return self.binop(node.op, self.ev(node.left), self.ev(node.right), node)
            case ast.UnaryOp():
                return self.unary(node)
            case ast.Compare():
                return self.compare(node)
            case ast.BoolOp():
                return self.boolop(node)
            case ast.IfExp():
                return self.ifexp(node)
            case ast.Call():
                return self.call(node)
            case ast.List(elts=[]):
                return v.TileList(len(self.s.loops))
            case ast.Tuple(elts=elts) | ast.List(elts=elts):
                if any(isinstance(e, ast.Starred) for e in elts):
                    self.unsupported(node, "starred expression")
                return tuple(self.ev(e) for e in elts)
            case ast.JoinedStr():
                return v.Opaque("str")
        return self.unsupported(node, type(node).__name__.lower())

    def note(self, name: str, event: str) -> None:
        """The first use of `name` in each loop body being read: `read` or `write`."""
        for depth, events in self.frames:
            if depth == self.inline_depth:
                events.setdefault(name, event)

    def lookup(self, name: str, node):
        self.note(name, "read")
        for scope in (self.env, self.globals):
            if name in scope:
                value = scope[name]
                if isinstance(value, v.Conflict):
                    self.unsupported(node, f"'{name}' bound differently by the branches of a shape-dependent if")
                return value
        if name in self.functions:
            return v.Func(name)
        if name in BUILTINS:
            return v.Func(name)
        return self.fail(node, f"undefined name '{name}'")

    # ------------------------------------------------------------------ arithmetic

    def binop(self, op, a, b, node):
        kind = type(op)
        if v.is_int(a) or v.is_int(b) or isinstance(a, v.Interval) or isinstance(b, v.Interval):
            a, b = self.as_int(a), self.as_int(b)  # `pool_size` in `n // pool_size`: an integer argument
        if isinstance(a, TILE) or isinstance(b, TILE):
            if kind.__name__ not in OPERATORS:
                self.unsupported(node, f"operator {kind.__name__} on tiles")
            return self.compute(OPERATORS[kind.__name__], [a, b], {}, node, result_used=True)
        if isinstance(a, v.Interval) or isinstance(b, v.Interval):
            return self.interval_op(kind, a, b, node)
        if kind in (ast.BitAnd, ast.BitOr) and all(isinstance(x, (bool, CondVal)) for x in (a, b)):
            if kind is ast.BitAnd:
                return self.conjoin(a, b, node)
            if isinstance(a, bool) or isinstance(b, bool):
                static, other = (a, b) if isinstance(a, bool) else (b, a)
                return True if static else other
            return CondVal(Or(a.cond, b.cond))
        if isinstance(a, (v.Opaque, CondVal)) or isinstance(b, (v.Opaque, CondVal)):
            return v.Opaque("mask" if kind in (ast.BitAnd, ast.BitOr) else "number")
        if isinstance(a, tuple) and isinstance(b, tuple) and kind is ast.Add:
            return a + b
        if v.is_int(a) and v.is_int(b) and (isinstance(a, v.Sym) or isinstance(b, v.Sym)):
            if kind in _ARITH:
                if kind in (ast.FloorDiv, ast.Mod) and isinstance(b, int) and b <= 0:
                    self.unsupported(node, "division of a shape by a constant below 1")
                if kind is ast.FloorDiv:
                    self.divided(a, b)
                return v.arith(_ARITH[kind], a, b)
            if kind is ast.Div:
                if not (isinstance(b, int) and b > 0):
                    self.unsupported(node, "division of a shape by a non-constant")
                return v.Frac(a, b)
            self.unsupported(node, f"operator {kind.__name__} on a shape")
        if isinstance(a, v.Sym) or isinstance(b, v.Sym):
            if number(a) or number(b):
                return v.Opaque("number")  # a float scale derived from a shape
            self.unsupported(node, f"operator {kind.__name__} on a shape")
        if kind in _PY and (number(a) or isinstance(a, bool)) and (number(b) or isinstance(b, bool)):
            try:
                return _PY[kind](a, b)
            except (ArithmeticError, ValueError):
                self.fail(node, "arithmetic error while reading the kernel")
        return self.unsupported(node, f"operator {kind.__name__} on these operands")

    def interval_op(self, kind, a, b, node):
        if kind is ast.Add and isinstance(a, v.Interval) and isinstance(b, v.Interval):
            return v.Interval(v.arith("+", a.lo, b.lo), v.arith("-", v.arith("+", a.hi, b.hi), 1))
        iv, other = (a, b) if isinstance(a, v.Interval) else (b, a)
        if not v.is_int(other):
            return self.unsupported(node, "this arithmetic on an index grid")
        if kind is ast.Add or (kind is ast.Sub and iv is a):
            sign = "+" if kind is ast.Add else "-"
            return v.Interval(v.arith(sign, iv.lo, other), v.arith(sign, iv.hi, other))
        if kind is ast.Mult and (isinstance(other, int) and other > 0 or self.nonnegative(other)):
            return v.Interval(v.arith("*", iv.lo, other), v.arith("+", v.arith("*", v.arith("-", iv.hi, 1), other), 1))
        return self.unsupported(node, "this arithmetic on an index grid")

    def nonnegative(self, value) -> bool:
        """A Sym that is a sum of products of parameters with positive coefficients (never
        negative: a grid scaled by it keeps its bounding range)."""
        from semantics.simplify import linear

        if not isinstance(value, v.Sym):
            return False
        lin = linear(value.expr)
        return all(c > 0 for c in lin.values()) and all(
            isinstance(a, Var) and (a.name in self.s.params or a.name in self.s.bases) for mono in lin if mono for a in mono)

    def unary(self, node):
        value = self.ev(node.operand)
        match node.op:
            case ast.USub() if isinstance(value, TILE):
                return self.compute("nl.negative", [value], {}, node, result_used=True)
            case ast.USub() if v.is_int(value):
                return v.arith("-", 0, value)
            case ast.USub() | ast.UAdd() if number(value):
                return -value if isinstance(node.op, ast.USub) else value
            case ast.Not() if isinstance(value, bool):
                return not value
            case ast.Not() if isinstance(value, CondVal):
                return CondVal(Not(value.cond))
            case ast.Not() if value is None:
                return True
            case ast.Invert() if isinstance(value, v.Opaque):
                return value
        if isinstance(value, v.Opaque):
            return v.Opaque("number")
        return self.unsupported(node, f"unary {type(node.op).__name__}")

    # ------------------------------------------------------------------ conditions

    def compare(self, node):
        result = None
        left = self.ev(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.ev(right_node)
            one = self.compare_one(op, left, right, node)
            result = one if result is None else self.conjoin(result, one, node)
            left = right
        return result

    def compare_one(self, op, a, b, node):
        if isinstance(op, (ast.Is, ast.IsNot)):
            same = a is b if (a is None or b is None or isinstance(a, bool)) else a == b
            return same if isinstance(op, ast.Is) else not same
        if v.is_int(a) or v.is_int(b):
            a, b = self.as_int(a), self.as_int(b)
        if isinstance(a, TILE) or isinstance(b, TILE):
            self.unsupported(node, "control flow that depends on data (a comparison of tiles)")
        if isinstance(a, v.Interval) or isinstance(b, v.Interval) or isinstance(a, v.Opaque) or isinstance(b, v.Opaque):
            return v.Opaque("mask")
        if type(op) not in _CMP:
            return self.unsupported(node, f"comparison {type(op).__name__}")
        if isinstance(a, v.Sym) or isinstance(b, v.Sym):
            if not (v.is_int(a) and v.is_int(b)):
                self.unsupported(node, "a comparison of a shape with a non-integer")
            return CondVal(Compare(_CMP[type(op)], v.to_expr(a), v.to_expr(b)))
        try:
            return _PYCMP[type(op)](a, b)
        except TypeError:
            return self.unsupported(node, "a comparison of these operands")

    def conjoin(self, a, b, node):
        if isinstance(a, bool) and isinstance(b, bool):
            return a and b
        if isinstance(a, bool):
            return b if a else False
        if isinstance(b, bool):
            return a if b else False
        if isinstance(a, CondVal) and isinstance(b, CondVal):
            return CondVal(And(a.cond, b.cond))
        return v.Opaque("mask")

    def boolop(self, node):
        is_and = isinstance(node.op, ast.And)
        result = None
        for item in node.values:
            value = self.ev(item)
            if isinstance(value, TILE):
                self.unsupported(item, "control flow that depends on data")
            if result is None:
                result = value
            elif isinstance(result, CondVal) or isinstance(value, CondVal):
                if isinstance(result, CondVal) and isinstance(value, CondVal):
                    result = CondVal(And(result.cond, value.cond) if is_and else Or(result.cond, value.cond))
                else:
                    static, sym = (result, value) if isinstance(value, CondVal) else (value, result)
                    result = (sym if static else False) if is_and else (True if static else sym)
            else:
                result = (result and value) if is_and else (result or value)
            if not isinstance(result, CondVal) and not isinstance(result, v.Opaque) \
                    and (bool(result) is not is_and):
                return result  # short circuit on a static value
        return result

    def truth(self, value, node):
        """A static truth value, or a CondVal; data is refused."""
        if isinstance(value, CondVal):
            return value
        if isinstance(value, TILE) or isinstance(value, v.Interval):
            self.unsupported(node, "control flow that depends on data")
        if isinstance(value, v.Opaque):
            self.unsupported(node, f"a condition on a value not known statically ({value.what})")
        if isinstance(value, v.Sym):
            return CondVal(Compare("!=", value.expr, v.to_expr(0)))
        return bool(value)

    def ifexp(self, node):
        test = self.truth(self.ev(node.test), node.test)
        if not isinstance(test, CondVal):
            return self.ev(node.body if test else node.orelse)
        a, b = self.ev(node.body), self.ev(node.orelse)
        if v.is_int(a) and v.is_int(b):
            return v.from_expr(IfExpr(test.cond, v.to_expr(a), v.to_expr(b)))
        return self.unsupported(node, "a conditional expression over shapes whose value is not an integer")
