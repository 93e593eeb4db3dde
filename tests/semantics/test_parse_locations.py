"""The parser turns each rule into IR as Lark reduces it (semantics/transform.py; no
parse tree, so a long kernel needs no more memory than its IR). Lark gives such a
transformer no positions, so locations come from the kept tokens: a rule starts where
its first token or sub-rule starts, and a parenthesized group where its '(' is, as
Lark's `propagate_positions` placed them (the error files in tests/data/errors hold
the locations of every error message)."""

from __future__ import annotations

import pytest

from semantics import parser
from semantics.errors import KernelError
from semantics.ir import BinOp, For, If, Loc, Neg, Not, Op, Range, walk_stmts

HEADER = "engines A B\nparam N\n"


def _op(line: str) -> tuple[Op, str]:
    program = parser.parse(HEADER + line + "\n")
    (op,) = [s for s in walk_stmts(program.body) if isinstance(s, Op)]
    return op, line


def _at(line: str, needle: str, nth: int = 0) -> Loc:
    col = -1
    for _ in range(nth + 1):
        col = line.index(needle, col + 1)
    return Loc(3, col + 1)


def test_a_group_starts_at_its_parenthesis_and_its_contents_inside():
    op, line = _op("A x reads b[0] lat (N + 1) * 2")
    product = op.lat
    assert isinstance(product, BinOp) and product.op == "*"
    assert product.loc == _at(line, "(")  # the enclosing rule starts at the '('
    assert product.left.loc == _at(line, "N")  # the group's own expression inside it
    assert product.op_loc == _at(line, "*")


def test_nested_groups_start_at_the_outermost_parenthesis():
    op, line = _op("A x reads b[0] lat ((N)) + 1")  # (`- 1` is negative at N = 0: an error)
    assert op.lat.loc == _at(line, "((")
    assert op.lat.left.loc == _at(line, "N")


def test_rules_that_start_with_a_keyword_or_sign_start_there():
    op, line = _op("A x reads b[0] wait B >= -(N) + 1, A >= if not (N < 2) then 1 else 0")
    first, second = op.waits
    assert first.loc == _at(line, "B")
    assert isinstance(first.threshold.left, Neg) and first.threshold.left.loc == _at(line, "-")
    assert first.threshold.loc == _at(line, "-")
    assert second.threshold.loc == _at(line, "if")
    assert isinstance(second.threshold.cond, Not) and second.threshold.cond.loc == _at(line, "not")
    assert second.threshold.cond.operand.loc == _at(line, "N", 1)


def test_a_range_starts_at_its_first_bound():
    op, line = _op("A x reads b[(N)..N + 1]")
    (access,) = op.reads
    (index,) = access.indices
    assert isinstance(index, Range) and index.loc == _at(line, "(N)")


def test_statements_start_at_their_first_token():
    text = HEADER + "for i in 0..N {\n  if (i) < 2 {\n    A x reads b[i]\n  } else {\n    B y reads b[i]\n  }\n}\n"
    program = parser.parse(text)
    (loop,) = program.body
    assert isinstance(loop, For) and loop.loc == Loc(3, 1) and loop.var_loc == Loc(3, 5)
    (branch,) = loop.body
    assert isinstance(branch, If) and branch.loc == Loc(4, 3) and branch.cond.loc == Loc(4, 6)
    (a,), (b,) = branch.then, branch.else_
    assert a.loc == Loc(5, 5) and a.name_loc == Loc(5, 7) and b.loc == Loc(7, 5)


def test_an_error_far_down_a_long_file_names_its_own_line():
    lines = ["engines A B", "param N"] + [f"A a{n} reads x[{n}]" for n in range(5_000)]
    lines[4_321] = "A bad reads x[(1]"
    lines.append("}")
    with pytest.raises(KernelError) as first:
        parser.parse("\n".join(lines) + "\n")
    assert first.value.loc.line == 4_322 and first.value.loc.col == 17, first.value
    del lines[4_321]
    with pytest.raises(KernelError) as unmatched:
        parser.parse("\n".join(lines) + "\n")
    assert unmatched.value.loc.line == len(lines), unmatched.value


def test_errors_come_in_file_order_whether_syntax_or_meaning():
    # Reductions run as the parser reads: an error of meaning on an earlier line is
    # reported before a syntax error on a later one, and the other way round.
    meaning_first = HEADER + "A x reads b[0] lat 1.5\nA y reads b[(]\n"
    with pytest.raises(KernelError) as err:
        parser.parse(meaning_first)
    assert err.value.loc.line == 3 and "latency" in str(err.value)
    syntax_first = HEADER + "A y reads b[(]\nA x reads b[0] lat 1.5\n"
    with pytest.raises(KernelError) as err:
        parser.parse(syntax_first)
    assert err.value.loc.line == 3 and "unexpected" in str(err.value)
