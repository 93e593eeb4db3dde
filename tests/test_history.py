"""The documentation describes the project as it is, not how it got there.

README.md, docs/*.md and the docstrings and comments of the code name no numbered work
session, planning round or issue, and no commit hash: that is history, and history lives
in git and, summarised, in CHANGELOG.md. The one place a commit may be named is the
"measured at commit" line of a benchmark table, which says which code its numbers belong
to. README.md also stays short enough to read in one sitting.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CODE_PACKAGES = ("semantics", "algorithm", "verify", "lean_export", "bench", "tests", "syncproof")
README_MAX_LINES = 160

# The words session, round and issue (singular or plural) followed by a number, with an
# optional "#". Without a number they are ordinary words: "the second round" of the
# proof's budgets, a Z3 solving session, "the issue tracker".
NUMBERED = re.compile(r"\b(?:sessions?|rounds?|issues?)\s+#?\d", re.I)

# A commit hash: 7 to 40 lowercase hex digits with at least one digit and one letter a-f,
# standing alone. The digit rules out English words made of a-f; the letter rules out
# decimal numbers; "alone" rules out a run inside a longer hex string (a sha256), an
# identifier, a 0x constant, a path or a file name. Requiring a word such as "commit"
# next to it was tried first and missed half the hashes the documents held (a hash as a
# table heading, in parentheses, before a colon), and no standalone token of this shape
# occurs in the documents or the commentary except as a commit.
HEX = r"(?<![0-9A-Za-z_./\\-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![0-9A-Za-z_/\\-]|\.[0-9A-Za-z])"
COMMIT = re.compile(HEX)
# ... except the line of a benchmark table that says which commit it was measured at.
ALLOWED = re.compile(r"\bmeasured at commit\b", re.I)


def hits_in_text(text: str) -> list[tuple[int, str]]:
    """(line number, matched text) of every history mention in a document."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        for match in NUMBERED.finditer(line):
            found.append((n, match.group(0)))
        if not ALLOWED.search(line):
            for match in COMMIT.finditer(line):
                found.append((n, match.group(0)))
    return found


def commentary_lines(source: str) -> set[int]:
    """Line numbers of a Python file's comments and docstrings (any bare string statement)."""
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            lines.add(token.start[0])
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def hits_in_code(source: str) -> list[tuple[int, str]]:
    keep = commentary_lines(source)
    text_lines = source.splitlines()
    only = "\n".join(line if n in keep else "" for n, line in enumerate(text_lines, 1))
    return hits_in_text(only)


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def code_files() -> list[Path]:
    return sorted(p for package in CODE_PACKAGES for p in (ROOT / package).rglob("*.py"))


def all_hits() -> list[str]:
    report = []
    for path in documents():
        report += [f"{path.relative_to(ROOT)}:{n}: {what}" for n, what in hits_in_text(path.read_text())]
    for path in code_files():
        report += [f"{path.relative_to(ROOT)}:{n}: {what}" for n, what in hits_in_code(path.read_text())]
    return report


def test_documents_and_code_commentary_carry_no_history():
    report = all_hits()
    assert not report, f"{len(report)} history mentions (move them to CHANGELOG.md or git):\n" + "\n".join(report)


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES})"


@pytest.mark.parametrize(
    "line",
    [
        "Status (session 21): the issue is blocked.",
        "round 9: 0.57 s; round 7: 1.61 s",
        "as in rounds 5 and 6",
        "DMA queues in the peers (issue 18d)",
        "see issue #16",
        "measured on main at fe941ba",
        "the code is on branch `r10-linear` (commits f3f0c49, 911fdb1)",
        "(2a9e703 beside it: 0.83 s)",
        "with workers forked from the caller (8f1c533)",
        "the old parser run from a worktree at 2a9e703",
        "since `ef44b99` the second analysis",
        "| what | 2a9e703 | now |",
        "the final form (4e147dc: workers from the fresh server)",
        "measured on main at fe941ba.",
    ],
)
def test_history_is_found(line):
    assert hits_in_text(line), line


@pytest.mark.parametrize(
    "line",
    [
        "measured at commit 1a2b3c4 (`syncproof bench`)",
        "the proof runs in two rounds: the first round asks 2M units",
        "each pass owns one Z3 session; a fresh session per plan",
        "a mask of 0x7fffffff and 0xdeadbeef1",
        "a sha256 of 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "the buffer acc[i % 2] and the op a1b2c3 (six characters)",
        "the issue tracker's figures; an issue with the output rule",
        "kernels/suite/flash_attention_causal.sync at N=4",
        "decimal 1234567 is a number, not a hash",
        "a word like defaced or facade is not a hash",
        "the file 1a2b3c4d.sync and tests/data/ab12cd34ef/x.sync",
    ],
)
def test_legitimate_text_is_not_flagged(line):
    assert not hits_in_text(line), line


def test_code_commentary_only():
    source = 'X = "session 5 at commit 1a2b3c4"\n# round 9 made this fast\ndef f():\n    """Since issue 16."""\n'
    assert [n for n, _ in hits_in_code(source)] == [2, 4]
