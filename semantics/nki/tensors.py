"""Tensors, windows and attributes in an NKI kernel (the reader's memory half).

A slice, an `nl.ds(start, size)`, an `nl.arange` / `nl.mgrid` grid or an index is a
window in the coordinates of the tensor it indexes; an index that is one point is a
one-element window. `t.reshape(...)`, `t.broadcast_to(...)` and other views stand for
the whole tensor (a superset of what they touch: sound, it may over-synchronize). A tile
computed by a call has no tracked shape: any window of it stands for the whole tile.
"""

from __future__ import annotations

import ast

from semantics.ir import Access, Range, Var
from semantics.nki import values as v
from semantics.nki.calls import CALLS, ENGINE_ARGS

MEMORY = {"sbuf": "sbuf", "psum": "psum", "hbm": "hbm", "shared_hbm": "hbm", "private_hbm": "hbm"}

# nl.tile_size (NKI docs, nki.language.tile_size): the hardware's tile limits
TILE_SIZE = {"pmax": 128, "psum_fmax": 2048, "gemm_stationary_fmax": 128, "gemm_moving_fmax": 512,
             "bn_stats_fmax": 512, "psum_max": 2048}
ITERATORS = {"nl.affine_range", "nl.sequential_range", "nl.static_range", "range"}
_SPECIAL_NL = {"par_dim", "ds", "arange", "mgrid", "program_id", "num_programs", "device_print",
               "no_reorder", "tile_size"} | {i.split(".")[-1] for i in ITERATORS}
_METHODS = {"reshape", "broadcast_to", "view", "bitcast", "astype", "expand_dims", "ap", "T"}


class TensorMixin:
    # ------------------------------------------------------------------ attributes

    def attribute(self, obj, attr: str, node):
        match obj:
            case v.Module(name="nl"):
                if attr in MEMORY:
                    return v.Opaque("memory:" + MEMORY[attr])
                if attr == "tile_size":
                    return v.Module("nl.tile_size")
                if attr in _SPECIAL_NL or f"nl.{attr}" in CALLS:
                    return v.Func(f"nl.{attr}")
                return v.Opaque(f"nl.{attr}")  # dtypes, activation functions, constants
            case v.Module(name="nl.tile_size"):
                if attr not in TILE_SIZE:
                    self.unsupported(node, f"nl.tile_size.{attr}")
                return TILE_SIZE[attr]
            case v.Module(name="nisa"):
                if attr == "engine":
                    return v.Module("nisa.engine")
                for key, engine in ENGINE_ARGS.items():
                    if attr == f"{key}_engine":
                        return v.Opaque("engine:" + engine)
                if attr in ("unknown_engine",):
                    return v.Opaque("engine:")
                return v.Func(f"nisa.{attr}") if f"nisa.{attr}" in CALLS else v.Opaque(f"nisa.{attr}")
            case v.Module(name="nisa.engine"):
                return v.Opaque("engine:" + ENGINE_ARGS.get(attr, ""))
            case v.Module(name="nki"):
                if attr == "language":
                    return v.Module("nl")
                if attr == "isa":
                    return v.Module("nisa")
                return v.Module("nki." + attr) if attr in ("compiler", "typing") else v.Func("nki." + attr)
            case v.Module(name=name):
                return v.Func(f"{name}.{attr}")
            case v.Tensor() | v.View():
                tensor = obj.tensor if isinstance(obj, v.View) else obj
                if attr == "shape":
                    if isinstance(obj, v.View) and not obj.whole:
                        return tuple(v.arith("-", w.hi, w.lo) for w in obj.window) \
                            if self.full_rank(tensor, len(obj.window)) else self.unsupported(node, "shape of a window")
                    if tensor.shape is None:
                        return self.unsupported(node, "shape of a computed tile")
                    return tensor.shape
                if attr == "dtype":
                    return v.Opaque("dtype")
                if attr in _METHODS:
                    return v.Bound(tensor, attr) if attr != "T" else v.View(tensor)
                return self.unsupported(node, f"tensor attribute '.{attr}'")
            case v.GridTuple(items=items):
                index = {"p": 0, "x": 1, "y": 2, "z": 3}.get(attr)
                if index is None or index >= len(items):
                    self.unsupported(node, f"grid attribute '.{attr}'")
                return items[index]
            case v.Opaque():
                return v.Opaque(f"{obj.what}.{attr}")
            case v.TileList() if attr == "append":
                return v.Bound(obj, attr)
            case v.Record():
                if attr not in dict(obj.fields):
                    self.unsupported(node, f"field '.{attr}' of {obj.cls}")
                return obj.get(attr)
        return self.unsupported(node, f"attribute '.{attr}'")

    def full_rank(self, tensor, n: int) -> bool:
        return isinstance(tensor.shape, tuple) and len(tensor.shape) == n

    # ------------------------------------------------------------------ subscripts

    def subscript(self, node):
        base = self.ev(node.value)
        if base == v.Func("nl.mgrid"):
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return v.GridTuple(tuple(self.slice_interval(item, None, node) for item in items))
        index = self.ev_index(node.slice)
        match base:
            case v.Tensor() | v.View():
                return self.window(base, index, node)
            case v.Pending():
                return self.window(self.materialize(base, None, node), index, node)
            case v.ArgShape(tensor=arg) if len(index) == 1 and isinstance(index[0], int):
                return self.arg_dim(arg, index[0])
            case tuple() if len(index) == 1 and isinstance(index[0], (int, slice)):
                return base[index[0]]
            case v.Interval():
                return base  # nl.arange(n)[:, None]: the same index set
            case v.TileList() | v.ListView() if len(index) == 1 and v.is_int(index[0]):
                tiles, chosen = (base, ()) if isinstance(base, v.TileList) else (base.tiles, base.iteration)
                chosen = chosen + ((tiles.depth, index[0]),)
                if isinstance(tiles.item, v.Tensor):
                    return v.View(tiles.item, iteration=chosen)
                if isinstance(tiles.item, v.TileList):
                    return v.ListView(tiles.item, chosen)
        return self.unsupported(node, "this subscript")

    def ev_index(self, node) -> tuple:
        items = node.elts if isinstance(node, ast.Tuple) else [node]
        out = []
        for item in items:
            if isinstance(item, ast.Slice):
                if item.step is not None:
                    step = self.ev(item.step)
                    if step != 1:
                        self.unsupported(item, "a strided slice")
                out.append(("slice", item))
            else:
                out.append(self.ev(item))
        return tuple(out)

    def slice_interval(self, item, dim, node) -> v.Interval:
        if not isinstance(item, ast.Slice):
            return self.unsupported(node, "this index grid")
        lo = 0 if item.lower is None else self.as_int(self.ev(item.lower))
        hi = dim if item.upper is None else self.as_int(self.ev(item.upper))
        if hi is None or not (v.is_int(lo) and v.is_int(hi)):
            self.unsupported(item, "this slice")
        if (isinstance(lo, int) and lo < 0) or (isinstance(hi, int) and hi < 0):
            self.unsupported(item, "a negative index")
        return v.Interval(lo, hi)

    def window(self, base, index: tuple, node) -> v.View:
        tensor = base.tensor if isinstance(base, v.View) else base
        if isinstance(base, v.View) and not base.whole:
            return base  # a window of a window: the outer window (a superset)
        if isinstance(base, v.View) and base.iteration:
            view = self.window(tensor, index, node)
            return v.View(tensor, view.window, view.whole, base.iteration)
        if tensor.shape is None:
            return v.View(tensor)
        index = tuple(item for item in index if item is not None)
        if Ellipsis in index:
            at = index.index(Ellipsis)
            rest = index[at + 1:]
            if not rest:
                index = index[:at]
            elif isinstance(tensor.shape, tuple) and Ellipsis not in rest and len(tensor.shape) >= len(index) - 1:
                fill = len(tensor.shape) - (len(index) - 1)
                index = index[:at] + (("slice", ast.Slice()),) * fill + rest
            else:
                return v.View(tensor)  # an Ellipsis the reading cannot place: the whole tensor
        if isinstance(tensor.shape, tuple) and len(index) > len(tensor.shape):
            self.unsupported(node, "more indices than the tensor has dimensions")
        window = []
        for item in index:
            dim = self.dim_of(tensor, len(window))
            match item:
                case ("slice", node_):
                    window.append(self.slice_interval(node_, dim, node))
                case v.Interval():
                    window.append(item)
                case _ if v.is_int(item):
                    if isinstance(item, int) and item < 0:
                        self.unsupported(node, "a negative index")
                    window.append(v.Interval(item, v.arith("+", item, 1)))
                case _:
                    self.unsupported(node, "this index")
        return v.View(tensor, tuple(window), whole=False) if window else v.View(tensor)

    def dim_of(self, tensor, n: int):
        if isinstance(tensor.shape, v.ArgShape):
            return self.arg_dim(tensor.shape.tensor, n)
        if isinstance(tensor.shape, tuple) and n < len(tensor.shape):
            return tensor.shape[n]
        return None

    def arg_dim(self, arg: str, n: int | None):
        """Dimension n of kernel argument `arg`: a shape parameter (docs of state.py);
        n None: the argument itself, an integer argument."""
        key = (arg, n)
        if key not in self.s.dims:
            base = arg if n is None else f"{arg}_{n}"
            plan = self.s.plan
            if self.s.first_pass:
                self.s.dims[key] = v.var(base)
                self.s.bases[base] = key
            else:
                name, tile = plan.name(base), plan.tile(base)
                pname = f"{name}_tiles" if tile > 1 else name
                if pname not in self.s.params:
                    note = f"{name} = {tile} * {pname}" if tile > 1 else None
                    self.s.params[pname] = self.param_info(pname, note)
                self.s.dims[key] = v.arith("*", v.var(pname), tile)
        return self.s.dims[key]

    def as_int(self, value):
        """`value`, or, for a kernel argument without a default that the kernel uses as
        an integer (arithmetic, a loop bound, a slice bound), that integer: a parameter
        named after the argument (docs/nki.md, "Shape parameters")."""
        if isinstance(value, v.Tensor) and isinstance(value.shape, v.ArgShape) and value.name in self.s.args:
            return self.arg_dim(value.name, None)
        return value

    def param_info(self, name: str, note):
        from semantics.nki.state import ParamInfo

        self.s.used.add(name)
        return ParamInfo(name, 1, 2, note)

    def divided(self, value, divisor) -> None:
        """The first reading notes each shape parameter divided by a constant: one that
        is a term of the dividend's linear form (`(S + 127) // 128`, not `(S // 128) // 2`)."""
        if self.s.first_pass and isinstance(value, v.Sym) and isinstance(divisor, int) and divisor > 1:
            from semantics.simplify import linear

            for mono in linear(value.expr):
                if mono and len(mono) == 1 and isinstance(mono[0], Var) and mono[0].name in self.s.bases:
                    self.s.plan.divisors.setdefault(mono[0].name, set()).add(divisor)

    # ------------------------------------------------------------------ accesses

    def access(self, view: v.View, node) -> Access:
        """The provisional access of a window: the allocation's loop variables first,
        then one range per windowed dimension (semantics/nki/build.py completes it)."""
        tensor = view.tensor
        chosen = dict(view.iteration)
        if any(name != (self.s.loops[n] if n < len(self.s.loops) else None)
               for n, name in enumerate(tensor.loops) if n not in chosen):
            self.unsupported(node, f"tile '{tensor.name}' allocated in a loop and used outside it")
        indices = [v.to_expr(chosen[n]) if n in chosen else Var(name) for n, name in enumerate(tensor.loops)]
        for w in view.window:
            indices.append(Range(v.to_expr(w.lo), v.to_expr(w.hi)))
        return Access(tensor.name, tuple(indices))

    def engine_of(self, call: str, kwargs: dict, dst, node) -> str:
        spec = CALLS[call]
        chosen = kwargs.get("engine")
        if isinstance(chosen, v.Opaque) and chosen.what.startswith("engine:") and chosen.what[7:]:
            return chosen.what[7:]
        if chosen is not None and not (isinstance(chosen, v.Opaque) and chosen.what == "engine:"):
            self.unsupported(node, "an engine= argument that is not an nki.isa engine")
        if call in self.s.overrides:
            return self.s.overrides[call]
        if spec.engine == "DMA":
            return "DMA1" if dst is not None and dst.tensor.memory == "hbm" else "DMA0"
        return spec.engine
