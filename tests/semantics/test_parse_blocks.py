"""The parser reads a long kernel a block of lines at a time (semantics/parser.py
`BLOCK_LINES`; the grammar is a sequence of lines): the program, every location in it
and every error location are the same for any block size."""

from __future__ import annotations

import pytest

import semantics.parser as parser
from semantics.errors import KernelError
from semantics.ir import walk_stmts
from tests.support.corpus import ALL_KERNELS, kernel_id


def _located(program):
    """The program with the locations equality ignores: every statement's and op's."""
    return [(type(s).__name__, getattr(s, "loc", None), getattr(s, "name_loc", None), getattr(s, "var_loc", None))
            for s in walk_stmts(program.body)]


def _parse_with(monkeypatch, size: int, text: str):
    monkeypatch.setattr(parser, "BLOCK_LINES", size)
    return parser.parse(text)


@pytest.mark.parametrize("path", [p for p in ALL_KERNELS if p.suffix == ".sync"], ids=kernel_id)
def test_a_kernel_parses_the_same_in_blocks_of_any_size(path, monkeypatch):
    text = path.read_text()
    whole = _parse_with(monkeypatch, 10 ** 9, text)
    for size in (1, 2, 7):
        part = _parse_with(monkeypatch, size, text)
        assert part == whole and _located(part) == _located(whole), size


def test_an_error_in_a_later_block_names_its_own_line(monkeypatch):
    lines = ["engines A B", "param N"] + [f"A a{n} reads x[{n}]" for n in range(5_000)]
    lines[4_321] = "A bad reads x[(1]"
    lines.append("}")
    text = "\n".join(lines) + "\n"
    for size in (1, 100, 2_000, 10 ** 9):
        monkeypatch.setattr(parser, "BLOCK_LINES", size)
        with pytest.raises(KernelError) as first:
            parser.parse(text)
        assert first.value.loc.line == 4_322 and first.value.loc.col == 17, (size, first.value)
    del lines[4_321]
    with pytest.raises(KernelError) as unmatched:
        parser.parse("\n".join(lines) + "\n")
    assert unmatched.value.loc.line == len(lines), unmatched.value
