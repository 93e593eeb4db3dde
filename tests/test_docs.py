"""Every `console` block of README.md and docs/*.md is run and its output compared.

A block holds commands (`$ syncproof ...`, run from the repository root) each followed
by its shown output: stdout, then stderr. In the shown output `...` matches any text
within a line, and a line of just `...` matches any number of lines. So the examples a
user reads stay true: a change that alters what a command prints fails here until the
document is updated.

The `python` blocks of docs/api.md are run too, each in a fresh namespace from the
repository root: they must not raise (their asserts are the shown output)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.corpus import ROOT

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def console_examples(text: str):
    """(command, shown output) for every command of every console block."""
    for block in re.findall(r"^```console\n(.*?)^```", text, re.S | re.M):
        command, shown = None, []
        for line in block.splitlines():
            if line.startswith("$ "):
                if command is not None:
                    yield command, shown
                command, shown = line[2:], []
            else:
                shown.append(line)
        if command is not None:
            yield command, shown


def pattern(shown: list[str]) -> re.Pattern:
    parts = []
    for line in shown:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(piece) for piece in line.rstrip().split("...")) + r"\n")
    return re.compile("".join(parts))


def _examples():
    for document in DOCUMENTS:
        for n, (command, shown) in enumerate(console_examples(document.read_text())):
            yield pytest.param(command, shown, id=f"{document.relative_to(ROOT)}:{n}")


EXAMPLES = list(_examples())


def test_the_readme_shows_commands_with_their_output():
    assert sum(1 for p in EXAMPLES if p.id.startswith("README.md")) >= 4


def test_a_changed_output_does_not_match_the_shown_one():
    shown = ["total: 3976 cycles (...)", "...", "ACT 1"]
    assert pattern(shown).fullmatch("total: 3976 cycles (2.84 us)\nx\ny\nACT 1\n")
    assert not pattern(shown).fullmatch("total: 3977 cycles (2.84 us)\nACT 1\n")


PYTHON_DOCUMENTS = [ROOT / "docs" / "api.md"]


def python_examples(text: str) -> list[str]:
    """The code of every `python` block."""
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


PYTHON_EXAMPLES = [pytest.param(code, id=f"{document.relative_to(ROOT)}:{n}")
                   for document in PYTHON_DOCUMENTS for n, code in enumerate(python_examples(document.read_text()))]


def test_the_api_page_shows_a_python_example():
    assert PYTHON_EXAMPLES and "assert" in PYTHON_EXAMPLES[0].values[0]


@pytest.mark.parametrize("code", PYTHON_EXAMPLES)
def test_python_example_runs(code, monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples name files relative to the repository root
    exec(compile(code, "<docs python block>", "exec"), {"__name__": "__docs__"})


@pytest.mark.parametrize("command,shown", EXAMPLES)
def test_shown_command_prints_what_the_document_shows(command, shown):
    argv = shlex.split(command)
    assert argv[0] == "syncproof", f"only syncproof commands are run: {command}"
    exe = Path(sys.executable).with_name("syncproof")
    # progress lines (verify/progress.py) depend on the machine's speed: none in shown output
    env = {**os.environ, "SYNCPROOF_PROGRESS_INTERVAL": "3600"}
    run = subprocess.run([str(exe), *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    printed = "".join(line.rstrip() + "\n" for line in (run.stdout + run.stderr).splitlines())
    assert pattern(shown).fullmatch(printed), f"$ {command}\n--- printed ---\n{printed}--- shown ---\n" + "\n".join(shown)
