"""The house rules of the code base, checked (docs/design.md, "Layout"):
the import-linter contracts of pyproject.toml hold, no module imports another module's
`_private` names, and no test module imports another test module."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.support.corpus import ROOT

PACKAGES = ("semantics", "algorithm", "verify", "lean_export", "syncproof", "tests", "bench")


def _modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield path, ast.parse(path.read_text(), str(path))


def test_import_linter_contracts_hold():
    linter = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run([str(linter)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout and "KEPT" in run.stdout


def private_imports(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, module, name) for every `from M import _name` with M absolute."""
    return [(node.lineno, node.module, alias.name)
            for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
            for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]


def test_no_module_imports_another_modules_private_names():
    found = [f"{path.relative_to(ROOT)}:{line}: {module}.{name}"
             for path, tree in _modules() for line, module, name in private_imports(tree)]
    assert not found, "\n".join(found)


def test_the_private_import_scan_finds_a_private_import():
    # the scan itself must be able to fail
    assert private_imports(ast.parse("from algorithm.threshold.plan import _hidden\n")) == [
        (1, "algorithm.threshold.plan", "_hidden")]


def test_no_test_module_imports_another_test_module():
    found = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names
                      if n.startswith("tests.") and n.rsplit(".", 1)[-1].startswith("test_")]
    assert not found, "\n".join(found)
