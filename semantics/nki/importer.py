"""Import an NKI kernel (Python, read statically with `ast`; nothing is executed) into
the kernel language. docs/nki.md describes the mapping; the pieces:

- semantics/nki/module.py: imports, constants, functions, which functions are kernels;
- semantics/nki/reader.py (+ exprs.py, tensors.py, invoke.py): the reading of the
  kernel's statements into ops, loops and conditionals;
- semantics/nki/build.py: the accesses, completed and reduced per buffer;
- semantics/nki/calls.py: the supported calls and their engines.

The kernel is read twice: the first reading learns how the shape parameters are named
and divided (semantics/nki/state.py), the second builds the program with them.
Anything the reading does not support is a KernelError `FILE:LINE:COL: error:
unsupported NKI construct 'X'`; a file or function that cannot be chosen a UsageError.
"""

from __future__ import annotations

import ast

import attrs

from semantics.errors import KernelError, UsageError
from semantics.ir import Loc, Param, Program, Var, index_exprs, walk_expr, walk_stmts, For, If, Op
from semantics.nki import values as v
from semantics.nki.build import normalize
from semantics.nki.calls import ENGINE_ORDER
from semantics.nki.module import read_module
from semantics.nki.reader import Reader
from semantics.nki.state import Plan, State, loc_of
from semantics.validate import KEYWORDS, validate


@attrs.frozen
class NkiImport:
    """An imported kernel: the program, the function it came from, and one line per
    parameter that counts tiles (`M = 128 * M_tiles`)."""

    program: Program
    function: str
    notes: tuple = ()


def parse_source(text: str, filename: str) -> ast.Module:
    try:
        return ast.parse(text, filename=filename)
    except SyntaxError as err:
        raise KernelError(f"Python syntax error: {err.msg}", Loc(err.lineno or 1, err.offset or 1),
                          filename) from None


def kernel_names(text: str, filename: str = "<input>") -> list[str]:
    """The NKI kernels (decorated functions) of a Python source, in source order."""
    tree = parse_source(text, filename)
    _, _, kernels = read_module(tree, _factory(filename))
    return [k.name for k in kernels]


def import_source(text: str, filename: str = "<input>", function: str | None = None,
                  overrides: dict | None = None) -> NkiImport:
    """Import kernel `function` of the Python source `text` (the file's only kernel
    when None). `overrides`: call name -> engine (`--nki-engine nl.exp=ACT`)."""
    tree = parse_source(text, filename)
    env, functions, kernels = read_module(tree, _factory(filename))
    if function is None:
        if len(kernels) != 1:
            names = ", ".join(k.name for k in kernels) or "none"
            raise UsageError(f"{filename} has {len(kernels)} NKI kernels ({names}): name one as "
                             f"{filename}:FUNCTION")
        func = kernels[0]
    elif function in functions:
        func = functions[function]
    else:
        raise UsageError(f"{filename} has no function '{function}' (its NKI kernels: "
                         f"{', '.join(k.name for k in kernels) or 'none'})")
    plan = Plan()
    _read(func, env, functions, State(filename, plan, True, dict(overrides or {})))
    state = State(filename, plan, False, dict(overrides or {}))
    reader = _read(func, env, functions, state)
    return NkiImport(_program(func, state, reader), func.name,
                     tuple(p.note for p in state.params.values() if p.note))


def import_file(path: str, function: str | None = None, overrides: dict | None = None) -> NkiImport:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise KernelError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}", Loc(1, 1), path) from None
    return import_source(text, path, function, overrides)


def _factory(filename: str):
    def make(env, functions):
        return Reader(State(filename, Plan(), True, {}), env, functions)
    return make


def _read(func, env: dict, functions: dict, state: State) -> Reader:
    reader = Reader(state, dict(env), dict(functions))
    spec = func.args
    names = [a.arg for a in spec.posonlyargs + spec.args]
    defaults = dict(zip(names[len(names) - len(spec.defaults):], spec.defaults))
    defaults.update({a.arg: d for a, d in zip(spec.kwonlyargs, spec.kw_defaults) if d is not None})
    for name in names + [a.arg for a in spec.kwonlyargs]:
        state.used.add(name)
        if name in defaults:
            reader.env[name] = reader.ev(defaults[name])
        else:  # a kernel argument without a default is an HBM tensor
            tensor = v.Tensor(name, "hbm", v.ArgShape(name))
            state.tensors[name] = tensor
            state.args.add(name)
            reader.env[name] = tensor
    reader.block(func.body)
    return reader


def _program(func, state: State, reader: Reader) -> Program:
    body = tuple(state.bodies[0])
    if not any(isinstance(s, Op) for s in walk_stmts(body)):
        raise KernelError(f"kernel '{func.name}' has no NKI instruction to synchronize", loc_of(func),
                          state.filename)
    body = normalize(body, state.tensors, lambda tensor, d: reader.dim_of(tensor, d))
    named = _names(body)
    params = tuple(Param(p.name, p.default, lower=p.lower) for p in state.params.values() if p.name in named)
    engines = tuple(e for e in ENGINE_ORDER if e in state.engines) + \
        tuple(e for e in state.engines if e not in ENGINE_ORDER)
    name = func.name + "_" if func.name in KEYWORDS else func.name
    program = Program(engines, params, body, name=name, loc=loc_of(func), name_loc=loc_of(func))
    try:
        validate(program)
    except KernelError as err:
        err.filename = err.filename or state.filename
        raise
    return program


def _names(body) -> set:
    """Every variable name used in the statements' expressions."""
    names = set()
    exprs = []
    for stmt in walk_stmts(body):
        match stmt:
            case For(lo=lo, hi=hi):
                exprs += [lo, hi]
            case If(cond=cond):
                exprs.append(cond)
            case Op(reads=reads, writes=writes):
                exprs += [e for a in reads + writes for i in a.indices for e in index_exprs(i)]
    for e in exprs:
        names.update(n.name for n in walk_expr(e) if isinstance(n, Var))
    return names
