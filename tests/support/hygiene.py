"""Scans of the test sources for what makes a suite depend on the machine or on other
people's code (tests/test_suite_hygiene.py, docs/testing.md "Clocks and patches"):

- an assertion that bounds elapsed time (`assert seconds < 0.5`): load moves it;
- a reading of the wall clock (`time.monotonic()` and the like) in a test;
- a patch (monkeypatch.setattr/delattr, setattr, mock.patch, an attribute assigned)
  of z3 or of Hypothesis: their internals move under us, and a patched solver or
  example generator tests something other than what runs.

Every scan works on source text (`ast`), so a test can show that it fails on a
snippet that breaks the rule. `inventory` sorts every patch of the suite by what it
targets: ours, z3, hypothesis, env.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Iterable, Iterator

# Names that say "a duration in seconds" when an assertion compares them with a number.
TIMEY = re.compile(r"(^|_)(seconds|secs|elapsed|wall|duration|took|runtime)($|_)", re.IGNORECASE)
# Calls that read a clock: module.function for modules imported under their own name.
CLOCK_READS = {
    "time": {"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns",
             "process_time", "process_time_ns", "thread_time", "thread_time_ns"},
    "datetime.datetime": {"now", "utcnow", "today"},
    "datetime.date": {"today"},
}
FOREIGN = ("z3", "hypothesis")  # packages no test may patch
PATCH_METHODS = {"setattr", "delattr", "setitem", "delitem"}


def test_sources(root: Path) -> Iterator[tuple[str, str]]:
    """(path relative to `root`, text) of every Python file under root/tests."""
    for path in sorted((root / "tests").rglob("*.py")):
        if "data" in path.relative_to(root / "tests").parts[:1]:
            continue  # tests/data holds inputs, not tests
        yield str(path.relative_to(root)), path.read_text()


def _imports(tree: ast.AST) -> dict[str, str]:
    """Local name -> the dotted origin it was imported from (`import z3` -> z3,
    `from z3 import Solver` -> z3.Solver, `import numpy as np` -> numpy)."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    bound[root] = root
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def _origin(node: ast.AST, imports: dict[str, str]) -> str:
    """Where the object `node` names comes from: the dotted import origin of its root
    name, a dotted string target as written, or '' (a local object of the test)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    root = _root_name(node)
    return imports.get(root, "") if root else ""


def _foreign(origin: str) -> str | None:
    head = origin.split(".")[0]
    return head if head in FOREIGN else None


def _is_clock_read(node: ast.AST, imports: dict[str, str]) -> bool:
    """A call of time.monotonic() and the like, however time was imported."""
    if not isinstance(node, ast.Call):
        return False
    dotted = _dotted(node.func)
    root, _, rest = (dotted or "").partition(".")
    origin = imports.get(root)
    if origin is None:
        return False
    module, _, function = (origin + ("." + rest if rest else "")).rpartition(".")
    return function in CLOCK_READS.get(module, ())


def _mentions_time(node: ast.AST, imports: dict[str, str], timed: set[str]) -> bool:
    for sub in ast.walk(node):
        if _is_clock_read(sub, imports):
            return True
        if isinstance(sub, ast.Name) and (sub.id in timed or TIMEY.search(sub.id)):
            return True
        if isinstance(sub, ast.Attribute) and TIMEY.search(sub.attr):
            return True
        if isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Constant) \
                and isinstance(sub.slice.value, str) and TIMEY.search(sub.slice.value):
            return True
    return False


def _is_number(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _is_number(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_number(node.left) and _is_number(node.right)
    return False


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0


def clock_assertions(path: str, text: str) -> list[str]:
    """`path:line: source` of every assertion that compares a duration with a number
    (`elapsed < 3.0`, `proof["seconds"] < 0.5`, `time.monotonic() - began < 30`).
    A duration is a clock reading, a name assigned from one, or a name/key/attribute
    that says so (TIMEY). `duration >= 0` is allowed: it holds on any load."""
    tree = ast.parse(text, path)
    imports = _imports(tree)
    timed = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
             and _mentions_time(node.value, imports, set())
             for target in node.targets if isinstance(target, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        for compare in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
            sides = [compare.left, *compare.comparators]
            for op, left, right in zip(compare.ops, sides, sides[1:]):
                if not isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
                    continue
                for duration, number, lower_bound in ((left, right, isinstance(op, (ast.Gt, ast.GtE))),
                                                       (right, left, isinstance(op, (ast.Lt, ast.LtE)))):
                    if _is_number(number) and _mentions_time(duration, imports, timed) \
                            and not (lower_bound and _is_zero(number)):
                        found.append(f"{path}:{node.lineno}: {ast.get_source_segment(text, node)}")
    return sorted(set(found), key=_by_line)


def clock_reads(path: str, text: str) -> list[str]:
    """`path:line: call` of every reading of the wall clock."""
    tree = ast.parse(text, path)
    imports = _imports(tree)
    return sorted((f"{path}:{node.lineno}: {ast.get_source_segment(text, node)}"
                   for node in ast.walk(tree) if _is_clock_read(node, imports)), key=_by_line)


def patches(path: str, text: str) -> list[tuple[str, str]]:
    """(category, `path:line: source`) of every patch: ours, z3, hypothesis or env.

    A patch is a call of monkeypatch's setattr/delattr/setitem/delitem/setenv/delenv (any
    object with those methods), of the builtins setattr/delattr, of mock.patch and
    patch.object, or an assignment to an attribute of an imported module or class."""
    tree = ast.parse(text, path)
    imports = _imports(tree)
    found = []

    def add(category: str, node: ast.AST) -> None:
        found.append((category, f"{path}:{node.lineno}: {ast.get_source_segment(text, node)}"))

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            receiver = _dotted(func.value) if isinstance(func, ast.Attribute) else None
            if name in ("setenv", "delenv") and receiver is not None:
                add("env", node)
            elif name in PATCH_METHODS and node.args:
                target = node.args[0]
                if name in ("setitem", "delitem") and _dotted(target) in ("os.environ", "environ"):
                    add("env", node)
                else:
                    add(_foreign(_origin(target, imports)) or "ours", node)
            elif name in ("patch", "object") and receiver in ("mock", "unittest.mock", "mock.patch", "patch") \
                    and node.args:
                add(_foreign(_origin(node.args[0], imports)) or "ours", node)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and _dotted(target) is not None:
                    root = _root_name(target)
                    origin = imports.get(root or "", "")
                    if origin:  # an attribute of something imported: a module or a class
                        add(_foreign(origin) or "ours", node)
    return sorted(found, key=lambda item: _by_line(item[1]))


def foreign_patches(path: str, text: str) -> list[str]:
    """The patches of z3 or Hypothesis (see `patches`)."""
    return [where for category, where in patches(path, text) if category in FOREIGN]


def hypothesis_internals(path: str, text: str) -> list[str]:
    """`path:line: import` of every import of hypothesis.internal (not a public API)."""
    tree = ast.parse(text, path)
    found = []
    for node in ast.walk(tree):
        names = ([node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0
                 else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
        if any(n == "hypothesis.internal" or n.startswith("hypothesis.internal.") for n in names):
            found.append(f"{path}:{node.lineno}: {ast.get_source_segment(text, node)}")
    return found


def inventory(sources: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Every patch of the suite by category."""
    out: dict[str, list[str]] = {"ours": [], "z3": [], "hypothesis": [], "env": []}
    for path, text in sources:
        for category, where in patches(path, text):
            out[category].append(where)
    return out


def _by_line(where: str) -> tuple:
    path, line, _ = where.split(":", 2)
    return path, int(line)


if __name__ == "__main__":  # python -m tests.support.hygiene: the inventory, by category
    from tests.support.corpus import ROOT

    for category, found in inventory(test_sources(ROOT)).items():
        print(f"{category}: {len(found)}")
        for where in found:
            print(f"  {where.splitlines()[0]}")
