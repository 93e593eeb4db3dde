"""The static reading of one NKI kernel function: its statements, run over the values
of semantics/nki/values.py, emit the kernel-language statements.

- `for x in nl.affine_range(N)` / `nl.sequential_range` / `nl.static_range` / `range`
  (start, stop, a positive constant step) -> `for` (a step s > 1 runs over t with
  x = start + s * t); a loop variable name already taken gets a suffix (`k_2`);
- `if` on shapes and loop variables -> `if`; a static condition picks its branch;
  a condition on data is refused;
- a tensor allocated in a loop body is a new tensor per iteration, NKI's rule
  (https://awsdocs-neuron.readthedocs-hosted.com/general/nki/nki_block_dimension_migration_guide.html:
  allocated inside the loop, "the compiler could ... materialize multiple copies";
  outside it, "the loop carries a dependency"; docs/nki.md "Buffers"): its accesses
  are indexed by the enclosing loop variables first;
- `assert A == B` between two shape parameters makes them one; other asserts are
  ignored (the kernel is read for every shape, a superset);
- functions of the same file are read inline; `return` ends the kernel (or the inlined
  function) and may not sit inside a loop or a shape-dependent `if`.
"""

from __future__ import annotations

import ast

from semantics.errors import KernelError
from semantics.ir import For, If, Not
from semantics.nki import values as v
from semantics.nki.exprs import CondVal, ExprMixin, TILE
from semantics.nki.invoke import CallMixin
from semantics.nki.state import loc_of
from semantics.nki.tensors import ITERATORS, TensorMixin

_NORET = object()
_MAX_INLINE = 32


class Reader(ExprMixin, TensorMixin, CallMixin):
    def __init__(self, state, module_env: dict, functions: dict):
        self.s = state
        self.globals = module_env
        self.functions = functions
        self.env: dict = {}
        self.inline_depth = 0
        self.dyn_base = 0  # loops and shape-dependent ifs around the function being read
        self.closures: dict = {}  # nested function name -> the scope it was defined in
        self.frames: list = []  # per loop being read: (inline depth, first use of each name)

    def fail(self, node, message: str):
        raise KernelError(message, loc_of(node), self.s.filename)

    def unsupported(self, node, what: str):
        raise KernelError(f"unsupported NKI construct '{what}'", loc_of(node), self.s.filename)

    # ------------------------------------------------------------------ statements

    def block(self, stmts) -> object:
        for stmt in stmts:
            result = self.stmt(stmt)
            if result is not _NORET:
                return result
        return _NORET

    def stmt(self, node):
        match node:
            case ast.Expr(value=ast.Constant()) | ast.Pass():
                pass
            case ast.Expr(value=ast.Call() as call):
                result = self.call(call, result_used=False)
                if isinstance(result, v.Pending):
                    self.materialize(result, None, call)
            case ast.Expr():
                self.ev(node.value)
            case ast.Assign(targets=targets, value=value):
                val = self.ev(value)
                for target in targets:
                    self.assign(target, val, node)
            case ast.AnnAssign(target=target, value=value) if value is not None:
                self.assign(target, self.ev(value), node)
            case ast.AugAssign():
                self.augassign(node)
            case ast.For():
                self.loop(node)
            case ast.If():
                return self.branch(node)
            case ast.Assert(test=test):
                self.assertion(test)
            case ast.Return(value=value):
                if self.s.dynamic > self.dyn_base:
                    self.unsupported(node, "return inside a loop or a shape-dependent if")
                return None if value is None else self.ev(value)
            case ast.FunctionDef():
                self.functions[node.name] = node
                self.closures[node.name] = self.env  # a nested function sees the enclosing names
            case ast.Import() | ast.ImportFrom():
                from semantics.nki.module import read_import

                read_import(node, self.env)
            case ast.With(items=[ast.withitem(context_expr=ast.Call() as ctx, optional_vars=None)]) \
                    if self.ev(ctx.func) == v.Func("nl.no_reorder"):
                return self.block(node.body)
            case _:
                self.unsupported(node, type(node).__name__.lower())
        return _NORET

    def assign(self, target, value, node) -> None:
        match target:
            case ast.Name(id=name):
                self.note(name, "write")
                self.env[name] = self.bind(value, name, node)
            case ast.Tuple(elts=elts) | ast.List(elts=elts):
                items = self.unpack(value, len(elts), target)
                for elt, item in zip(elts, items):
                    self.assign(elt, item, node)
            case ast.Subscript():
                dst = self.ev(target)
                if not isinstance(dst, v.View):
                    self.unsupported(target, "assignment into a non-tensor")
                self.write(dst, value, node)
            case _:
                self.unsupported(target, "this assignment target")

    def bind(self, value, name: str, node):
        match value:
            case v.Pending():
                return self.materialize(value, name, node)
            case v.Alloc():
                return self.bind_alloc(value, name, node)
            case v.Sym(expr=expr) if self.s.first_pass and getattr(expr, "name", None) in self.s.bases:
                self.s.plan.names.setdefault(expr.name, name)
        return value

    def unpack(self, value, n: int, node):
        match value:
            case v.ArgShape(tensor=arg):
                return [self.arg_dim(arg, i) for i in range(n)]
            case v.Tensor(shape=v.ArgShape(tensor=arg)) if arg in self.s.args:
                return [self.arg_dim(arg, i) for i in range(n)]  # a tuple argument (`f1, f2 = shape2D`)
            case v.GridTuple(items=items) | tuple(items) if len(items) == n:
                return list(items)
        return self.unsupported(node, "this unpacking")

    def write(self, dst: v.View, value, node, accumulate=False) -> None:
        """`dst[...] = value` (or `+=`): the instruction computing `value` writes the
        window; a tile or a constant is copied in (nl.copy)."""
        if isinstance(value, v.Pending):
            self.emit_op(value, dst, node, accumulate)
        elif isinstance(value, (v.Tensor, v.View)) or v.is_int(value) or isinstance(value, (float, v.Opaque)):
            reads = (self.as_view(value, node),) if isinstance(value, TILE) else ()
            if accumulate:
                pending = v.Pending("nl.add", self.engine_of("nl.add", {}, dst, node), reads, loc_of(node))
                self.emit_op(pending, dst, node, accumulate=True)
                return
            engine = self.engine_of("nl.copy", {}, dst, node)
            self.emit_op(v.Pending("nl.copy", engine, reads, loc_of(node)), dst, node)
        else:
            self.unsupported(node, "this value stored into a tensor")

    def augassign(self, node) -> None:
        target = self.ev(node.target)
        value = self.ev(node.value)
        if isinstance(target, (v.Tensor, v.View)):
            dst = target if isinstance(target, v.View) else v.View(target)
            if isinstance(value, v.Pending) and value.call in ("nl.matmul", "nisa.nc_matmul"):
                self.emit_op(value, dst, node, accumulate=True)  # accumulates in PSUM
            else:
                self.write(dst, value, node, accumulate=True)
            return
        result = self.binop(node.op, target, value, node)
        self.assign(node.target, result, node)

    # ------------------------------------------------------------------ control flow

    def loop(self, node) -> None:
        if node.orelse:
            self.unsupported(node, "for ... else")
        it = node.iter
        func = self.ev(it.func) if isinstance(it, ast.Call) else None
        if not (isinstance(func, v.Func) and func.name in ITERATORS) or it.keywords:
            self.unsupported(it, "a for loop over anything but nl.affine_range, nl.sequential_range, "
                                 "nl.static_range or range")
        args = [self.as_int(self.ev(a)) for a in it.args]
        if not 1 <= len(args) <= 3 or not all(v.is_int(a) for a in args):
            self.unsupported(it, "loop bounds that are not integers")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
        if not (isinstance(step, int) and step > 0):
            self.unsupported(it, "a loop step that is not a positive constant")
        if not isinstance(node.target, ast.Name):
            self.unsupported(node.target, "this loop target")
        var = self.s.fresh(node.target.id)
        if step == 1:
            lo, hi, value = start, stop, v.var(var)
        else:
            lo, hi = 0, v.arith("//", v.arith("+", v.arith("-", stop, start), step - 1), step)
            value = v.arith("+", start, v.arith("*", v.var(var), step))
        self.note(node.target.id, "write")  # for the loops around this one
        self.env[node.target.id] = value
        self.s.loops.append(var)
        self.s.bodies.append([])
        self.s.dynamic += 1
        before, events = dict(self.env), {}
        self.frames.append((self.inline_depth, events))
        try:
            result = self.block(node.body)
        finally:
            self.s.dynamic -= 1
            body = self.s.bodies.pop()
            self.s.loops.pop()
            self.frames.pop()
        del result  # a `return` here was refused by `stmt`
        self.carried(before, events, node)
        loc = loc_of(node)
        self.s.emit(For(var, v.to_expr(lo), v.to_expr(hi), tuple(body), loc=loc, var_loc=loc_of(node.target)))

    def carried(self, before: dict, events: dict, node) -> None:
        """A name read in a loop body before the body binds it again carries a value
        from one iteration to the next (`acc = acc + x`, `n = n + 1`): the body is read
        once, so that value is unknown there, and the loop is refused."""
        for name, event in events.items():
            if event == "read" and name in before and name in self.env:
                old, new = before[name], self.env[name]
                if new is not old and not (type(new) is type(old) and new == old):
                    self.unsupported(node, f"'{name}' carried from one loop iteration to the next "
                                           "(read, then bound again in the loop)")

    def branch(self, node):
        test = self.truth(self.ev(node.test), node.test)
        if not isinstance(test, CondVal):
            return self.block(node.body if test else node.orelse)
        before = dict(self.env)
        branches = []
        self.s.dynamic += 1
        try:
            for stmts in (node.body, node.orelse):
                self.env = dict(before)
                self.s.bodies.append([])
                self.block(stmts)
                branches.append((tuple(self.s.bodies.pop()), self.env))
        finally:
            self.s.dynamic -= 1
        (then, env_then), (else_, env_else) = branches
        self.env = dict(env_then)
        for name in set(env_then) | set(env_else):
            if env_then.get(name, _NORET) is not env_else.get(name, _NORET) \
                    and env_then.get(name, _NORET) != env_else.get(name, _NORET):
                self.env[name] = v.Conflict(name, loc_of(node))
        cond = test.cond
        if not then and else_:
            cond, then, else_ = Not(cond), else_, ()
        if then or else_:
            self.s.emit(If(cond, then, else_, loc=loc_of(node)))
        return _NORET

    def assertion(self, test) -> None:
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
            return
        try:
            a, b = self.ev(test.left), self.ev(test.comparators[0])
        except KernelError:
            return  # an assert the reading cannot evaluate checks nothing it needs
        names = [getattr(x.expr, "name", None) if isinstance(x, v.Sym) else None for x in (a, b)]
        if self.s.first_pass and all(n in self.s.bases for n in names) and names[0] != names[1]:
            plan = self.s.plan
            first, second = sorted(names, key=list(self.s.bases).index)
            if plan.canonical(first) != plan.canonical(second):
                plan.aliases[plan.canonical(second)] = plan.canonical(first)

    # ------------------------------------------------------------------ functions

    def record(self, cls, args, kwargs, node) -> v.Record:
        fields = [(s.target.id, s.value) for s in cls.body
                  if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
        if len(args) > len(fields):
            self.fail(node, f"too many arguments for '{cls.name}'")
        values = {}
        for n, (name, default) in enumerate(fields):
            if n < len(args):
                values[name] = args[n]
            elif name in kwargs:
                values[name] = kwargs[name]
            elif default is not None:
                values[name] = self.ev(default)
            else:
                self.fail(node, f"missing field '{name}' for '{cls.name}'")
        return v.Record(cls.name, tuple(values.items()))

    def inline(self, name: str, args, kwargs, node):
        func = self.functions[name]
        if isinstance(func, ast.ClassDef):
            return self.record(func, args, kwargs, node)
        if self.inline_depth >= _MAX_INLINE:
            self.unsupported(node, f"recursion in '{name}'")
        env = {**self.closures.get(name, {}), **self.bind_args(func, args, kwargs, node)}
        saved = self.env, self.dyn_base
        self.env, self.dyn_base, self.inline_depth = env, self.s.dynamic, self.inline_depth + 1
        try:
            result = self.block(func.body)
        finally:
            (self.env, self.dyn_base), self.inline_depth = saved, self.inline_depth - 1
        return None if result is _NORET else result

    def bind_args(self, func, args, kwargs, node) -> dict:
        spec = func.args
        if spec.vararg or spec.kwarg or spec.posonlyargs:
            self.unsupported(func, "*args, **kwargs or positional-only parameters")
        names = [a.arg for a in spec.args]
        defaults = dict(zip(names[len(names) - len(spec.defaults):], spec.defaults))
        defaults.update({a.arg: d for a, d in zip(spec.kwonlyargs, spec.kw_defaults) if d is not None})
        if len(args) > len(names):
            self.fail(node, f"too many arguments for '{func.name}'")
        env = dict(zip(names, args))
        for key, value in kwargs.items():
            if key in env or key not in names + [a.arg for a in spec.kwonlyargs]:
                self.fail(node, f"bad argument '{key}' for '{func.name}'")
            env[key] = value
        for key in names + [a.arg for a in spec.kwonlyargs]:
            if key not in env:
                if key not in defaults:
                    self.fail(node, f"missing argument '{key}' for '{func.name}'")
                env[key] = self.ev(defaults[key])
        return env
