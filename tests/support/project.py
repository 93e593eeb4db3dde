"""The project's own modules, found on disk: the packages pyproject.toml ships
(`[tool.setuptools.packages.find] include`), every .py file in them but `__main__`.

tests/conftest.py imports them all before the first test, so that Hypothesis's pool of
local constants is complete and fixed from the start (docs/testing.md, "Suite time,
hangs and reproducibility"); tests/test_reproducible.py checks that it stays so.
"""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def packages(root: Path = ROOT) -> list[str]:
    """The top-level packages pyproject.toml ships that exist on disk."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["packages"]["find"]["include"]
    names = dict.fromkeys(p.split(".")[0].rstrip("*") for p in patterns)
    return [n for n in names if (root / n / "__init__.py").is_file()]


def modules(root: Path = ROOT) -> list[str]:
    """Every module of those packages, as a dotted name, in file order."""
    found = []
    for package in packages(root):
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__main__" or "__pycache__" in parts:
                continue
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def load_all() -> dict[str, str]:
    """Import every module of the project; {name: error} for those that fail. A module
    that does not import fails its own tests, and tests/test_reproducible.py names it;
    the rest of the suite still runs."""
    failed = {}
    for name in modules():
        try:
            importlib.import_module(name)
        except Exception as err:  # noqa: BLE001 (reported by test_reproducible, not hidden)
            failed[name] = f"{type(err).__name__}: {err}"
    return failed
