"""Calls in an NKI kernel (the reader's call half): NKI instructions become ops,
allocations become tensors, Python built-ins and `math` are evaluated, and functions of
the same file are read inline.

Both API styles: an instruction whose result is used (`x = nisa.nc_matmul(a, b)`) writes
a new tile; `dst=` names the tile it writes; and an instruction called as a statement
with no `dst=` (`nisa.tensor_copy(out, src)`, the newer API) writes its first tensor
argument. `nl.store(dst, value)` writes its first argument. Every other tensor argument
is read (`mask=` is ignored: the op is taken to touch its whole window, a superset).
"""

from __future__ import annotations

import ast
import math

from semantics.ir import Op
from semantics.nki import values as v
from semantics.nki.calls import CALLS
from semantics.nki.exprs import TILE
from semantics.nki.state import loc_of
from semantics.nki.tensors import ITERATORS

_SKIP_KW = {"mask", "dtype", "name", "engine", "op", "op0", "op1", "reduce_op", "axis", "keepdims",
            "transpose_x", "accumulate"} | {"reduce_res"}
OUTPUT_KW = ("reduce_res",)  # keyword arguments an instruction writes besides its result


class CallMixin:
    def call(self, node, result_used: bool = True):
        """A call: its function and arguments evaluated, then applied. `result_used`:
        False for a call standing as a statement (the newer API's destination rule)."""
        func = self.ev(node.func)
        args = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                self.unsupported(arg, "*args")
            args.append(self.ev(arg))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                self.unsupported(kw.value, "**kwargs")
            kwargs[kw.arg] = self.ev(kw.value)
        return self.apply(func, args, kwargs, node, result_used)

    def apply(self, func, args, kwargs, node, result_used: bool):
        if isinstance(func, v.Bound) and isinstance(func.tensor, v.TileList):
            return self.append(func.tensor, args, node)
        if isinstance(func, v.Bound):
            return v.View(func.tensor)
        if isinstance(func, v.Opaque):
            return self.unsupported(node, func.what)  # nl.foo, nisa.bar: not a call the importer knows
        if not isinstance(func, v.Func):
            return self.unsupported(node, "a call of a non-function")
        name = func.name
        if name in self.functions:
            return self.inline(name, args, kwargs, node)
        if name in CALLS:
            spec = CALLS[name]
            if spec.kind in ("alloc", "fill"):
                return self.allocate(name, args, kwargs, node)
            if spec.kind == "store":
                return self.store(name, args, kwargs, node)
            return self.compute(name, args, kwargs, node, result_used)
        return self.builtin(name, args, kwargs, node)

    # ------------------------------------------------------------------ instructions

    def compute(self, name, args, kwargs, node, result_used: bool):
        dst = kwargs.get("dst")
        operands = list(args) + [val for key, val in kwargs.items() if key not in _SKIP_KW and key != "dst"]
        if dst is None and not result_used:
            first = next((a for a in args if isinstance(a, (v.Tensor, v.View))), None)
            if first is not None:
                dst = first
                operands.remove(first)
        dst_view = self.as_view(dst, node) if dst is not None else None
        reads = self.operand_views(operands, node)
        if dst_view is not None and name == "nisa.nc_matmul" and kwargs.get("accumulate", True) is not False:
            reads = reads + (dst_view,)
        engine = self.engine_of(name, kwargs, dst_view, node)
        extra = tuple(self.as_view(kwargs[k], node) for k in OUTPUT_KW if isinstance(kwargs.get(k), TILE))
        pending = v.Pending(name, engine, reads, loc_of(node), CALLS[name].memory, extra)
        if dst_view is not None:
            self.emit_op(pending, dst_view, node)
            return None
        return pending

    def store(self, name, args, kwargs, node):
        dst = kwargs.get("dst", args[0] if args else None)
        rest = list(args[1:]) + [val for key, val in kwargs.items() if key not in _SKIP_KW and key != "dst"]
        if not isinstance(dst, (v.Tensor, v.View)):
            self.unsupported(node, f"{name} without a destination tensor")
        dst_view = self.as_view(dst, node)
        reads = self.operand_views(rest, node)
        self.emit_op(v.Pending(name, self.engine_of(name, kwargs, dst_view, node), reads, loc_of(node)),
                     dst_view, node)

    def operand_views(self, operands, node) -> tuple:
        """The tensors an instruction reads among its operands. A tensor hidden in a
        container (a list or tuple of tiles, a list of tiles, an uncalled method) is
        refused rather than missed."""
        reads = []
        for value in operands:
            if isinstance(value, TILE):
                reads.append(self.as_view(value, node))
            elif isinstance(value, (v.TileList, v.ListView, v.Bound)) or (
                    isinstance(value, (tuple, list)) and any(isinstance(x, (*TILE, tuple, list)) for x in value)):
                self.unsupported(node, "tiles inside a container as an instruction's operand")
        return tuple(reads)

    def as_view(self, value, node) -> v.View:
        match value:
            case v.View():
                return value
            case v.Tensor():
                return v.View(value)
            case v.Pending():
                return v.View(self.materialize(value, None, node))
        return self.unsupported(node, "this operand")

    def materialize(self, pending: v.Pending, name: str | None, node, accumulate=False) -> v.Tensor:
        """A new tile holding `pending`'s result (named after `name` when given)."""
        label = name or "t_" + pending.call.split(".")[-1]
        tensor = v.Tensor(self.s.fresh(label), pending.memory, None, tuple(self.s.loops))
        self.s.tensors[tensor.name] = tensor
        self.emit_op(pending, v.View(tensor), node)
        return tensor

    def emit_op(self, pending: v.Pending, dst: v.View, node, accumulate=False) -> None:
        reads = tuple(self.access(r, node) for r in pending.reads)
        write = self.access(dst, node)
        if accumulate:
            reads = reads + (write,)
        writes = (write,) + tuple(self.access(w, node) for w in pending.also_writes)
        short = pending.call.split(".")[-1]
        op_name = self.s.fresh(f"{short}_L{pending.loc.line}")
        self.s.emit(Op(pending.engine, op_name, reads, writes, loc=pending.loc, name_loc=pending.loc))

    def append(self, tiles, args, node):
        """`tiles.append(x)`: x must be the tile allocated (or the list made) in the loop
        just inside the list's creation, the same one at every append."""
        item = args[0] if len(args) == 1 else None
        inner = (isinstance(item, v.Tensor) and len(item.loops) == tiles.depth + 1) or \
            (isinstance(item, v.TileList) and item.depth == tiles.depth + 1)
        if not (inner and len(self.s.loops) == tiles.depth + 1 and tiles.item in (None, item)):
            self.unsupported(node, "a list of tiles other than one tile per iteration of one loop")
        tiles.item = item
        return None

    # ------------------------------------------------------------------ allocation

    def allocate(self, name, args, kwargs, node):
        spec = CALLS[name]
        if name == "nl.shared_constant":  # a constant in HBM, made on the host
            return v.Alloc("hbm", None, None, loc_of(node))
        like = name.endswith("_like")
        source = args[0] if args else kwargs.get("a", kwargs.get("shape"))
        if like:
            if not isinstance(source, (v.Tensor, v.View)):
                self.unsupported(node, f"{name} of a non-tensor")
            tensor = source.tensor if isinstance(source, v.View) else source
            shape = tensor.shape
            memory = tensor.memory
        else:
            shape = source
            if isinstance(shape, (int, v.Sym)):
                shape = (shape,)
            if not isinstance(shape, (tuple, v.ArgShape)):
                self.unsupported(node, f"{name} with this shape")
            if isinstance(shape, tuple):
                shape = tuple(self.as_int(d) for d in shape)
                if not all(v.is_int(d) for d in shape):
                    self.unsupported(node, f"{name} with a shape that is not integers")
            memory = "sbuf"
        buffer = kwargs.get("buffer")
        if buffer is not None:
            if not (isinstance(buffer, v.Opaque) and buffer.what.startswith("memory:")):
                self.unsupported(node, f"{name} with this buffer= (only nl.sbuf, nl.psum, nl.hbm, nl.shared_hbm)")
            memory = buffer.what[7:]
        fill = name if spec.kind == "fill" else None
        return v.Alloc(memory, shape, fill, loc_of(node))

    def bind_alloc(self, alloc: v.Alloc, name: str | None, node) -> v.Tensor:
        tensor = v.Tensor(self.s.fresh(name or "t"), alloc.memory, alloc.shape, tuple(self.s.loops))
        self.s.tensors[tensor.name] = tensor
        if alloc.fill is not None:
            engine = self.engine_of(alloc.fill, {}, None, node)
            self.emit_op(v.Pending(alloc.fill, engine, (), alloc.loc), v.View(tensor), node)
        return tensor

    # ------------------------------------------------------------------ the rest

    def builtin(self, name, args, kwargs, node):
        match name:
            case "nl.par_dim" | "int" | "nl.tile_size" if len(args) == 1:
                value = args[0]
                if name == "int" and isinstance(value, v.Frac):
                    return self.floor(value)
                return value
            case "nl.ds" | "nl.arange" if not all(v.is_int(self.as_int(a)) for a in args) or not args:
                return self.unsupported(node, f"{name} of values that are not integers")
            case "nl.ds" if len(args) == 2:
                args = [self.as_int(a) for a in args]
                return v.Interval(args[0], v.arith("+", args[0], args[1]))
            case "nl.arange" if len(args) <= 2:
                args = [self.as_int(a) for a in args]
                lo, hi = (0, args[0]) if len(args) == 1 else (args[0], args[1])
                return v.Interval(lo, hi)
            case "math.ceil" | "math.floor" | "np.ceil" | "np.floor" if len(args) == 1:
                value = args[0]
                if isinstance(value, v.Frac):
                    return self.floor(value) if name.endswith("floor") else self.ceil(value)
                if isinstance(value, (int, float)):
                    return math.ceil(value) if name.endswith("ceil") else math.floor(value)
                return value if v.is_int(value) else self.unsupported(node, name)
            case "min" | "max" if args and all(v.is_int(a) for a in args):
                result = args[0]
                for a in args[1:]:
                    result = v.arith(name, result, a)
                return result
            case "min" | "max" if args and all(isinstance(a, (int, float)) for a in args):
                return min(args) if name == "min" else max(args)
            case "len" if len(args) == 1 and isinstance(args[0], (tuple, list)):
                return len(args[0])
            case "float" | "abs" if len(args) == 1 and isinstance(args[0], (int, float)):
                return float(args[0]) if name == "float" else abs(args[0])
            case "float" | "math.sqrt" | "np.sqrt" if len(args) == 1:
                return v.Opaque("number")
            case "tuple" | "list" if len(args) == 1 and isinstance(args[0], (tuple, list)):
                return tuple(args[0])
            case "print" | "nl.device_print":
                return None
            case "nl.program_id" | "nl.num_programs":
                return self.spmd(name, args, node)
        if name in ITERATORS:
            return self.unsupported(node, f"{name} outside a for loop")
        if (name.split(".")[0] in ("np", "math") or name in ("getattr", "nl.program_ndim")) \
                and not any(isinstance(a, TILE) for a in list(args) + list(kwargs.values())):
            return v.Opaque(name)  # host-side arithmetic and dtypes: no instruction
        return self.unsupported(node, name)

    def floor(self, frac: v.Frac):
        self.divided(frac.num, frac.den)
        return v.arith("//", frac.num, frac.den)

    def ceil(self, frac: v.Frac):
        self.divided(frac.num, frac.den)
        return v.arith("//", v.arith("+", frac.num, frac.den - 1), frac.den)

    def spmd(self, name, args, node):
        axis = args[0] if args else 0
        if not isinstance(axis, int):
            self.unsupported(node, f"{name} with a non-constant axis")
        pname = f"{name.split('.')[-1]}_{axis}"
        if pname not in self.s.params:
            info = self.param_info(pname, None)
            if name == "nl.program_id":
                info.lower, info.default = 0, 0
            self.s.params[pname] = info
        return v.var(pname)
