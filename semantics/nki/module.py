"""The module around NKI kernels: its imports, constants, functions and which of the
functions are kernels.

A kernel is a function decorated by NKI: `@nki.jit`, `@nki.jit(...)`, `@nki.baremetal`,
`@nki.benchmark(...)`, `@nki.compiler.*` and the like (any decorator under the `nki`
module or a name imported from it). The NKI modules are recognised under the names the
file gives them: `import neuronxcc.nki.language as nl`, `import nki.isa as nisa`,
`from neuronxcc import nki`, `from neuronxcc.nki.language import par_dim`, ...
"""

from __future__ import annotations

import ast

from semantics.errors import KernelError
from semantics.nki import values as v

_MODULES = {"language": "nl", "isa": "nisa", "nki": "nki", "math": "math", "numpy": "np",
            "compiler": "nki.compiler", "typing": "nki.typing"}


def _module_of(dotted: str) -> str | None:
    """`neuronxcc.nki.language` -> nl, `nki.isa` -> nisa, `numpy` -> np, `math` -> math."""
    parts = dotted.split(".")
    if parts[0] in ("math", "numpy") and len(parts) == 1:
        return _MODULES[parts[0]]
    if "nki" not in parts:
        return None
    tail = parts[parts.index("nki") + 1:]
    if not tail:
        return "nki"
    return _MODULES.get(tail[0])


def read_import(node, env: dict) -> None:
    """Bind the names an import statement introduces (only the modules that matter)."""
    match node:
        case ast.Import(names=names):
            for alias in names:
                module = _module_of(alias.name)
                if module is None:
                    continue
                if alias.asname:
                    env[alias.asname] = v.Module(module)
                elif "." not in alias.name:
                    env[alias.name] = v.Module(module)
                elif alias.name.split(".")[0] == "nki":
                    env["nki"] = v.Module("nki")
        case ast.ImportFrom(module=module_name, names=names) if module_name:
            for alias in names:
                bound = alias.asname or alias.name
                inner = _module_of(f"{module_name}.{alias.name}")
                outer = _module_of(module_name)
                if inner is not None and (alias.name in ("nki", "language", "isa", "compiler", "typing")):
                    env[bound] = v.Module(inner)
                elif outer in ("nl", "nisa", "math", "np", "nki"):
                    env[bound] = v.Func(f"{outer}.{alias.name}")  # `from neuronxcc.nki import jit`


def decorator_is_nki(node, env: dict) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    while isinstance(target, ast.Attribute):
        target = target.value
    if not isinstance(target, ast.Name):
        return False
    bound = env.get(target.id)
    return isinstance(bound, v.Module) and bound.name.startswith("nki") or \
        (isinstance(bound, v.Func) and bound.name.startswith("nki"))


def read_module(tree: ast.Module, reader_factory) -> tuple[dict, dict, list]:
    """The module's environment (imports and constants), its functions by name, and
    its kernel functions in source order. Top-level statements other than imports,
    functions, classes and simple constant assignments are skipped."""
    env: dict = {}
    functions: dict = {}
    kernels: list = []
    for node in tree.body:
        match node:
            case ast.Import() | ast.ImportFrom():
                read_import(node, env)
            case ast.FunctionDef():
                functions[node.name] = node
                if any(decorator_is_nki(d, env) for d in node.decorator_list):
                    kernels.append(node)
            case ast.ClassDef(decorator_list=decorators) if any(
                    "dataclass" in ast.unparse(d) for d in decorators):
                functions[node.name] = node  # a configuration record: calling it builds one
            case ast.Assign(targets=[ast.Name(id=name)], value=value):
                try:
                    env[name] = reader_factory(env, functions).ev(value)
                except KernelError:  # a module value the reading cannot compute (an object)
                    env[name] = v.Opaque(f"module value {name}")
    return env, functions, kernels
